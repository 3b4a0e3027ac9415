import { Effect, Schema } from "effect"
import { describe, expect, it } from "vitest"
import { CliFailure, ExitCode, failureLine, ResponseMismatch, table, toCliFailure } from "../../src/cli/output.ts"
import { summaryText, WatchState } from "../../src/cli/watch.ts"

const schemaError = (schema: Schema.Top, input: unknown) =>
  Effect.runSync(Effect.flip(Schema.decodeUnknownEffect(schema as Schema.Codec<unknown, unknown>)(input, { errors: "all" }))) as Schema.SchemaError

describe("the CLI's failures (docs/cli.md, \"Errors and exit codes\")", () => {
  it("keeps the service's code and status, on one line", () => {
    const refused = toCliFailure(Object.assign(new Error("job not found"), { status: 404, code: "not_found" }), "http://127.0.0.1:1")
    expect(refused.exitCode).toBe(ExitCode.refused)
    expect(failureLine(refused)).toBe("error not_found: job not found (HTTP 404)")
    const multiline = new CliFailure({ exitCode: 1, code: "x", message: "first\n  second" })
    expect(failureLine(multiline)).toBe("error x: first second")
  })

  it("tells a request the definition refuses (exit 2, with paths) from a response it cannot read (exit 3)", () => {
    const error = schemaError(Schema.Struct({ url: Schema.String, limit: Schema.Int }), { url: 1, limit: "x" })
    const invalid = toCliFailure(error, "http://127.0.0.1:1")
    expect(invalid.exitCode).toBe(ExitCode.usage)
    expect(invalid.code).toBe("invalid_argument")
    expect(invalid.message).toMatch(/^url: .*; limit: /)

    const mismatch = toCliFailure(new ResponseMismatch({ cause: error }), "http://127.0.0.1:1")
    expect(mismatch.exitCode).toBe(ExitCode.unreachable)
    expect(mismatch.code).toBe("unexpected_response")
    expect(mismatch.message).toContain("http://127.0.0.1:1 answered something that is not Trawl's API: url: ")
  })

  it("sums a watch up by status and engine", () => {
    const state = new WatchState(undefined)
    state.finished.set("a", { id: "a", url: "u", status: "done", engine: "http" })
    state.finished.set("b", { id: "b", url: "u", status: "failed", engine: "none" })
    state.finished.set("c", { id: "c", url: "u", status: "done", engine: "brave" })
    expect(state.summary()).toMatchObject({ finished: 3, byStatus: { done: 2, failed: 1 }, byEngine: { http: 1, none: 1, brave: 1 } })
    expect(summaryText(state)).toBe("3 finished\n  by status: done 2, failed 1\n  by engine: brave 1, http 1, none 1")
  })

  it("pads table columns to their widest cell", () => {
    expect(table(["ID", "STATUS"], [["job_1", "done"], ["j", "queued"]])).toBe("ID     STATUS\njob_1  done\nj      queued")
  })
})
