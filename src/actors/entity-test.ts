import { Context, Effect, Layer } from "effect"
import { Entity, TestRunner } from "effect/cluster"
import type { Rpc } from "effect/rpc"

/**
 * The cluster for unit tests: effect's in-memory runner (a real `Sharding`, with in-memory message
 * and runner storage, nothing durable). Entities registered on it run in this process; entity
 * clients (`X.client`) reach them as in production, persisted messages included.
 */
export const ClusterTest = TestRunner.layer

/** A message an entity test layer received. */
export interface ReceivedMessage {
  readonly entityType: string
  readonly entityId: string
  readonly tag: string
  readonly payload: unknown
}

/** The messages the recording entities of a test received, in the order they arrived. */
export class EntityMessages extends Context.Service<EntityMessages, {
  readonly all: Effect.Effect<ReadonlyArray<ReceivedMessage>>
  /** The messages of one entity type, waiting up to `within` (5 s) for at least `count` of them: one-way sends arrive a little later. */
  readonly of: (entityType: string, count?: number, within?: number) => Effect.Effect<ReadonlyArray<ReceivedMessage>>
}>()("trawl/EntityMessages") {}

/** Where the recording entities write (provided by `EntityMessagesTest`). */
export class EntityLog extends Context.Service<EntityLog, Array<ReceivedMessage>>()("trawl/EntityLog") {}

/** Each build starts empty. */
export const EntityMessagesTest: Layer.Layer<EntityMessages | EntityLog> = Layer.unwrap(Effect.sync(() => {
  const log: Array<ReceivedMessage> = []
  const matching = (type: string) => log.filter((m) => m.entityType === type)
  return Layer.mergeAll(
    Layer.succeed(EntityLog, log),
    Layer.succeed(EntityMessages, EntityMessages.of({
      all: Effect.sync(() => [...log]),
      of: (type, count = 0, within = 5_000) =>
        Effect.gen(function*() {
          // Real time, not the Clock: the sends run on the test runner's own fibers.
          const deadline = Date.now() + within
          while (matching(type).length < count && Date.now() < deadline) yield* Effect.promise(() => new Promise((r) => setTimeout(r, 5)))
          return matching(type)
        })
    }))
  )
}))

/**
 * An entity whose every message (all of them answering nothing) is recorded in `EntityMessages`
 * and does nothing else: the stand-in for an entity whose work is not what a test is about (a job's
 * crawl when job creation is tested), so that what was handed to it can be checked.
 */
export const recordingEntity = <Type extends string, Rpcs extends Rpc.Any>(entity: Entity.Entity<Type, Rpcs>) =>
  entity.toLayer(Effect.gen(function*() {
    const log = yield* EntityLog
    const { entityId } = yield* Entity.CurrentAddress
    const handlers: Record<string, (request: { readonly payload: unknown }) => Effect.Effect<void>> = {}
    for (const tag of entity.protocol.requests.keys()) {
      handlers[tag] = ({ payload }) => Effect.sync(() => void log.push({ entityType: entity.type, entityId, tag, payload }))
    }
    return handlers as never
  }))
