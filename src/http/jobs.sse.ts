import type { IncomingMessage, ServerResponse } from "node:http"
import { NodeHttpServerRequest } from "@effect/platform-node"
import { Cause, Effect, Latch, Queue, Stream } from "effect"
import { type HttpServerRequest, HttpServerResponse } from "effect/http"
import { EVENT_RETENTION_HOURS, EventLog, type StoredEvent } from "../events/event-log.ts"
import { ApiKeyAuthenticator } from "../iam/api-key-auth.ts"
import { SessionAuthenticator } from "../iam/session-auth.ts"
import { allows, permissionsOnBehalf } from "../iam/permissions.ts"
import { LAST_EVENT_ID_PATTERN } from "../schema/common.ts"
import type { Principal } from "../iam/principal.ts"
import { fail } from "../schema/errors.ts"
import { DelegationRepo } from "../sql/delegation-repo.ts"
import { Draining } from "./draining.ts"
import { presentedSession } from "./security.ts"
import { OpenStreams } from "./stream-connections.ts"

const SSE_BUFFER = 1000
const KEEPALIVE = "15 seconds"
/** How often an open stream asks again whether its key still holds (revoked, expired, role changed). */
const REAUTHENTICATE = "5 seconds"

const sseFrame = (e: StoredEvent) => `id: ${e.id}\nevent: ${e.type}\ndata: ${JSON.stringify({ ...e.data, id: e.data.id })}\n\n`

/**
 * The tenant's event stream (GET /v1/scraper/events) as Server-Sent Events: from the event log,
 * resumed after `Last-Event-ID`, woken by the log's notifications, ended when the key stops
 * granting it or the node drains.
 */
export const makeEventStreams = Effect.gen(function*() {
  const events = yield* EventLog
  const draining = yield* Draining
  const authenticator = yield* ApiKeyAuthenticator
  const sessions = yield* SessionAuthenticator
  const openStreams = yield* OpenStreams
  const delegations = yield* DelegationRepo

  const open = (me: Principal, request: HttpServerRequest.HttpServerRequest, resumeFrom: string | undefined) =>
    Effect.gen(function*() {
      // The credential the stream was opened with, asked again every REAUTHENTICATE: the key, or
      // the session (bearer or cookie) of a person's stream (the middleware took a key first).
      const session = presentedSession(request.headers, request.cookies)
      const currentPrincipal = me.kind === "session" && session !== undefined
        ? sessions.authenticate(session.token)
        : authenticator.authenticate(request.headers["x-api-key"] ?? "")
      // A stream read on behalf of someone (me.actorId the delegate) ends with the delegation too.
      const stillAllowed = Effect.gen(function*() {
        const p = yield* currentPrincipal
        if (!p || p.tenantId !== me.tenantId) return false
        if (me.actorId === me.identityId) return allows(p.permissions, "scraper:events:read")
        const grant = yield* delegations.activeGrant(me.tenantId, me.identityId, p.identityId)
        return grant !== undefined && allows(permissionsOnBehalf(p, grant.permissions), "scraper:events:read")
      })
      if (resumeFrom !== undefined && !LAST_EVENT_ID_PATTERN.test(resumeFrom)) {
        return yield* fail(400, "validation_error", "Last-Event-ID must be an event id", {
          details: [{ path: "Last-Event-ID", code: "invalid_value", message: "a decimal event id" }]
        })
      }
      // Watched for stalls and shutdown from here on, and counted against the tenant's streams on this node.
      const admitted = openStreams.admit(
        me.tenantId,
        NodeHttpServerRequest.toIncomingMessage(request) as IncomingMessage,
        NodeHttpServerRequest.toServerResponse(request) as ServerResponse
      )
      if (!admitted) {
        return yield* fail(429, "rate_limited", `the tenant has ${openStreams.maxPerTenant} event streams open on this node already; close one, or retry`, {
          retryAfter: 5
        })
      }
      const stream = Stream.callback<string>((queue) =>
        Effect.gen(function*() {
          // The log is the source of truth; a notification only says it may have grown.
          // An id beyond the tenant's latest (from another installation, say) resumes from now
          // instead of waiting, silently, until the sequence reaches it.
          const latest = yield* events.latest(me.tenantId)
          let lastSeq = resumeFrom !== undefined && BigInt(resumeFrom) <= BigInt(latest) ? resumeFrom : latest
          // The events up to `latest` existed when the stream opened: if none past the resume point
          // is left at the first read, they have all expired, and that is said at once.
          let existedUpTo: bigint | undefined = BigInt(latest)
          // One reader per stream. A notification (and each keep-alive tick, in case a
          // notification was lost, say while Redis reconnected) opens the latch; the reader
          // closes it before it reads, so what is appended meanwhile is read next time round.
          const due = Latch.makeUnsafe(true)
          yield* events.subscribe(me.tenantId, () => due.openUnsafe())
          Queue.offerUnsafe(queue, ": connected\n\n")
          yield* Effect.forkScoped(Effect.forever(Effect.sleep(KEEPALIVE).pipe(
            Effect.andThen(Effect.sync(() => {
              Queue.offerUnsafe(queue, ": keep-alive\n\n")
              due.openUnsafe()
            }))
          )))
          // A stream outlives the request that opened it: once its key or session (or the delegation
          // it reads on behalf of) is revoked or expires, or no longer grants the events (or the
          // tenant), it ends, as its next request would fail.
          // A check that cannot be made (the database away) ends the stream too: it fails closed,
          // and the client reconnects, authenticated anew.
          yield* Effect.forkScoped(Effect.forever(Effect.sleep(REAUTHENTICATE).pipe(
            Effect.andThen(stillAllowed),
            Effect.flatMap((allowed) => (allowed ? Effect.void : Effect.fail("no longer allowed" as const)))
          )).pipe(Effect.catchCause((cause) => (Cause.hasInterruptsOnly(cause) ? Effect.failCause(cause) : Queue.end(queue)))))
          const read = Effect.gen(function*() {
            yield* due.await
            due.closeUnsafe()
            for (;;) {
              const batch = yield* events.since(me.tenantId, lastSeq, 500)
              // Ids have no gaps, so a gap is events past their retention: said in a comment
              // (clients that check can tell; EventSource ignores it), then the stream goes on.
              const first = batch[0]
              const gapEnd = first ? BigInt(first.id) - 1n : existedUpTo
              existedUpTo = undefined
              if (gapEnd !== undefined && gapEnd > BigInt(lastSeq)) {
                Queue.offerUnsafe(queue, `: events ${BigInt(lastSeq) + 1n} to ${gapEnd} have expired (events are kept ${EVENT_RETENTION_HOURS} hours)\n\n`)
                lastSeq = String(gapEnd)
              }
              for (const e of batch) {
                // A client that cannot keep up is cut off; it resumes with Last-Event-ID.
                if (!Queue.offerUnsafe(queue, sseFrame(e))) return yield* Queue.end(queue)
                lastSeq = e.id
              }
              if (batch.length < 500) return
            }
          })
          // A failed read (the database went away) ends the stream, so the client reconnects
          // and resumes, rather than a stream that only sends keep-alives.
          yield* Effect.forever(read).pipe(
            Effect.catchCause((cause) =>
              Cause.hasInterruptsOnly(cause)
                ? Effect.failCause(cause)
                : Effect.logWarning("event stream ended by a failed read", cause).pipe(Effect.andThen(Queue.end(queue)))
            )
          )
        }), { bufferSize: SSE_BUFFER, strategy: "dropping" })
      return HttpServerResponse.stream(Stream.encodeText(Stream.interruptWhen(stream, draining.started)), {
        contentType: "text/event-stream",
        headers: { "cache-control": "no-cache", connection: "keep-alive", "x-accel-buffering": "no" }
      })
    })

  return { open }
})
