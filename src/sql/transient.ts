import { Effect, Schedule } from "effect"
import type { SqlError } from "effect/sql"

/** Faults that pass: the database went away for a moment (a failover, a restart), or lost a race. */
const TRANSIENT = new Set(["ConnectionError", "DeadlockError", "SerializationError", "LockTimeoutError"])

export const isTransient = (e: SqlError.SqlError): boolean => TRANSIENT.has(e.reason._tag)

/**
 * Runs a statement again through a passing fault, for about 25 s (exponential from 200 ms); any
 * other error, or one that outlasts that, stands. For writes whose loss would cost more than the
 * wait: a job's terminal write holds a page fetched already.
 */
export const retryTransient = <A, R>(self: Effect.Effect<A, SqlError.SqlError, R>): Effect.Effect<A, SqlError.SqlError, R> =>
  Effect.retry(self, { schedule: Schedule.exponential("200 millis"), times: 7, while: isTransient })
