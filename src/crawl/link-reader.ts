/**
 * A page's links for crawls and maps (docs/site-crawls.md, "Links"), read off the event loop: a
 * page of 10 MiB with 250 000 links took the parser and the link walk 1 to 2 s, during which the
 * node answered nothing. Pages up to `INLINE_CHARS` are read in place (a few milliseconds at most);
 * larger ones in the node's link worker, one at a time, owners (tenants) served in turn.
 */
import { makeTimedWorkers } from "../workers/timed-worker.ts"
import { extractLinks } from "./links.ts"

/** Markup up to this many characters is read on the event loop: the worker's round trip costs more. */
export const INLINE_CHARS = 64 * 1024
/** A page whose links take longer than this gives none (its worker is replaced). */
export const LINKS_TIMEOUT_MS = 10_000

const linkWorkers = makeTimedWorkers<{ readonly html: string; readonly pageUrl: string }, ReadonlyArray<string>>(
  new URL("./links-worker.ts", import.meta.url),
  { size: 1, timeoutMs: LINKS_TIMEOUT_MS, queueTimeoutMs: 3 * LINKS_TIMEOUT_MS, what: "link reading" }
)

/** The links of a page (`extractLinks`); none when they could not be read in time. */
export const readLinks = (html: string, pageUrl: string, owner = ""): Promise<ReadonlyArray<string>> =>
  html.length <= INLINE_CHARS ? Promise.resolve(extractLinks(html, pageUrl)) : linkWorkers.run({ html, pageUrl }, owner).catch(() => [])
