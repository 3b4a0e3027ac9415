import { Effect, Stream } from "effect"
import type { TrawlClient } from "../client/effect.ts"
import { CliFailure, ExitCode } from "./output.ts"

const TERMINAL = new Set(["done", "failed", "dead"])

export interface FinishedJob {
  readonly id: string
  readonly url: string
  readonly status: string
  /** The engine that fetched it, "none" when no attempt got that far. */
  readonly engine: string
}

/** What a watch saw: every job that finished, counted by status and by engine. */
export class WatchState {
  readonly finished = new Map<string, FinishedJob>()
  readonly seen = new Set<string>()
  readonly expected: number | undefined
  constructor(expected: number | undefined) {
    this.expected = expected
  }
  get byStatus() {
    return count([...this.finished.values()].map((j) => j.status))
  }
  get byEngine() {
    return count([...this.finished.values()].map((j) => j.engine))
  }
  /** The denominator of the progress bar: what was asked for, else every job seen so far. */
  get total() {
    return this.expected ?? Math.max(this.seen.size, this.finished.size)
  }
  summary() {
    return { finished: this.finished.size, byStatus: this.byStatus, byEngine: this.byEngine, jobs: [...this.finished.values()] }
  }
}

const count = (values: ReadonlyArray<string>) => {
  const out: Record<string, number> = {}
  for (const v of values) out[v] = (out[v] ?? 0) + 1
  return out
}

const BAR_WIDTH = 24

/** One progress line: a bar on a terminal (redrawn in place), else a plain line per finished job. */
const progressLine = (state: WatchState) => {
  const total = state.total
  const done = state.finished.size
  const filled = total === 0 ? 0 : Math.round((done / total) * BAR_WIDTH)
  const statuses = Object.entries(state.byStatus).map(([s, n]) => `${s} ${n}`).join(", ")
  return `[${"#".repeat(filled)}${"-".repeat(BAR_WIDTH - filled)}] ${done}/${total}${statuses === "" ? "" : `  ${statuses}`}`
}

const render = (state: WatchState, job: FinishedJob | undefined) =>
  Effect.sync(() => {
    if (process.stderr.isTTY) process.stderr.write(`\r\x1b[2K${progressLine(state)}`)
    else if (job) process.stderr.write(`${job.status.padEnd(6)} ${job.id} ${job.engine} ${job.url}  ${progressLine(state)}\n`)
  })

/** Ends the in-place bar with a newline so what follows starts on its own line. */
export const endProgress = Effect.sync(() => {
  if (process.stderr.isTTY) process.stderr.write("\n")
})

/** The human summary: counts by status and by engine. */
export const summaryText = (state: WatchState) => {
  const fmt = (r: Record<string, number>) => Object.entries(r).sort().map(([k, n]) => `${k} ${n}`).join(", ") || "none"
  return `${state.finished.size} finished\n  by status: ${fmt(state.byStatus)}\n  by engine: ${fmt(state.byEngine)}`
}

interface Frame {
  id?: string
  event?: string
  data: Array<string>
}

/**
 * Follows the tenant's event stream (GET /v1/scraper/events) until every job of `ids` is terminal,
 * or `limit` jobs have finished, or forever when neither is given. Reconnects with Last-Event-ID
 * when the node ends the stream (a drain, a restart).
 */
export const follow = (
  client: TrawlClient,
  state: WatchState,
  options: { readonly ids?: ReadonlyArray<string>; readonly limit?: number; readonly onConnected?: Effect.Effect<void> }
) =>
  Effect.gen(function*() {
    const wanted = options.ids && options.ids.length > 0 ? new Set(options.ids) : undefined
    for (const id of wanted ?? []) state.seen.add(id)
    const complete = () =>
      (wanted !== undefined && [...wanted].every((id) => state.finished.has(id))) ||
      (options.limit !== undefined && state.finished.size >= options.limit)

    const finish = (id: string, status: string, url: string) =>
      Effect.gen(function*() {
        if (state.finished.has(id)) return
        // The event carries no engine; the job's result does.
        const job = yield* client.jobs.get({ params: { id } }).pipe(Effect.option)
        const engine = job._tag === "Some" ? job.value.result?.engine ?? "none" : "unknown"
        const finished = { id, url: job._tag === "Some" ? job.value.url : url, status: job._tag === "Some" ? job.value.status : status, engine }
        state.finished.set(id, finished)
        yield* render(state, finished)
      })

    // Jobs that were already over when the stream opened are read once: their events are in the past.
    const catchUp = Effect.forEach([...(wanted ?? [])], (id) =>
      client.jobs.get({ params: { id } }).pipe(
        Effect.flatMap((job) => (TERMINAL.has(job.status) ? finish(id, job.status, job.url) : Effect.void))
      ), { discard: true })

    let lastEventId: string | undefined
    while (!complete()) {
      const response = yield* client.jobs.events({
        headers: lastEventId === undefined ? {} : { "last-event-id": lastEventId },
        responseMode: "response-only"
      })
      if (response.status >= 400) {
        const body = (yield* response.json.pipe(Effect.orElseSucceed(() => undefined))) as { code?: string; error?: { message?: string } } | undefined
        return yield* new CliFailure({
          exitCode: ExitCode.refused,
          code: body?.code ?? "error",
          message: body?.error?.message ?? `the event stream answered ${response.status}`,
          status: response.status
        })
      }
      let frame: Frame = { data: [] }
      yield* response.stream.pipe(
        Stream.decodeText(),
        Stream.splitLines,
        Stream.runForEachWhile((line) =>
          Effect.gen(function*() {
            if (line.startsWith(":")) {
              // The node subscribed this stream before it said so: from here on nothing is missed.
              if (line.startsWith(": connected")) {
                if (lastEventId === undefined && options.onConnected) yield* options.onConnected
                yield* catchUp
              }
              return !complete()
            }
            if (line !== "") {
              const colon = line.indexOf(":")
              const field = colon === -1 ? line : line.slice(0, colon)
              const value = colon === -1 ? "" : line.slice(colon + 1).replace(/^ /, "")
              if (field === "id") frame.id = value
              else if (field === "event") frame.event = value
              else if (field === "data") frame.data.push(value)
              return true
            }
            const { id, event, data } = frame
            frame = { data: [] }
            if (id !== undefined) lastEventId = id
            if (!event?.startsWith("job.") || data.length === 0) return true
            const payload = JSON.parse(data.join("\n")) as { id: string; status: string; url?: string }
            if (wanted !== undefined && !wanted.has(payload.id)) return true
            state.seen.add(payload.id)
            if (TERMINAL.has(payload.status)) yield* finish(payload.id, payload.status, payload.url ?? "")
            else yield* render(state, undefined)
            return !complete()
          })
        )
      )
      if (!complete()) yield* Effect.sleep("1 second")
    }
  })
