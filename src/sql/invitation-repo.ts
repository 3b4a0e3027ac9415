import { Clock, Context, Effect, Layer } from "effect"
import { SqlClient, SqlError } from "effect/sql"
import { newId } from "../ids.ts"
import type { InvitationStatus } from "../schema/invitation.ts"
import { pageWithTotal } from "./page-with-total.ts"
import { lockLiveRole } from "./role-repo.ts"
import { lockTenantRow } from "./tenant-lock.ts"
import { isUniqueViolation } from "./tenant-repo.ts"
import { pageOfRows } from "./memory-search.ts"

export interface InvitationRow {
  readonly id: string
  readonly tenant_id: string
  readonly organization_id: string
  readonly email: string
  readonly role_id: string
  readonly first_name: string | null
  readonly last_name: string | null
  readonly status: InvitationStatus
  /** The invitee: the tenant's identity with the address, or the id the one registering with it gets. */
  readonly user_id: string
  readonly invited_by: string | null
  readonly invited_at: Date
  readonly invitation_expires_at: Date | null
  readonly responded_at: Date | null
}

export interface OrganizationRow {
  readonly id: string
  readonly tenant_id: string
  readonly identity_id: string
  readonly name: string
}

export interface NewInvitation {
  readonly tenantId: string
  readonly organizationId: string
  readonly email: string
  readonly roleId: string
  readonly firstName: string | null
  readonly lastName: string | null
  readonly invitedBy: string
  readonly expiresAt: Date
}

/** What a registration stands on: a pending invitation, or a pending delegation to an e-mail address. */
export type RegistrationSubject =
  | { readonly kind: "invitation"; readonly id: string }
  | { readonly kind: "delegation"; readonly id: string }

export interface NewRegistration {
  readonly tenantId: string
  readonly subject: RegistrationSubject
  readonly email: string
  readonly passwordHash: string
  readonly firstName: string | null
  readonly lastName: string | null
  /** The tenant's `iam.identities.total`. */
  readonly identitiesLimit: number
}

export interface Registered {
  readonly identity: { readonly id: string; readonly tenant_id: string }
  readonly roleId: string
  readonly organizationId: string
}

export interface InvitationRepoShape {
  /** The organization of the tenant whose identity is `orgIdentityId` (or, as the tenant bootstrap names it, whose id it is). */
  readonly organizationByIdentity: (tenantId: string, orgIdentityId: string) => Effect.Effect<OrganizationRow | undefined>
  /**
   * Inserts a pending invitation, holding its role against deletion. `member`: the e-mail is one of
   * an identity of the tenant that has access to the organization; `pending_exists`: the e-mail
   * has a pending invitation there already (one past its expiry is revoked to make way).
   */
  readonly insert: (invitation: NewInvitation) => Effect.Effect<InvitationRow | "member" | "pending_exists" | "role_missing">
  /** Deletes an invitation whose mail could not be sent: it never reached anyone. */
  readonly discard: (id: string) => Effect.Effect<void>
  readonly list: (
    tenantId: string,
    organizationId: string,
    status: InvitationStatus | undefined,
    offset: number,
    limit: number
  ) => Effect.Effect<{ items: ReadonlyArray<InvitationRow>; total: number }>
  /** An invitation by id, whatever its tenant (the caller has proved it holds its token). */
  readonly byId: (id: string) => Effect.Effect<InvitationRow | undefined>
  /** Revokes a pending invitation; `changed` false when it was not pending (the row as it is). */
  readonly revoke: (tenantId: string, organizationId: string, id: string) => Effect.Effect<{ row: InvitationRow; changed: boolean } | undefined>
  /**
   * Answers a pending invitation, with its row locked: `useToken` runs inside the transaction, so
   * a failed answer leaves the token usable. Accepting gives `identityId` the invitation's role
   * (its access to the organization and its default role); `userId` is set only to an identity of
   * the invitation's tenant.
   */
  readonly respond: <E>(
    id: string,
    answer: { readonly accept: true; readonly identityId: string } | { readonly accept: false; readonly identityId: string },
    useToken: Effect.Effect<unknown, E>
  ) => Effect.Effect<InvitationRow | "not_pending" | "role_missing", E>
  /**
   * Creates a person from a registration unless the tenant has `identitiesLimit` persons already
   * (the tenant's entity calls it, one registration at a time: docs/invitations.md, "Identity
   * quota"): the identity (default role: the
   * invitation's, or the tenant's system `read` role for a delegation), its verified primary
   * e-mail, its access to the organization; the invitation turns `active`, the delegation gets its
   * delegate. `useToken` runs inside the transaction: a refused registration leaves the token usable.
   */
  readonly register: <E>(
    input: NewRegistration,
    useToken: Effect.Effect<unknown, E>
  ) => Effect.Effect<Registered | "quota_exceeded" | "email_in_use" | "not_pending" | "role_missing", E>
}

export class InvitationRepo extends Context.Service<InvitationRepo, InvitationRepoShape>()("trawl/InvitationRepo") {}

const columns = `id, tenant_id, organization_id, email, role_id, first_name, last_name, status, user_id, invited_by,
  invited_at, invitation_expires_at, responded_at`

/** Only database faults are looked at; what a callback refused goes to the caller as it is. */
const isSqlError = (e: unknown): e is SqlError.SqlError => e instanceof SqlError.SqlError

export const InvitationRepoLive = Layer.effect(
  InvitationRepo,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const cols = sql.literal(columns)

    /** Whether the e-mail is one of a person of the tenant with access to the organization. */
    const isMember = (tenantId: string, organizationId: string, email: string) =>
      sql`
        SELECT 1 FROM identity_emails e
        JOIN identities i ON i.id = e.identity_id
        JOIN identity_accesses a ON a.identity_id = i.id AND a.organization_id = ${organizationId} AND a.status = 'active'
        WHERE lower(e.email) = lower(${email}) AND i.tenant_id = ${tenantId} AND i.type = 'user'`.pipe(Effect.map((rows) => rows.length > 0))

    const lockPending = (id: string) =>
      sql<InvitationRow>`
        SELECT ${cols} FROM invitations
        WHERE id = ${id} AND status = 'pending' AND (invitation_expires_at IS NULL OR invitation_expires_at > now())
        FOR UPDATE`.pipe(Effect.map((rows) => rows[0]))

    const grantAccess = (tenantId: string, organizationId: string, identityId: string, roleId: string) =>
      sql`
        INSERT INTO identity_accesses (id, tenant_id, organization_id, identity_id, role_id, status)
        VALUES (${newId("acc")}, ${tenantId}, ${organizationId}, ${identityId}, ${roleId}, 'active')
        ON CONFLICT (organization_id, identity_id) DO UPDATE SET role_id = EXCLUDED.role_id, status = 'active'`

    return InvitationRepo.of({
      organizationByIdentity: (tenantId, orgIdentityId) =>
        sql<OrganizationRow>`
          SELECT id, tenant_id, identity_id, name FROM organizations
          WHERE (identity_id = ${orgIdentityId} OR id = ${orgIdentityId}) AND tenant_id = ${tenantId}`.pipe(Effect.orDie, Effect.map((rows) => rows[0])),
      insert: (inv) =>
        sql.withTransaction(Effect.gen(function*() {
          if (!(yield* lockLiveRole(sql, inv.tenantId, inv.roleId))) return "role_missing" as const
          if (yield* isMember(inv.tenantId, inv.organizationId, inv.email)) return "member" as const
          // A pending invitation nobody answered in time no longer holds the address.
          yield* sql`
            UPDATE invitations SET status = 'revoked', updated_at = now()
            WHERE organization_id = ${inv.organizationId} AND lower(email) = lower(${inv.email}) AND status = 'pending'
              AND invitation_expires_at <= now()`
          // The invitee: the tenant's identity with the address, else the id its registration will give.
          const [known] = yield* sql<{ identity_id: string }>`
            SELECT identity_id FROM identity_emails WHERE tenant_id = ${inv.tenantId} AND lower(email) = lower(${inv.email}) LIMIT 1`
          const [row] = yield* sql<InvitationRow>`
            INSERT INTO invitations (id, tenant_id, organization_id, email, role_id, first_name, last_name, invited_by, invitation_expires_at, user_id)
            VALUES (${newId("inv")}, ${inv.tenantId}, ${inv.organizationId}, ${inv.email}, ${inv.roleId}, ${inv.firstName},
                    ${inv.lastName}, ${inv.invitedBy}, ${inv.expiresAt}, ${known?.identity_id ?? newId("idt")})
            RETURNING ${cols}`
          return row!
        })).pipe(Effect.catch((e) => isUniqueViolation(e) ? Effect.succeed("pending_exists" as const) : Effect.die(e))),
      discard: (id) => sql`DELETE FROM invitations WHERE id = ${id}`.pipe(Effect.orDie, Effect.asVoid),
      list: (tenantId, organizationId, status, offset, limit) => {
        const where = sql.and([
          sql`tenant_id = ${tenantId}`,
          sql`organization_id = ${organizationId}`,
          ...(status !== undefined ? [sql`status = ${status}`] : [])
        ])
        return pageWithTotal<InvitationRow>(
          sql,
          sql`SELECT ${cols} FROM invitations WHERE ${where} ORDER BY invited_at DESC, id DESC OFFSET ${offset} LIMIT ${limit}`,
          sql`SELECT count(*) FROM invitations WHERE ${where}`
        )
      },
      byId: (id) => sql<InvitationRow>`SELECT ${cols} FROM invitations WHERE id = ${id}`.pipe(Effect.orDie, Effect.map((rows) => rows[0])),
      revoke: (tenantId, organizationId, id) =>
        Effect.gen(function*() {
          const [revoked] = yield* sql<InvitationRow>`
            UPDATE invitations SET status = 'revoked', responded_at = now(), updated_at = now()
            WHERE id = ${id} AND tenant_id = ${tenantId} AND organization_id = ${organizationId} AND status = 'pending'
            RETURNING ${cols}`
          if (revoked) return { row: revoked, changed: true }
          const [current] = yield* sql<InvitationRow>`
            SELECT ${cols} FROM invitations WHERE id = ${id} AND tenant_id = ${tenantId} AND organization_id = ${organizationId}`
          return current && { row: current, changed: false }
        }).pipe(Effect.orDie),
      respond: <E>(
        id: string,
        answer: { readonly accept: boolean; readonly identityId: string },
        useToken: Effect.Effect<unknown, E>
      ) =>
        sql.withTransaction(Effect.gen(function*() {
          const invitation = yield* lockPending(id)
          if (!invitation) return "not_pending" as const
          yield* useToken
          if (answer.accept) {
            if (!(yield* lockLiveRole(sql, invitation.tenant_id, invitation.role_id))) return "role_missing" as const
            yield* grantAccess(invitation.tenant_id, invitation.organization_id, answer.identityId, invitation.role_id)
            yield* sql`UPDATE identities SET default_role_id = ${invitation.role_id}, updated_at = now() WHERE id = ${answer.identityId}`
          }
          // An identity of another tenant (which may only decline) is not named to this one.
          const [row] = yield* sql<InvitationRow>`
            UPDATE invitations SET status = ${answer.accept ? "active" : "declined"},
                                   user_id = COALESCE((SELECT i.id FROM identities i WHERE i.id = ${answer.identityId} AND i.tenant_id = invitations.tenant_id), user_id),
                                   responded_at = now(), updated_at = now()
            WHERE id = ${id} RETURNING ${cols}`
          return row!
        })).pipe(Effect.catchIf(isSqlError, Effect.die)),
      register: <E>(input: NewRegistration, useToken: Effect.Effect<unknown, E>) =>
        sql.withTransaction(Effect.gen(function*() {
          // A second fence behind the tenant's entity: while a shard moves, its old and new owner
          // can each be in a registration; the lock makes the later count see the earlier insert
          // (docs/invitations.md, "Identity quota").
          yield* lockTenantRow(sql, input.tenantId)
          const [count] = yield* sql<{ n: string }>`
            SELECT count(*) AS n FROM identities WHERE tenant_id = ${input.tenantId} AND type = 'user'`
          if (Number(count!.n) >= input.identitiesLimit) return "quota_exceeded" as const

          let roleId: string
          let organizationId: string
          /** The id the invitation or delegation named the person by. */
          let reservedId: string | undefined
          let { firstName, lastName } = input
          if (input.subject.kind === "invitation") {
            const invitation = yield* lockPending(input.subject.id)
            if (!invitation || invitation.tenant_id !== input.tenantId) return "not_pending" as const
            roleId = invitation.role_id
            organizationId = invitation.organization_id
            reservedId = invitation.user_id
            // The names the inviter gave, unless the person gives their own.
            firstName ??= invitation.first_name
            lastName ??= invitation.last_name
          } else {
            // Pending for someone invited by e-mail who has not registered yet.
            const [delegation] = yield* sql<{ id: string; delegate_id: string }>`
              SELECT id, delegate_id FROM delegations d
              WHERE id = ${input.subject.id} AND tenant_id = ${input.tenantId} AND status = 'pending'
                AND delegate_email IS NOT NULL AND NOT EXISTS (SELECT 1 FROM identities i WHERE i.id = d.delegate_id)
                AND expires_at > now()
              FOR UPDATE`
            if (!delegation) return "not_pending" as const
            reservedId = delegation.delegate_id
            const [read] = yield* sql<{ id: string }>`
              SELECT id FROM roles WHERE tenant_id = ${input.tenantId} AND name = 'read' AND is_system AND deleted_at IS NULL`
            const [org] = yield* sql<{ id: string }>`
              SELECT id FROM organizations WHERE tenant_id = ${input.tenantId} ORDER BY created_at, id LIMIT 1`
            if (!read || !org) return "role_missing" as const
            roleId = read.id
            organizationId = org.id
          }
          if (!(yield* lockLiveRole(sql, input.tenantId, roleId))) return "role_missing" as const
          const taken = yield* sql`SELECT 1 FROM identity_emails WHERE lower(email) = lower(${input.email})`
          if (taken.length > 0) return "email_in_use" as const

          yield* useToken
          // The person gets the id the invitation or delegation named them by.
          const [existing] = reservedId !== undefined ? yield* sql`SELECT 1 FROM identities WHERE id = ${reservedId}` : []
          const identityId = reservedId !== undefined && existing === undefined ? reservedId : newId("idt")
          const displayName = [firstName, lastName].filter((n) => n).join(" ") || input.email.split("@")[0]!
          yield* sql`
            INSERT INTO identities (id, tenant_id, type, display_name, first_name, last_name, status, password_hash,
                                    password_changed_at, default_role_id)
            VALUES (${identityId}, ${input.tenantId}, 'user', ${displayName}, ${firstName}, ${lastName}, 'active',
                    ${input.passwordHash}, now(), ${roleId})`
          // Verified at once: the mailed token proved the address.
          yield* sql`
            INSERT INTO identity_emails (id, identity_id, tenant_id, email, is_primary, verified_at)
            VALUES (${newId("eml")}, ${identityId}, ${input.tenantId}, ${input.email}, true, now())`
          yield* grantAccess(input.tenantId, organizationId, identityId, roleId)
          if (input.subject.kind === "invitation") {
            yield* sql`
              UPDATE invitations SET status = 'active', user_id = ${identityId}, responded_at = now(), updated_at = now()
              WHERE id = ${input.subject.id}`
          } else {
            // The delegate now exists; the delegation stays pending until they accept it.
            yield* sql`UPDATE delegations SET delegate_id = ${identityId} WHERE id = ${input.subject.id}`
          }
          return { identity: { id: identityId, tenant_id: input.tenantId }, roleId, organizationId }
        })).pipe(
          Effect.catchIf(isSqlError, (e) => isUniqueViolation(e) ? Effect.succeed("email_in_use" as const) : Effect.die(e))
        )
    })
  })
)

/** A person as `makeInvitationRepoTest` sees one: an identity of a tenant, its addresses and accesses. */
export interface TestPerson {
  readonly identityId: string
  readonly tenantId: string
  readonly email: string
  /** Organizations the person has active access to, with the role of each. */
  readonly accesses: Map<string, string>
  defaultRoleId: string | null
  readonly firstName?: string | null
  readonly lastName?: string | null
}

/**
 * What a `makeInvitationRepoTest` starts with. The arrays are shared with the test: it reads what
 * registrations and answers wrote (people, their accesses and default roles) and may delete a
 * role (`deleted`) or end a delegation meanwhile.
 */
export interface InvitationRepoSeed {
  readonly organizations?: ReadonlyArray<OrganizationRow>
  readonly roles?: Array<{ readonly id: string; readonly tenantId: string; readonly name: string; readonly isSystem?: boolean; deleted?: boolean }>
  readonly people?: Array<TestPerson>
  readonly delegations?: Array<{ readonly id: string; readonly tenantId: string; status: string; delegateId: string; readonly delegateEmail: string | null; readonly expiresAt: Date }>
}

/**
 * Invitations in memory, for unit tests of the services above, with the rows the live statements
 * join (organizations, roles, people, delegations) from the seed; times come from Effect's Clock.
 * As in the live layer's transactions, `useToken` runs before anything is written, so a failed one
 * leaves everything as it was.
 */
export const makeInvitationRepoTest = (seed: InvitationRepoSeed = {}): Layer.Layer<InvitationRepo> =>
  Layer.sync(InvitationRepo, () => {
    type Row = { -readonly [K in keyof InvitationRow]: InvitationRow[K] }
    const rows: Array<Row> = []
    const organizations = seed.organizations ?? []
    const roles = seed.roles ?? []
    const people = seed.people ?? []
    const delegations = seed.delegations ?? []
    const now = Clock.currentTimeMillis
    const view = (r: Row): InvitationRow => ({ ...r })
    const same = (a: string, b: string) => a.toLowerCase() === b.toLowerCase()
    const liveRole = (tenantId: string, roleId: string) => roles.some((r) => r.id === roleId && r.tenantId === tenantId && !r.deleted)
    const pending = (id: string, at: number) =>
      rows.find((r) => r.id === id && r.status === "pending" && (r.invitation_expires_at === null || r.invitation_expires_at.getTime() > at))
    const grantAccess = (organizationId: string, identityId: string, roleId: string) => {
      people.find((p) => p.identityId === identityId)?.accesses.set(organizationId, roleId)
    }
    return InvitationRepo.of({
      organizationByIdentity: (tenantId, orgIdentityId) =>
        Effect.sync(() => organizations.find((o) => (o.identity_id === orgIdentityId || o.id === orgIdentityId) && o.tenant_id === tenantId)),
      insert: (inv) =>
        Effect.map(now, (at) => {
          if (!liveRole(inv.tenantId, inv.roleId)) return "role_missing" as const
          if (people.some((p) => p.tenantId === inv.tenantId && same(p.email, inv.email) && p.accesses.has(inv.organizationId))) return "member" as const
          const open = rows.filter((r) => r.organization_id === inv.organizationId && same(r.email, inv.email) && r.status === "pending")
          for (const r of open) if (r.invitation_expires_at !== null && r.invitation_expires_at.getTime() <= at) r.status = "revoked"
          if (open.some((r) => r.status === "pending")) return "pending_exists" as const
          const row: Row = {
            id: newId("inv"),
            tenant_id: inv.tenantId,
            organization_id: inv.organizationId,
            email: inv.email,
            role_id: inv.roleId,
            first_name: inv.firstName,
            last_name: inv.lastName,
            status: "pending",
            user_id: people.find((p) => p.tenantId === inv.tenantId && same(p.email, inv.email))?.identityId ?? newId("idt"),
            invited_by: inv.invitedBy,
            invited_at: new Date(at),
            invitation_expires_at: inv.expiresAt,
            responded_at: null
          }
          rows.push(row)
          return view(row)
        }),
      discard: (id) => Effect.sync(() => void rows.splice(0, rows.length, ...rows.filter((r) => r.id !== id))),
      list: (tenantId, organizationId, status, offset, limit) =>
        Effect.sync(() => {
          const all = rows.filter((r) => r.tenant_id === tenantId && r.organization_id === organizationId && (status === undefined || r.status === status))
            .sort((a, b) => b.invited_at.getTime() - a.invited_at.getTime() || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0))
          return pageOfRows(all, offset, limit, view)
        }),
      byId: (id) => Effect.sync(() => {
        const r = rows.find((x) => x.id === id)
        return r && view(r)
      }),
      revoke: (tenantId, organizationId, id) =>
        Effect.map(now, (at) => {
          const r = rows.find((x) => x.id === id && x.tenant_id === tenantId && x.organization_id === organizationId)
          if (!r) return undefined
          if (r.status !== "pending") return { row: view(r), changed: false }
          Object.assign(r, { status: "revoked", responded_at: new Date(at) })
          return { row: view(r), changed: true }
        }),
      respond: (id, answer, useToken) =>
        Effect.gen(function*() {
          const at = yield* now
          const invitation = pending(id, at)
          if (!invitation) return "not_pending" as const
          if (answer.accept && !liveRole(invitation.tenant_id, invitation.role_id)) {
            // The live layer's transaction rolls its redemption of the token back; here it is never made.
            return "role_missing" as const
          }
          yield* useToken
          if (answer.accept) {
            grantAccess(invitation.organization_id, answer.identityId, invitation.role_id)
            const person = people.find((p) => p.identityId === answer.identityId)
            if (person) person.defaultRoleId = invitation.role_id
          }
          // An identity of another tenant (which may only decline) is not named to this one.
          const ownTenant = people.some((p) => p.identityId === answer.identityId && p.tenantId === invitation.tenant_id)
          Object.assign(invitation, { status: answer.accept ? "active" : "declined", user_id: ownTenant ? answer.identityId : invitation.user_id, responded_at: new Date(at) })
          return view(invitation)
        }),
      register: (input, useToken) =>
        Effect.gen(function*() {
          const at = yield* now
          if (people.filter((p) => p.tenantId === input.tenantId).length >= input.identitiesLimit) return "quota_exceeded" as const
          let roleId: string
          let organizationId: string
          let { firstName, lastName } = input
          const invitation = input.subject.kind === "invitation" ? pending(input.subject.id, at) : undefined
          if (input.subject.kind === "invitation") {
            if (!invitation || invitation.tenant_id !== input.tenantId) return "not_pending" as const
            roleId = invitation.role_id
            organizationId = invitation.organization_id
            firstName ??= invitation.first_name
            lastName ??= invitation.last_name
          } else {
            const id = input.subject.id
            const delegation = delegations.find((d) =>
              d.id === id && d.tenantId === input.tenantId && d.status === "pending" && d.delegateEmail !== null &&
              !people.some((p) => p.identityId === d.delegateId) && d.expiresAt.getTime() > at
            )
            if (!delegation) return "not_pending" as const
            const read = roles.find((r) => r.tenantId === input.tenantId && r.name === "read" && r.isSystem && !r.deleted)
            const org = organizations.find((o) => o.tenant_id === input.tenantId)
            if (!read || !org) return "role_missing" as const
            roleId = read.id
            organizationId = org.id
          }
          if (!liveRole(input.tenantId, roleId)) return "role_missing" as const
          if (people.some((p) => same(p.email, input.email))) return "email_in_use" as const
          yield* useToken
          const identityId = invitation !== undefined && !people.some((p) => p.identityId === invitation.user_id) ? invitation.user_id : newId("idt")
          people.push({
            identityId, tenantId: input.tenantId, email: input.email, accesses: new Map([[organizationId, roleId]]), defaultRoleId: roleId, firstName, lastName
          })
          if (invitation) Object.assign(invitation, { status: "active", user_id: identityId, responded_at: new Date(at) })
          else {
            const delegation = delegations.find((d) => d.id === input.subject.id)!
            delegation.delegateId = identityId
          }
          return { identity: { id: identityId, tenant_id: input.tenantId }, roleId, organizationId }
        })
    })
  })
