import { Effect, Logger } from "effect"
import { SocketError, SocketReadError } from "effect/socket/Socket"
import { describe, expect, it, vi } from "vitest"
import { jsonLogger } from "../../src/observability/telemetry.ts"

/** The JSON log lines a node writes on stdout (docs/observability.md, "Logs"). */
describe("jsonLogger", () => {
  const linesOf = (effect: Effect.Effect<void>) => {
    const lines: Array<Record<string, unknown>> = []
    const write = vi.spyOn(process.stdout, "write").mockImplementation((chunk) => {
      lines.push(JSON.parse(String(chunk)))
      return true
    })
    try {
      Effect.runSync(effect.pipe(Effect.provide(Logger.layer([jsonLogger]))))
    } finally {
      write.mockRestore()
    }
    return lines
  }
  // What the runner's socket server does with a peer connection that breaks off (its node killed).
  const peerReadFails = Effect.fail(new SocketError({ reason: new SocketReadError({ cause: Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" }) }) }))
    .pipe(Effect.ignoreCause({ log: "Unhandled", message: "Unhandled error in SocketServer" }))

  it("writes a cluster peer's broken connection as a warning that says what happened", () => {
    const [line] = linesOf(peerReadFails)
    expect(line).toMatchObject({ level: "WARN", message: expect.stringMatching(/cluster peer's connection .* ended abruptly/) })
  })

  it("keeps other unhandled errors, and other errors of the socket server, as they are", () => {
    const [other] = linesOf(Effect.fail(new Error("boom")).pipe(Effect.ignoreCause({ log: "Unhandled", message: "Unhandled error in SocketServer" })))
    expect(other).toMatchObject({ message: "Unhandled error in SocketServer" })
    expect(other!.level).not.toBe("WARN")
    const [plain] = linesOf(Effect.logError("a job's write failed"))
    expect(plain).toMatchObject({ level: "ERROR", message: "a job's write failed" })
  })
})
