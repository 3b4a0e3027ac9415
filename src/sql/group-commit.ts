import { Cause, Deferred, Effect, Exit, type Scope } from "effect"

/**
 * Group commit: callers hand over one item at a time, and items that arrive while a batch is
 * being written wait and go together in the next statement. There is no timer: an idle writer
 * writes at once, a busy one writes larger batches, so the statements per item fall exactly
 * when the database is the bottleneck.
 *
 * `write` gets the items in arrival order and answers one result per item, in the same order.
 * Items with the same `key` never share a batch: a later one waits for the next. With `weight`, a
 * batch also stops before its items weigh more than `maxWeight` (an item heavier than that alone
 * still goes, on its own).
 * With `inFlight` above 1, up to that many batches are written at the same time (the next one
 * is sent while the database still works on the last), for writes whose batches may land in any
 * order; `key` then only keeps an item out of its own batch, not out of one written beside it.
 * When a batch of several items fails, each item is written again on its own, so one bad item
 * fails only its own caller. Writes run in the scope that made the writer: a caller that is
 * interrupted while waiting does not take its item out of a batch already under way.
 */
export const makeGroupCommit = <I, O, E = never>(
  write: (items: ReadonlyArray<I>) => Effect.Effect<ReadonlyArray<O>, E>,
  options: {
    readonly maxBatch: number
    readonly key?: (item: I) => string
    readonly weight?: (item: I) => number
    readonly maxWeight?: number
    readonly inFlight?: number
  }
): Effect.Effect<(item: I) => Effect.Effect<O, E>, never, Scope.Scope> =>
  Effect.gen(function*() {
    const scope = yield* Effect.scope
    const pending: Array<{ readonly item: I; readonly done: Deferred.Deferred<O, E> }> = []
    const inFlight = options.inFlight ?? 1
    /** Batches being written now, each by its own drain. */
    let writing = 0

    const settle = (batch: ReadonlyArray<{ readonly done: Deferred.Deferred<O, E> }>, exit: Exit.Exit<ReadonlyArray<O>, E>) => {
      batch.forEach((entry, i) => {
        Deferred.doneUnsafe(entry.done, Exit.isSuccess(exit) ? Exit.succeed(exit.value[i]!) : Exit.failCause(exit.cause))
      })
    }

    // Written inside `suspend`: a `write` that throws while building its statement fails its
    // callers instead of the drain, which would otherwise leave every later caller waiting.
    const writeOne = (entry: { readonly item: I; readonly done: Deferred.Deferred<O, E> }) =>
      Effect.suspend(() => write([entry.item])).pipe(Effect.exit, Effect.map((exit) => settle([entry], exit)))

    const take = () => {
      const { key, weight, maxWeight = Infinity } = options
      // Most writers batch by count alone: one splice, not one per item.
      if (!key && !weight) return pending.splice(0, options.maxBatch)
      const batch: typeof pending = []
      const keys = new Set<string>()
      let weighed = 0
      for (let i = 0; i < pending.length && batch.length < options.maxBatch;) {
        const item = pending[i]!.item
        const k = key?.(item)
        const w = weight?.(item) ?? 0
        if (batch.length > 0 && weighed + w > maxWeight) break
        if (k !== undefined && keys.has(k)) {
          i++
          continue
        }
        if (k !== undefined) keys.add(k)
        weighed += w
        batch.push(pending.splice(i, 1)[0]!)
      }
      return batch
    }

    const drain: Effect.Effect<void> = Effect.suspend(() => {
      const batch = take()
      if (batch.length === 0) {
        writing--
        return Effect.void
      }
      return Effect.suspend(() => write(batch.map((b) => b.item))).pipe(
        Effect.exit,
        Effect.flatMap((exit) =>
          Exit.isSuccess(exit) || batch.length === 1 || Cause.hasInterruptsOnly(exit.cause)
            ? Effect.sync(() => settle(batch, exit))
            : Effect.forEach(batch, writeOne, { discard: true })
        ),
        Effect.andThen(drain)
      )
    })

    return (item: I) =>
      Effect.suspend(() => {
        const done = Deferred.makeUnsafe<O, E>()
        pending.push({ item, done })
        if (writing >= inFlight) return Deferred.await(done)
        writing++
        return Effect.forkIn(drain, scope).pipe(Effect.andThen(Deferred.await(done)))
      })
  })
