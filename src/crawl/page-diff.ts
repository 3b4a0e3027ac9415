/**
 * The page-history diff of two stored versions, worked out in a worker thread: the visible text
 * of a large page and the diff itself cost up to some tens of milliseconds of CPU, which must not
 * stall the node's event loop (its job entities, streams and other requests).
 */
import { makeTimedWorkers } from "../workers/timed-worker.ts"
import { bodyEncoding, looksBinary } from "./content-type.ts"
import { unifiedDiff } from "./text-diff.ts"
import { diffLines } from "./visible-text.ts"

export interface PageDiffInput {
  readonly before: { readonly body: Uint8Array; readonly contentType: string | null; readonly label: string } | null
  readonly now: { readonly body: Uint8Array; readonly contentType: string | null; readonly label: string }
}

export interface PageDiffResult {
  readonly diff: string
  /** This version is not text (an image, a PDF): there is no line diff, `changed` tells whether it differs. */
  readonly binary: boolean
  /** A version was longer than the diff reads (`MAX_DIFF_LINES` lines of its first 2 MiB): the diff covers the start only. */
  readonly truncated: boolean
}

/** Lines of each version that a diff compares at most. */
export const MAX_DIFF_LINES = 20_000

/**
 * Text, HTML, XML, JSON and JavaScript have lines; a version without a type is taken as HTML, as
 * crawls nearly always are, unless its bytes are not text.
 */
const isText = (v: { readonly body: Uint8Array; readonly contentType: string | null }) =>
  v.contentType === null
    ? !looksBinary(v.body)
    : /^\s*(text\/|[^;]*[+/](xml|json|html)\b|application\/(javascript|ecmascript|x-www-form-urlencoded))/i.test(v.contentType)

/** The body as text, as a browser decodes it (see `bodyEncoding`). */
const decode = (body: Uint8Array, contentType: string | null) => new TextDecoder(bodyEncoding(body, contentType)).decode(body)

const sameBytes = (a: Uint8Array, b: Uint8Array) => a.byteLength === b.byteLength && Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(b)

/** The diff itself, on this thread (the worker's entry point, and tests). */
export const computePageDiff = (input: PageDiffInput): PageDiffResult => {
  if (!isText(input.now)) return { diff: "", binary: true, truncated: false }
  // The same bytes are the same content (the version is not `changed`), whatever charset each was labelled with.
  if (input.before && sameBytes(input.before.body, input.now.body)) return { diff: "", binary: false, truncated: false }
  let truncated = false
  const linesOf = (v: NonNullable<PageDiffInput["before"]>) => {
    const { lines, cut } = diffLines(decode(v.body, v.contentType), v.contentType)
    truncated ||= cut || lines.length > MAX_DIFF_LINES
    return lines.length > MAX_DIFF_LINES ? lines.slice(0, MAX_DIFF_LINES) : lines
  }
  // A previous version that is not text has no lines: this one's text is all new, as for a first version.
  const before = input.before && isText(input.before) ? linesOf(input.before) : []
  const now = linesOf(input.now)
  const diff = unifiedDiff(before, now, { from: input.before?.label ?? "/dev/null", to: input.now.label })
  return { diff, binary: false, truncated }
}

/** A diff that takes longer than this is given up (the worker is replaced). */
export const DIFF_TIMEOUT_MS = 10_000

const diffWorkers = makeTimedWorkers<PageDiffInput, PageDiffResult>(new URL("./page-diff-worker.ts", import.meta.url), {
  size: 1,
  timeoutMs: DIFF_TIMEOUT_MS,
  // A request waits for its diff: behind others for at most as long again.
  queueTimeoutMs: DIFF_TIMEOUT_MS,
  what: "diff"
})

/**
 * Works out the diff in the node's diff worker (one per node). Requests queue there by tenant and
 * are served a tenant at a time in turn, so one tenant's many diffs do not hold others' behind them.
 */
export const pageDiff = (input: PageDiffInput, tenantId: string): Promise<PageDiffResult> => diffWorkers.run(input, tenantId)
