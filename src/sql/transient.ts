import { Effect, Schedule } from "effect"
import type { SqlError } from "effect/sql"

/**
 * Runs a statement again through a passing fault (the library's `isRetryable`: the database went
 * away for a moment, a deadlock, a serialization failure, a lock or statement timeout), for about
 * 25 s (exponential from 200 ms); any other error, or one that outlasts that, stands. For writes
 * whose loss costs more than the wait: a job's terminal write holds a page fetched already.
 */
export const retryTransient = <A, R>(self: Effect.Effect<A, SqlError.SqlError, R>): Effect.Effect<A, SqlError.SqlError, R> =>
  Effect.retry(self, { schedule: Schedule.exponential("200 millis"), times: 7, while: (e) => e.isRetryable })
