import { createHash } from "node:crypto"
import { Context, type Duration, Effect, Layer, Schedule } from "effect"
import { HttpServerResponse } from "effect/http"
import { Config } from "../config.ts"
import { newId } from "../ids.ts"
import { IDEMPOTENCY_KEY_PATTERN } from "../schema/common.ts"
import { type ApiError, type ErrorDetail, fail } from "../schema/errors.ts"
import { IdempotencyRepo } from "../sql/idempotency-repo.ts"
import { decryptSecret, encryptSecret, isSecretBox } from "../webhooks/secret-box.ts"

export { ABANDONED_CLAIM_SECONDS } from "../sql/idempotency-repo.ts"
export { IDEMPOTENCY_TTL_HOURS } from "../schema/common.ts"

/** What is wrong with an Idempotency-Key header, if it was given and is not 1 to 255 printable ASCII characters. */
export const idempotencyKeyProblem = (key: string | undefined): ErrorDetail | undefined =>
  key === undefined || IDEMPOTENCY_KEY_PATTERN.test(key) ? undefined : { path: "Idempotency-Key", code: "invalid_value", message: "1 to 255 printable ASCII characters" }

/**
 * What a request run under an Idempotency-Key knows of its earlier tries. Ids and generated
 * secrets are derived from `seed` (`seededId`), which every try of the same request gets: a try
 * that takes over the claim of one whose node died mid-way creates the same resources again, and
 * where that try already wrote them, meets them instead of making more.
 */
export interface KeyedAttempt {
  readonly seed: string
  /** An earlier try of this very request may have written something before it died. */
  readonly resumed: boolean
}

export interface StoredResponse {
  readonly status: number
  readonly body: unknown
}

export interface IdempotencyShape {
  /**
   * Runs `create` at most once per (tenant, key) within 24 h. The same key with the same
   * body answers the stored first response again; with another body, 409
   * `idempotency_mismatch`. A concurrent duplicate waits for the first to finish (up to 30 s).
   * Only successful responses are stored: a failed request leaves the key free, and a duplicate
   * that was waiting on it then runs itself. `create` gets the key's `KeyedAttempt` (none without a key).
   */
  readonly run: <R>(
    tenantId: string,
    key: string | undefined,
    fingerprint: unknown,
    create: (attempt: KeyedAttempt | undefined) => Effect.Effect<StoredResponse, ApiError, R>
  ) => Effect.Effect<HttpServerResponse.HttpServerResponse, ApiError, R>
}

export class Idempotency extends Context.Service<Idempotency, IdempotencyShape>()("trawl/Idempotency") {}

/**
 * A refusal (the tenant's plan no longer allows the work) that stands unless the request is the
 * retry of one already answered under its Idempotency-Key: that gets the stored answer again, as
 * contract §7 says, since the work was done and paid when it was allowed (docs/api.md, "Gating").
 * Set by the authorization middleware on routes that take the key; `run` applies it.
 */
export const RefusedUnlessReplayed = Context.Reference<ApiError | undefined>("trawl/RefusedUnlessReplayed", { defaultValue: () => undefined })

/**
 * JSON text of a JSON value with every object's keys sorted, so that two bodies that differ only in
 * the order of their keys read the same. Iterative: a client may nest arrays thousands deep, and
 * a recursive writer (JSON.stringify too) would overflow the stack on them.
 */
export const canonicalJson = (value: unknown): string => {
  const out: Array<string> = []
  // Either a value still to write, or a piece of punctuation to emit when its turn comes.
  const stack: Array<{ readonly value: unknown } | { readonly text: string }> = [{ value }]
  while (stack.length > 0) {
    const next = stack.pop()!
    if ("text" in next) {
      out.push(next.text)
      continue
    }
    // As JSON.stringify: a value that says how it is written (a Date) is written so.
    const raw = next.value
    const v = raw !== null && typeof raw === "object" && typeof (raw as { toJSON?: unknown }).toJSON === "function"
      ? (raw as { toJSON: () => unknown }).toJSON()
      : raw
    if (Array.isArray(v)) {
      stack.push({ text: "]" })
      for (let i = v.length - 1; i >= 0; i--) {
        stack.push({ value: v[i] === undefined ? null : v[i] })
        if (i > 0) stack.push({ text: "," })
      }
      out.push("[")
    } else if (v !== null && typeof v === "object") {
      const keys = Object.keys(v).filter((k) => (v as Record<string, unknown>)[k] !== undefined).sort()
      stack.push({ text: "}" })
      for (let i = keys.length - 1; i >= 0; i--) {
        stack.push({ value: (v as Record<string, unknown>)[keys[i]!] })
        stack.push({ text: `${i > 0 ? "," : ""}${JSON.stringify(keys[i])}:` })
      }
      out.push("{")
    } else {
      out.push(JSON.stringify(v) ?? "null")
    }
  }
  return out.join("")
}

/** What tells two requests under one key apart: a hash of the operation and its body (keys in any order). */
export const requestHash = (fingerprint: unknown): string => createHash("sha256").update(canonicalJson(fingerprint)).digest("hex")

/** A response from its JSON text: a replay answers the very bytes of the first response. */
const respondText = (status: number, body: string) => HttpServerResponse.text(body, { status, contentType: "application/json" })
const respond = (r: StoredResponse) => respondText(r.status, JSON.stringify(r.body))

/** The service; `claimRenewal` is how often a running request renews its claim (tests shorten it). */
export const makeIdempotencyLayer = (options: { readonly claimRenewal: Duration.Input }) => Layer.effect(
  Idempotency,
  Effect.gen(function*() {
    const repo = yield* IdempotencyRepo
    const { secretKey } = yield* Config
    // A stored response can hold a generated webhook secret, so it is kept encrypted, bound to its key.
    const seal = (tenantId: string, key: string, body: string) => encryptSecret(secretKey, body, `idempotency ${tenantId} ${key}`)
    const unseal = (tenantId: string, key: string, stored: string) =>
      isSecretBox(stored) ? decryptSecret(secretKey, stored, `idempotency ${tenantId} ${key}`) : stored
    yield* repo.deleteExpired.pipe(
      Effect.ignore,
      Effect.repeat(Schedule.spaced("10 minutes")),
      Effect.forkScoped
    )

    /** The stored first response, again. */
    const replay = (tenantId: string, key: string, status: number, stored: string) =>
      Effect.try(() => unseal(tenantId, key, stored)).pipe(
        // Sealed with another SECRET_KEY (API keys would not pass either, but a 500 is never the answer).
        Effect.catch((e) =>
          Effect.logWarning("a stored idempotent response cannot be decrypted", e).pipe(
            Effect.andThen(fail(409, "idempotency_conflict", "the stored response of this key cannot be read here; send the request with a new key"))
          )
        ),
        Effect.map((body) => respondText(status, body))
      )

    return Idempotency.of({
      run: (tenantId, key, fingerprint, create) => Effect.gen(function*() {
        const refused = yield* RefusedUnlessReplayed
        if (key === undefined) {
          if (refused !== undefined) return yield* Effect.fail(refused)
          return respond(yield* create(undefined))
        }
        const problem = idempotencyKeyProblem(key)
        if (problem) return yield* fail(400, "invalid_idempotency_key", "Idempotency-Key must be 1 to 255 printable ASCII characters", { details: [problem] })
        const hash = requestHash(fingerprint)
        if (refused !== undefined) {
          const row = yield* repo.find(tenantId, key)
          if (row === undefined || row.status_code === null) return yield* Effect.fail(refused)
          if (row.request_hash !== hash) return yield* fail(409, "idempotency_mismatch", "this Idempotency-Key was used with a different request")
          return yield* replay(tenantId, key, row.status_code, row.response!)
        }
        const deadline = Date.now() + 30_000
        while (Date.now() < deadline) {
          const token = newId("claim")
          const attempt: KeyedAttempt | undefined = yield* repo.claim(tenantId, key, hash, token)
          if (attempt) {
            const renewClaim = repo.renewClaim(tenantId, key, token).pipe(
              Effect.ignore,
              Effect.delay(options.claimRenewal),
              Effect.forever
            )
            // Not interruptible: a client that hangs up must not leave jobs created under a key
            // that is then freed (its retry would create them again) or never answered.
            const body = yield* Effect.uninterruptible(Effect.scoped(Effect.gen(function*() {
              yield* Effect.forkScoped(Effect.interruptible(renewClaim))
              const response = yield* create(attempt).pipe(
                // Freed, not deleted: the seed stays, so a retry still meets whatever this try wrote.
                Effect.onError(() => repo.freeClaim(tenantId, key, token).pipe(Effect.ignore))
              )
              const body = JSON.stringify(response.body)
              yield* repo.storeResponse(tenantId, key, token, response.status, seal(tenantId, key, body))
              return { status: response.status, body }
            })))
            return respondText(body.status, body.body)
          }
          // Someone holds the key: the same request finishing elsewhere, or a finished one.
          while (Date.now() < deadline) {
            const row = yield* repo.find(tenantId, key)
            // The holder failed and freed the key (or died): this request runs itself (and meets the same error or succeeds).
            if (!row || (row.status_code === null && row.free)) break
            if (row.request_hash !== hash) {
              return yield* fail(409, "idempotency_mismatch", "this Idempotency-Key was used with a different request")
            }
            if (row.status_code !== null) return yield* replay(tenantId, key, row.status_code, row.response!)
            yield* Effect.sleep("100 millis")
          }
        }
        return yield* fail(409, "idempotency_in_progress", "a request with this key is still being processed", { retryAfter: 1 })
      })
    })
  })
)

export const IdempotencyLive = makeIdempotencyLayer({ claimRenewal: "15 seconds" })
