import { Context, Effect, Layer } from "effect"
import { IdentityRegistrations } from "../actors/identity-registrations.ts"
import { Mailer } from "../mail/mailer.ts"
import { iso } from "../schema/common.ts"
import { type Conflict, fail, type Forbidden, type InvalidRequest, notFound, type NotFound, type TooManyRequests, type Unavailable, type Unprocessable } from "../schema/errors.ts"
import type { Invitation, InvitationStatus } from "../schema/invitation.ts"
import { AuditLog } from "../sql/audit-log.ts"
import type { AuthTokenRow } from "../sql/auth-token-repo.ts"
import { IdentityRepo } from "../sql/identity-repo.ts"
import { InvitationRepo, type InvitationRow, type RegistrationSubject } from "../sql/invitation-repo.ts"
import { RoleRepo } from "../sql/role-repo.ts"
import { AuthService } from "./auth-service.ts"
import { MailedTokens } from "./mailed-tokens.ts"
import { hashPassword, refuseWeakPassword } from "./passwords.ts"
import { grantablePermissions, isPowerful, notHeld, notHeldDetails } from "./permissions.ts"
import type { Principal } from "./principal.ts"
import { SessionAuthenticator } from "./session-auth.ts"
import { type ClientContext, type OpenedSession, SessionService } from "./session-service.ts"

/** How long an invitation (and its mailed token) is open (docs/invitations.md). */
export const INVITATION_LIFETIME_MS = 7 * 24 * 3600_000

/** Where the link of an invitation or delegation mail leads; the token is in its query. */
export const INVITATION_LINK_PATH = "/invitations/accept"

export interface NewInvitationInput {
  readonly email: string
  readonly roleId: string
  readonly firstName?: string | undefined
  readonly lastName?: string | undefined
  readonly currentPassword?: string | undefined
  readonly totpCode?: string | undefined
}

export interface RegisterInput {
  readonly invitationToken?: string | undefined
  readonly email: string
  readonly password: string
  readonly firstName?: string | undefined
  readonly lastName?: string | undefined
}

export interface InvitationServiceShape {
  readonly create: (me: Principal, orgIdentityId: string, input: NewInvitationInput, client: ClientContext) => Effect.Effect<Invitation, Conflict | Forbidden | InvalidRequest | NotFound | TooManyRequests | Unavailable | Unprocessable>
  readonly list: (
    me: Principal,
    orgIdentityId: string,
    status: InvitationStatus | undefined,
    offset: number,
    limit: number
  ) => Effect.Effect<{ items: ReadonlyArray<Invitation>; total: number }, NotFound>
  readonly revoke: (
    me: Principal,
    orgIdentityId: string,
    invitationId: string,
    client: ClientContext
  ) => Effect.Effect<{ revoked: true; revokedAt: string; id: string }, Conflict | NotFound>
  /** Accepts or declines, as the identity whose e-mail the invitation was sent to. */
  readonly respond: (me: Principal, token: string, accept: boolean, client: ClientContext) => Effect.Effect<Invitation, Conflict | Forbidden | InvalidRequest>
  /** Creates a person from an invitation or delegation token and opens their first session. */
  readonly register: (input: RegisterInput, client: ClientContext) => Effect.Effect<OpenedSession, Conflict | Forbidden | InvalidRequest | TooManyRequests | Unavailable>
}

export class InvitationService extends Context.Service<InvitationService, InvitationServiceShape>()("trawl/InvitationService") {}

export const toInvitation = (r: InvitationRow): Invitation => ({
  id: r.id,
  tenantId: r.tenant_id,
  organizationId: r.organization_id,
  userId: r.user_id,
  email: r.email,
  roleId: r.role_id,
  status: r.status,
  invitedAt: iso(r.invited_at)!,
  invitationExpiresAt: iso(r.invitation_expires_at)
})

/** One answer for every registration that has no usable token: which reason it was is not told. */
const registrationDisabled = fail(403, "registration_disabled", "registration needs the token of a pending invitation or delegation, for this e-mail address")

const invalidRole = fail(422, "invalid_role", "roleId is not a role of this tenant", {
  details: [{ path: "roleId", code: "not_found", message: "no such role in this tenant" }]
})

const mailFailed = fail(503, "dependency_unavailable", "the invitation mail could not be sent; nothing was created, try again", { retryAfter: 5 })

/** Invitations and delegations are answered by the person themselves, not by a delegate acting for them. */
export const refuseOnBehalf = (me: Principal) =>
  me.actorId === me.identityId
    ? Effect.void
    : fail(403, "forbidden", "this operation is for the caller's own identity; it cannot be made on behalf of someone (x-on-behalf-of)")

export const InvitationServiceLive = Layer.effect(
  InvitationService,
  Effect.gen(function*() {
    const repo = yield* InvitationRepo
    const roles = yield* RoleRepo
    const registrations = yield* IdentityRegistrations
    const identities = yield* IdentityRepo
    const tokens = yield* MailedTokens
    const mailer = yield* Mailer
    const audit = yield* AuditLog
    const sessions = yield* SessionService
    const sessionAuth = yield* SessionAuthenticator
    const auth = yield* AuthService

    const organizationOf = (me: Principal, orgIdentityId: string) =>
      Effect.flatMap(repo.organizationByIdentity(me.tenantId, orgIdentityId), (org) => (org ? Effect.succeed(org) : notFound("organization")))

    /** The pending invitation a token stands for, if the token is usable now. */
    const invitationOfToken = (token: string) =>
      Effect.gen(function*() {
        const row = yield* tokens.peek("invitation", token)
        if (!row?.subject_id) return undefined
        const invitation = yield* repo.byId(row.subject_id)
        return invitation && { token: row, invitation }
      })

    return InvitationService.of({
      create: (me, orgIdentityId, input, client) =>
        Effect.gen(function*() {
          const org = yield* organizationOf(me, orgIdentityId)
          const role = yield* roles.find(me.tenantId, input.roleId)
          if (!role) return yield* invalidRole
          // Nobody hands out more than they hold.
          const ungranted = notHeld(grantablePermissions(me), role.permissions)
          if (ungranted.length > 0) {
            return yield* fail(403, "forbidden", "the role grants permissions the caller does not hold", { details: notHeldDetails("roleId", ungranted), extra: { notHeld: ungranted } })
          }
          // An invitee with an all-powerful role gains what an all-powerful key would: the same proof of presence.
          yield* auth.proveGrant(me, input, isPowerful(role.permissions), client)
          const expiresAt = new Date(Date.now() + INVITATION_LIFETIME_MS)
          const row = yield* repo.insert({
            tenantId: me.tenantId,
            organizationId: org.id,
            email: input.email,
            roleId: role.id,
            firstName: input.firstName ?? null,
            lastName: input.lastName ?? null,
            invitedBy: me.actorId,
            expiresAt
          })
          if (row === "role_missing") return yield* invalidRole
          if (row === "member") return yield* fail(409, "already_member", "this e-mail address belongs to a member of the organization")
          if (row === "pending_exists") return yield* fail(409, "invitation_pending", "this e-mail address already has a pending invitation to the organization")
          const { token } = yield* tokens.issue({ purpose: "invitation", tenantId: me.tenantId, identityId: null, email: row.email, subjectId: row.id, expiresAt })
          const greeting = input.firstName ? `Hello ${input.firstName},\n\n` : ""
          const sent = yield* mailer.send({
            to: row.email,
            subject: `You are invited to join ${org.name} on Trawl`,
            text: `${greeting}You are invited to join ${org.name} on Trawl.\n\n` +
              `Accept the invitation (the link works once, until ${expiresAt.toISOString()}):\n${tokens.link(INVITATION_LINK_PATH, token)}\n\n` +
              `If you did not expect this invitation, ignore this mail.\n`
          }).pipe(Effect.as(true), Effect.catch(() => Effect.succeed(false)))
          if (!sent) {
            yield* tokens.retireForSubject(row.id)
            yield* repo.discard(row.id)
            return yield* mailFailed
          }
          yield* audit.record(me, "invitation.create", row.id, { email: row.email, roleId: row.role_id, organizationId: org.id }, client)
          return toInvitation(row)
        }),
      list: (me, orgIdentityId, status, offset, limit) =>
        Effect.gen(function*() {
          const org = yield* organizationOf(me, orgIdentityId)
          const page = yield* repo.list(me.tenantId, org.id, status, offset, limit)
          return { total: page.total, items: page.items.map(toInvitation) }
        }),
      revoke: (me, orgIdentityId, invitationId, client) =>
        Effect.gen(function*() {
          const org = yield* organizationOf(me, orgIdentityId)
          const result = yield* repo.revoke(me.tenantId, org.id, invitationId)
          if (!result) return yield* notFound("invitation")
          const { row, changed } = result
          if (!changed && row.status !== "revoked") {
            return yield* fail(409, "invalid_invitation_state", `the invitation is ${row.status}; only a pending one can be revoked`)
          }
          if (changed) {
            yield* tokens.retireForSubject(row.id)
            yield* audit.record(me, "invitation.revoke", row.id, { email: row.email }, client)
          }
          return { revoked: true as const, revokedAt: iso(row.responded_at) ?? new Date().toISOString(), id: row.id }
        }),
      respond: (me, token, accept, client) =>
        Effect.gen(function*() {
          yield* refuseOnBehalf(me)
          const found = yield* invitationOfToken(token)
          // redeem tells an expired token (400 token_expired) from an unknown or used one (400 invalid_token).
          if (!found) return yield* tokens.redeem("invitation", token).pipe(Effect.andThen(fail(400, "invalid_token", "the token's invitation no longer exists")))
          const { invitation } = found
          const profile = yield* identities.profile(me.tenantId, me.identityId)
          const mine = (profile?.emails ?? []).some((e) => e.email.toLowerCase() === invitation.email.toLowerCase())
          if (!mine) return yield* fail(403, "forbidden", "this invitation was sent to an e-mail address that is not one of the caller's")
          // An identity belongs to one tenant: it joins only an organization of its own tenant (docs/invitations.md).
          if (accept && invitation.tenant_id !== me.tenantId) {
            return yield* fail(409, "invitation_other_tenant", "this invitation is to another tenant; an identity belongs to one tenant only. Decline it, or register another identity with another e-mail address")
          }
          const result = yield* repo.respond(invitation.id, { accept, identityId: me.identityId }, tokens.redeem("invitation", token))
          if (result === "not_pending") return yield* fail(409, "invalid_invitation_state", "the invitation is no longer pending")
          if (result === "role_missing") return yield* fail(409, "invalid_invitation_state", "the invitation's role no longer exists")
          // The identity's sessions act with its new role at once, on every node.
          if (accept) yield* sessionAuth.invalidate({ identityId: me.identityId })
          const action = accept ? "invitation.accept" : "invitation.decline"
          const data = { email: invitation.email, ...(accept ? { roleId: invitation.role_id } : {}) }
          // (Never on behalf: the invitee answers for itself, so `me` is its own identity.)
          if (invitation.tenant_id === me.tenantId) yield* audit.record(me, action, invitation.id, data, client)
          else {
            // The inviting tenant's log names the invitee only when it is one of its own: another tenant's
            // identity, its tenant and address stay unknown to it (a decline is all it learns). The
            // invitee's own tenant records the decline in its log.
            yield* audit.write({ tenantId: invitation.tenant_id, actorId: null, ip: null, action, targetId: invitation.id, data })
            yield* audit.record(me, action, invitation.id, { email: invitation.email }, client)
          }
          return toInvitation(result)
        }),
      register: (input, client) =>
        Effect.gen(function*() {
          const token = input.invitationToken
          if (token === undefined || !/^[A-Za-z0-9_-]{43}$/.test(token)) return yield* registrationDisabled
          const invitation = yield* tokens.peek("invitation", token)
          const delegation = invitation ? undefined : yield* tokens.peek("delegation", token)
          const row: AuthTokenRow | undefined = invitation ?? delegation
          if (!row?.subject_id || !row.tenant_id || !row.email) return yield* registrationDisabled
          if (row.email.toLowerCase() !== input.email.trim().toLowerCase()) return yield* registrationDisabled
          yield* refuseWeakPassword(input.password, input.email, "password")
          const subject: RegistrationSubject = invitation ? { kind: "invitation", id: row.subject_id } : { kind: "delegation", id: row.subject_id }
          // The tenant's entity counts its identities and creates this one, one registration at a time.
          const registered = yield* registrations.register(row.tenant_id, {
            subject,
            tokenHash: tokens.hashOf(row.purpose, token),
            email: row.email,
            passwordHash: yield* hashPassword(input.password),
            firstName: input.firstName ?? null,
            lastName: input.lastName ?? null
          }).pipe(
            Effect.catchTags({
              IdentityLimit: (e) => fail(429, "quota_exceeded", `the tenant already has ${e.limit} identities (iam.identities.total)`),
              RegistrationEmailInUse: () =>
                fail(409, "email_in_use", "this e-mail address belongs to an identity already; log in instead", {
                  details: [{ path: "email", code: "taken", message: "already registered" }]
                }),
              RegistrationRefused: () => registrationDisabled
            })
          )
          const identity = { id: registered.identityId, tenant_id: row.tenant_id }
          const session = yield* sessions.open(identity, client, false)
          yield* audit.write({
            tenantId: row.tenant_id,
            actorId: identity.id,
            ip: client.ip,
            action: "registration",
            targetId: identity.id,
            data: { via: subject.kind, subjectId: subject.id, roleId: registered.roleId, email: row.email, sessionId: session.id }
          })
          if (subject.kind === "invitation") {
            yield* audit.write({
              tenantId: row.tenant_id,
              actorId: identity.id,
              ip: client.ip,
              action: "invitation.accept",
              targetId: subject.id,
              data: { email: row.email, roleId: registered.roleId, registered: true }
            })
          }
          return session
        })
    })
  })
)
