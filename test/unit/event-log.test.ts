/**
 * The tenant event log (src/events/event-log.ts) on test layers: the in-memory EventRepo, the
 * in-process Kv and the TestClock. Streams over HTTP are covered by the end-to-end job tests.
 */
import { expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import { EVENT_RETENTION_HOURS, EventLog, EventLogLive } from "../../src/events/event-log.ts"
import { KvTest } from "../../src/kv/kv.ts"
import { EventRepoTest, TestEventAppender } from "../../src/sql/event-repo.ts"

const Events = EventLogLive.pipe(Layer.provideMerge(Layer.mergeAll(EventRepoTest, KvTest)))

it.effect("a tenant's subscribers are woken by its own notifications only, and read what was appended", () =>
  Effect.gen(function*() {
    const log = yield* EventLog
    const append = (yield* TestEventAppender).append
    const woken: Array<string> = []
    yield* log.subscribe("ten_a", () => woken.push("a"))
    yield* log.subscribe("ten_b", () => woken.push("b"))
    const start = yield* log.latest("ten_a")
    yield* append("ten_a", "job.created", { jobId: "job_1" })
    yield* append("ten_a", "job.done", { jobId: "job_1" })
    yield* append("ten_b", "job.created", { jobId: "job_2" })
    yield* log.notify("ten_a")
    // The in-process Kv delivers on its own fiber.
    yield* Effect.yieldNow.pipe(Effect.repeat({ times: 10 }))
    expect(woken).toEqual(["a"])
    expect((yield* log.since("ten_a", start, 10)).map((e) => [e.id, e.type])).toEqual([["1", "job.created"], ["2", "job.done"]])
    expect((yield* log.since("ten_a", "1", 10)).map((e) => e.id)).toEqual(["2"])
    expect(yield* log.latest("ten_b")).toBe("1")
  }).pipe(Effect.scoped, Effect.provide(Events)))

it.effect(`events are kept ${EVENT_RETENTION_HOURS} hours, then the hourly clean-up removes them; the sequence goes on`, () =>
  Effect.gen(function*() {
    const log = yield* EventLog
    const append = (yield* TestEventAppender).append
    yield* append("ten_a", "job.created", { jobId: "job_old" })
    yield* TestClock.adjust(`${EVENT_RETENTION_HOURS - 1} hours`)
    yield* append("ten_a", "job.created", { jobId: "job_new" })
    expect((yield* log.since("ten_a", "0", 10)).map((e) => e.data.jobId)).toEqual(["job_old", "job_new"])
    // Past the retention of the first event, at the next hourly run.
    yield* TestClock.adjust("2 hours")
    expect((yield* log.since("ten_a", "0", 10)).map((e) => e.data.jobId)).toEqual(["job_new"])
    expect(yield* log.latest("ten_a")).toBe("2")
    expect((yield* append("ten_a", "job.done", { jobId: "job_new" })).id).toBe("3")
  }).pipe(Effect.provide(Events)))
