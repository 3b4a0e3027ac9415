import { Data, Effect, Schema, SchemaIssue } from "effect"

/**
 * The exit codes of `trawl` (docs/cli.md, "Exit codes"): scripts branch on them, so they are
 * fixed here once.
 */
export const ExitCode = {
  ok: 0,
  /** The service answered with an error (its code is printed). */
  refused: 1,
  /** Bad arguments or missing configuration (TRAWL_API_KEY unset, ...). */
  usage: 2,
  /** The node could not be reached, or answered something that is not Trawl's API. */
  unreachable: 3,
  /** `--wait`: a job or extraction ended in a state other than done. */
  notDone: 4,
  interrupted: 130
} as const

/** A failure the CLI reports as one line and an exit code. */
export class CliFailure extends Data.TaggedError("CliFailure")<{
  readonly exitCode: number
  /** The service's error code, or a code of the CLI's own (`unreachable`, `missing_config`). */
  readonly code: string
  readonly message: string
  readonly status?: number | undefined
}> {}

/** A response the client could not decode: the node is not (this version of) Trawl. */
export class ResponseMismatch extends Data.TaggedError("ResponseMismatch")<{ readonly cause: Schema.SchemaError }> {}

/** Marks decoding failures of responses, so a SchemaError left over is the request's own fault. */
export const markResponseErrors = (decoding: Effect.Effect<unknown, unknown, unknown>) =>
  Effect.mapError(decoding, (e) => (e instanceof Schema.SchemaError ? new ResponseMismatch({ cause: e }) : e))

const formatIssues = SchemaIssue.makeFormatterStandardSchemaV1()

/** `path: message; path: message` of a schema failure. */
const describeIssue = (e: Schema.SchemaError) =>
  formatIssues(e.issue).issues.map((i) => {
    const path = (i.path ?? []).map((p) => String(typeof p === "object" ? p.key : p)).join(".")
    return path === "" ? i.message : `${path}: ${i.message}`
  }).join("; ")

const hasServiceShape = (e: unknown): e is { status: number; code: string; message: string } =>
  typeof e === "object" && e !== null && typeof (e as any).status === "number" && typeof (e as any).code === "string"

/** Any failure of a client call as a `CliFailure`: the service's own code when it gave one. */
export const toCliFailure = (e: unknown, baseUrl: string): CliFailure => {
  if (e instanceof CliFailure) return e
  if (hasServiceShape(e)) return new CliFailure({ exitCode: ExitCode.refused, code: e.code, message: e.message, status: e.status })
  const tag = typeof e === "object" && e !== null ? (e as { _tag?: string })._tag : undefined
  if (tag === "HttpClientError") {
    return new CliFailure({ exitCode: ExitCode.unreachable, code: "unreachable", message: `could not reach ${baseUrl}: ${(e as Error).message}` })
  }
  if (e instanceof ResponseMismatch) {
    return new CliFailure({ exitCode: ExitCode.unreachable, code: "unexpected_response", message: `${baseUrl} answered something that is not Trawl's API: ${describeIssue(e.cause)}` })
  }
  // Checked by the client against the API definition before anything is sent.
  if (e instanceof Schema.SchemaError) return new CliFailure({ exitCode: ExitCode.usage, code: "invalid_argument", message: describeIssue(e) })
  return new CliFailure({ exitCode: ExitCode.refused, code: "error", message: e instanceof Error ? e.message : String(e) })
}

/** `error <code>: <message> (HTTP <status>)` on one line. */
export const failureLine = (f: CliFailure) => `error ${f.code}: ${f.message.replace(/\s*\n\s*/g, " ")}${f.status === undefined ? "" : ` (HTTP ${f.status})`}`

export const printJson = (value: unknown) => Effect.sync(() => process.stdout.write(`${JSON.stringify(value, null, 2)}\n`))
export const printLine = (line: string) => Effect.sync(() => process.stdout.write(`${line}\n`))
/** Progress and hints go to stderr, so stdout stays the result. */
export const note = (line: string) => Effect.sync(() => process.stderr.write(`${line}\n`))

/** A plain table: columns padded to their widest cell. */
export const table = (header: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<string>>) => {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)))
  const line = (cells: ReadonlyArray<string>) => cells.map((c, i) => c.padEnd(widths[i]!)).join("  ").trimEnd()
  return [line(header), ...rows.map(line)].join("\n")
}
