import { Effect } from "effect"
import { describe, expect, it } from "vitest"
import { makeMemoryKv } from "../../src/kv/kv.ts"

describe("Kv.admitInWindow (the per-second rate limit), in-process", () => {
  it("admits at most `limit` events in any window, sliding, and does not count refusals", async () => {
    const kv = makeMemoryKv()
    const admit = () => Effect.runPromise(kv.admitInWindow("k", 300, 2))
    expect([await admit(), await admit(), await admit()]).toEqual([true, true, false])
    // Refused events did not extend the window: once the first two are 300 ms old, two more fit.
    await new Promise((resolve) => setTimeout(resolve, 320))
    expect([await admit(), await admit(), await admit()]).toEqual([true, true, false])
    // Keys are independent.
    expect(await Effect.runPromise(kv.admitInWindow("other", 300, 1))).toBe(true)
  })
})
