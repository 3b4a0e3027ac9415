import { Effect, Schedule } from "effect"
import type { SqlError } from "effect/sql"

/**
 * Runs a statement again through a passing fault (the library's `isRetryable`: the database went
 * away for a moment, a deadlock, a serialization failure, a lock timeout), for about 25 s
 * (exponential from 200 ms); any other error, or one that outlasts that, stands. A statement that
 * ran out of time is not run again: it would only hold its writer up as long again. For writes
 * whose loss costs more than the wait: a job's terminal write holds a page fetched already. A
 * connection lost after the server committed makes the retry find its work done: a claim counts
 * its run twice then (as a run restarted after the fault would), and a terminal write answers that
 * the job had ended already (its notices are then left to the sweepers).
 */
export const retryTransient = <A, R>(self: Effect.Effect<A, SqlError.SqlError, R>): Effect.Effect<A, SqlError.SqlError, R> =>
  Effect.retry(self, {
    schedule: Schedule.exponential("200 millis"),
    times: 7,
    while: (e) => e.isRetryable && e.reason._tag !== "StatementTimeoutError"
  })
