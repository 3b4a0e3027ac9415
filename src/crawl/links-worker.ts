/** Worker-thread entry of link reading (see link-reader.ts). */
import { serveTasks } from "../workers/timed-worker.ts"
import { extractLinks } from "./links.ts"

serveTasks((input: { readonly html: string; readonly pageUrl: string }) => extractLinks(input.html, input.pageUrl))
