import { Clock, Context, Effect, Layer } from "effect"
import { newId } from "../ids.ts"
import { Mailer } from "../mail/mailer.ts"
import { isEmailAddress, iso, parseIsoDateTime } from "../schema/common.ts"
import type { Delegation, DelegationStatus } from "../schema/delegation.ts"
import { type Conflict, fail, type Forbidden, type InvalidRequest, notFound, type NotFound, type TooManyRequests, type Unavailable, type Unprocessable } from "../schema/errors.ts"
import { AuditLog } from "../sql/audit-log.ts"
import { DelegationRepo, type DelegationRow, type Party } from "../sql/delegation-repo.ts"
import { refuseOnBehalf, INVITATION_LINK_PATH } from "./invitation-service.ts"
import { MailedTokens, TOKEN_LIFETIME_MS } from "./mailed-tokens.ts"
import { AuthService } from "./auth-service.ts"
import { delegateRegistrantRole, grantablePermissions, isPowerful, notHeld, notHeldDetails } from "./permissions.ts"
import type { Principal } from "./principal.ts"
import type { ClientContext } from "./session-service.ts"

/** The longest a delegation may run (docs/delegations.md). */
export const MAX_DELEGATION_MS = 365 * 24 * 3600_000

export interface NewDelegationInput {
  readonly delegateId: string
  readonly reason: string
  readonly expiresAt: string
  readonly currentPassword?: string | undefined
  readonly totpCode?: string | undefined
}

/** What the delegate may do to a delegation, and the delegator. */
export type DelegationMove = "accept" | "decline" | "renounce" | "revoke"

export interface DelegationServiceShape {
  readonly create: (me: Principal, input: NewDelegationInput, client: ClientContext) => Effect.Effect<Delegation, Conflict | Forbidden | InvalidRequest | NotFound | TooManyRequests | Unavailable | Unprocessable>
  readonly list: (
    me: Principal,
    party: Party,
    status: DelegationStatus | undefined,
    offset: number,
    limit: number
  ) => Effect.Effect<{ items: ReadonlyArray<Delegation>; total: number }, never>
  readonly move: (me: Principal, id: string, move: DelegationMove, client: ClientContext) => Effect.Effect<Delegation, Conflict | Forbidden | NotFound>
}

export class DelegationService extends Context.Service<DelegationService, DelegationServiceShape>()("trawl/DelegationService") {}

export const toDelegation = (r: DelegationRow): Delegation => ({
  id: r.id,
  tenantId: r.tenant_id,
  delegatorId: r.delegator_id,
  delegateId: r.delegate_id,
  delegateEmail: r.delegate_email,
  reason: r.reason,
  status: r.status,
  expiresAt: iso(r.expires_at)!,
  invitedAt: iso(r.invited_at)!,
  respondedAt: iso(r.responded_at),
  revokedAt: iso(r.revoked_at),
  createdAt: iso(r.created_at)!,
  delegatorDisplayName: r.delegator_display_name,
  delegateDisplayName: r.delegate_display_name
})

/** Each move: who may make it, from which states, to which, and the time it stamps. */
const moves: Record<DelegationMove, { party: Party; from: ReadonlyArray<"pending" | "active">; to: "active" | "declined" | "renounced" | "revoked"; stamp: "responded_at" | "revoked_at" }> = {
  accept: { party: "delegate", from: ["pending"], to: "active", stamp: "responded_at" },
  decline: { party: "delegate", from: ["pending"], to: "declined", stamp: "responded_at" },
  renounce: { party: "delegate", from: ["active"], to: "renounced", stamp: "responded_at" },
  revoke: { party: "delegator", from: ["pending", "active"], to: "revoked", stamp: "revoked_at" }
}

const badExpiry = (message: string) =>
  fail(400, "validation_error", `expiresAt ${message}`, { details: [{ path: "expiresAt", code: "invalid_value", message }] })

export const DelegationServiceLive = Layer.effect(
  DelegationService,
  Effect.gen(function*() {
    const repo = yield* DelegationRepo
    const tokens = yield* MailedTokens
    const mailer = yield* Mailer
    const audit = yield* AuditLog
    const auth = yield* AuthService

    return DelegationService.of({
      create: (me, input, client) =>
        Effect.gen(function*() {
          // A delegate cannot pass on what was delegated to it.
          yield* refuseOnBehalf(me)
          // The delegate acts with the identity's role: only a credential holding all of it may pass it on.
          const delegated = yield* repo.rolePermissions(me.tenantId, me.identityId)
          const lacking = notHeld(grantablePermissions(me), delegated)
          if (lacking.length > 0) {
            return yield* fail(403, "forbidden", `a delegation passes on the identity's whole role, and this ${me.kind === "session" ? "session" : "key"} lacks ${lacking.slice(0, 5).join(", ")} of it`, {
              details: notHeldDetails("", lacking)
            })
          }
          // A delegate of an all-powerful role gains what such a key would: the same proof of presence (docs/identity.md).
          yield* auth.proveGrant(me, input, isPowerful(delegated), client)
          const expiresAt = parseIsoDateTime(input.expiresAt)!
          const now = yield* Clock.currentTimeMillis
          if (expiresAt <= now) return yield* badExpiry("must be in the future")
          if (expiresAt > now + MAX_DELEGATION_MS) return yield* badExpiry("must be at most one year ahead")

          let delegateId: string
          let delegateEmail: string | null = null
          if (input.delegateId.includes("@")) {
            // in NFC, as every address is kept (Email in schema/common.ts)
            const email = input.delegateId.normalize("NFC")
            if (!isEmailAddress(email)) {
              return yield* fail(400, "validation_error", "delegateId is neither an identity id nor an e-mail address", {
                details: [{ path: "delegateId", code: "invalid_value", message: "not an e-mail address" }]
              })
            }
            // Someone of the tenant already registered with that address is named by their identity;
            // someone not yet by the id their registration with the delegation's token will give.
            const person = yield* repo.personByEmail(me.tenantId, email)
            if (person) delegateId = person.id
            else {
              // A newcomer joins the tenant with the registrant role: nobody hands out more than they hold.
              const lackingToAdmit = notHeld(grantablePermissions(me), delegateRegistrantRole.permissions)
              if (lackingToAdmit.length > 0) {
                return yield* fail(403, "forbidden", `a delegation to an address not yet registered brings a new person in with the ${delegateRegistrantRole.name} role, and this ${me.kind === "session" ? "session" : "key"} lacks ${lackingToAdmit.join(", ")}`, {
                  details: notHeldDetails("delegateId", lackingToAdmit)
                })
              }
              delegateId = newId("idt")
              delegateEmail = email
            }
          } else {
            const person = yield* repo.personOfTenant(me.tenantId, input.delegateId)
            if (!person) return yield* notFound("delegate identity")
            delegateId = person.id
          }
          if (delegateId === me.identityId) {
            return yield* fail(422, "cannot_delegate_to_self", "an identity cannot delegate to itself", {
              details: [{ path: "delegateId", code: "invalid_value", message: "the caller's own identity" }]
            })
          }
          const row = yield* repo.insert({ tenantId: me.tenantId, delegatorId: me.identityId, delegateId, delegateEmail, reason: input.reason, expiresAt: new Date(expiresAt) })
          if (row === "exists") return yield* fail(409, "delegation_exists", "a pending or active delegation to this delegate exists already")

          if (delegateEmail !== null) {
            // The registration token lives as long as a delegation token may, and never past the delegation.
            const tokenExpiry = new Date(Math.min(expiresAt, now + TOKEN_LIFETIME_MS.delegation))
            const { token } = yield* tokens.issue({ purpose: "delegation", tenantId: me.tenantId, identityId: null, email: delegateEmail, subjectId: row.id, expiresAt: tokenExpiry })
            const from = row.delegator_display_name ?? "A Trawl user"
            const sent = yield* mailer.send({
              to: delegateEmail,
              subject: `${from} asks you to act on their behalf on Trawl`,
              text: `${from} would like you to act on their behalf on Trawl until ${new Date(expiresAt).toISOString()}.\n\n` +
                `Reason given: ${input.reason}\n\n` +
                `Register with this link (it works once, until ${tokenExpiry.toISOString()}), then accept the delegation:\n` +
                `${tokens.link(INVITATION_LINK_PATH, token)}\n\nIf you did not expect this mail, ignore it.\n`
            }).pipe(Effect.as(true), Effect.catch(() => Effect.succeed(false)))
            if (!sent) {
              yield* tokens.retireForSubject(row.id)
              yield* repo.discard(row.id)
              return yield* fail(503, "dependency_unavailable", "the delegation mail could not be sent; nothing was created, try again", { retryAfter: 5 })
            }
          }
          yield* audit.record(me, "delegation.create", row.id, { delegateId, ...(delegateEmail !== null ? { delegateEmail } : {}), expiresAt: iso(row.expires_at) }, client)
          return toDelegation(row)
        }),
      list: (me, party, status, offset, limit) =>
        repo.list(me.tenantId, party, me.identityId, status, offset, limit).pipe(
          Effect.map((page) => ({ total: page.total, items: page.items.map(toDelegation) }))
        ),
      move: (me, id, move, client) =>
        Effect.gen(function*() {
          yield* refuseOnBehalf(me)
          const rule = moves[move]
          const result = yield* repo.transition({ tenantId: me.tenantId, id, identityId: me.identityId, ...rule })
          if (result === "not_found") return yield* notFound("delegation")
          if ("current" in result) {
            return yield* fail(409, "invalid_delegation_state", `cannot ${move} a delegation that is ${result.current}`, {
              extra: { delegationStatus: result.current }
            })
          }
          // An ended delegation's registration link stops working too.
          if (rule.to !== "active") yield* tokens.retireForSubject(result.id)
          yield* audit.record(me, `delegation.${move}`, result.id, { delegatorId: result.delegator_id, delegateId: result.delegate_id, status: result.status }, client)
          return toDelegation(result)
        })
    })
  })
)
