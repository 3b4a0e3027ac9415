import { Clock, Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { newId } from "../ids.ts"
import type { DelegationStatus } from "../schema/delegation.ts"
import { pageWithTotal } from "./page-with-total.ts"
import { pageOfRows } from "./memory-search.ts"

export interface DelegationRow {
  readonly id: string
  readonly tenant_id: string
  readonly delegator_id: string
  /** The delegate; one invited by e-mail is named by the id its registration will give. */
  readonly delegate_id: string
  readonly delegate_email: string | null
  readonly reason: string
  /** As read: `expired` for a pending or active one past `expires_at`. */
  readonly status: DelegationStatus
  readonly expires_at: Date
  readonly invited_at: Date
  readonly responded_at: Date | null
  readonly revoked_at: Date | null
  readonly created_at: Date
  readonly delegator_display_name: string | null
  readonly delegate_display_name: string | null
}

export interface NewDelegation {
  readonly tenantId: string
  readonly delegatorId: string
  /** The delegate, or the id one invited by e-mail (`delegateEmail`) gets when it registers. */
  readonly delegateId: string
  readonly delegateEmail: string | null
  readonly reason: string
  readonly expiresAt: Date
}

/** Which side of a delegation the caller is on. */
export type Party = "delegator" | "delegate"

/** The permissions a delegate acts with on behalf of a delegator: the delegator's own. */
export interface Grant {
  readonly delegationId: string
  readonly roleId: string
  readonly permissions: ReadonlyArray<string>
}

export interface DelegationRepoShape {
  /** An active person of the tenant, by id. */
  readonly personOfTenant: (tenantId: string, identityId: string) => Effect.Effect<{ id: string } | undefined>
  /** The permissions of the default role of an identity of the tenant (empty when it has none). */
  readonly rolePermissions: (tenantId: string, identityId: string) => Effect.Effect<ReadonlyArray<string>>
  /** The person of the tenant with this e-mail address (any letter case). */
  readonly personByEmail: (tenantId: string, email: string) => Effect.Effect<{ id: string } | undefined>
  /**
   * Inserts a pending delegation unless the delegator already has a pending or active, unexpired
   * one to the same delegate (`exists`); one delegator's creations queue on its identity's row.
   */
  readonly insert: (delegation: NewDelegation) => Effect.Effect<DelegationRow | "exists">
  /** Deletes a delegation whose registration mail could not be sent. */
  readonly discard: (id: string) => Effect.Effect<void>
  readonly list: (
    tenantId: string,
    party: Party,
    identityId: string,
    status: DelegationStatus | undefined,
    offset: number,
    limit: number
  ) => Effect.Effect<{ items: ReadonlyArray<DelegationRow>; total: number }>
  /**
   * Moves a delegation the caller is `party` of from one of `from` (unexpired) to `to`, setting
   * `stamp` to now. `not_found` when the caller is not that party of it; else the status it has.
   */
  readonly transition: (input: {
    readonly tenantId: string
    readonly id: string
    readonly party: Party
    readonly identityId: string
    readonly from: ReadonlyArray<"pending" | "active">
    readonly to: "active" | "declined" | "renounced" | "revoked"
    readonly stamp: "responded_at" | "revoked_at"
  }) => Effect.Effect<DelegationRow | "not_found" | { readonly current: DelegationStatus }>
  /** What `delegateId` may act with on behalf of `delegatorId` now, if an active unexpired delegation allows it. */
  readonly activeGrant: (tenantId: string, delegatorId: string, delegateId: string) => Effect.Effect<Grant | undefined>
}

export class DelegationRepo extends Context.Service<DelegationRepo, DelegationRepoShape>()("trawl/DelegationRepo") {}

const displayName = (alias: string) =>
  `CASE WHEN ${alias}.id IS NULL THEN NULL ELSE COALESCE(NULLIF(concat_ws(' ', ${alias}.first_name, ${alias}.last_name), ''), ${alias}.display_name) END`

const statusRead = `CASE WHEN d.status IN ('pending', 'active') AND d.expires_at <= now() THEN 'expired' ELSE d.status END`

const selectFrom = `
  SELECT d.id, d.tenant_id, d.delegator_id, d.delegate_id, d.delegate_email, d.reason, ${statusRead} AS status,
         d.expires_at, d.invited_at, d.responded_at, d.revoked_at, d.created_at,
         ${displayName("gr")} AS delegator_display_name, ${displayName("ge")} AS delegate_display_name
  FROM delegations d
  JOIN identities gr ON gr.id = d.delegator_id
  LEFT JOIN identities ge ON ge.id = d.delegate_id`

export const DelegationRepoLive = Layer.effect(
  DelegationRepo,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const select = sql.literal(selectFrom)
    const status = sql.literal(statusRead)
    const byId = (id: string) => sql<DelegationRow>`${select} WHERE d.id = ${id}`.pipe(Effect.map((rows) => rows[0]))
    const partyColumn = (party: Party) => sql.literal(party === "delegator" ? "d.delegator_id" : "d.delegate_id")

    return DelegationRepo.of({
      personOfTenant: (tenantId, identityId) =>
        sql<{ id: string }>`
          SELECT id FROM identities WHERE id = ${identityId} AND tenant_id = ${tenantId} AND type = 'user' AND status = 'active'`.pipe(
          Effect.orDie,
          Effect.map((rows) => rows[0])
        ),
      rolePermissions: (tenantId, identityId) =>
        sql<{ permissions: ReadonlyArray<string> }>`
          SELECT r.permissions FROM identities i JOIN roles r ON r.id = i.default_role_id
          WHERE i.id = ${identityId} AND i.tenant_id = ${tenantId}`.pipe(
          Effect.orDie,
          Effect.map(([row]) => row?.permissions ?? [])
        ),
      personByEmail: (tenantId, email) =>
        sql<{ id: string }>`
          SELECT i.id FROM identity_emails e JOIN identities i ON i.id = e.identity_id
          WHERE lower(e.email) = lower(${email}) AND i.tenant_id = ${tenantId} AND i.type = 'user'`.pipe(
          Effect.orDie,
          Effect.map((rows) => rows[0])
        ),
      insert: (d) =>
        sql.withTransaction(Effect.gen(function*() {
          yield* sql`SELECT 1 FROM identities WHERE id = ${d.delegatorId} FOR NO KEY UPDATE`
          const same = d.delegateEmail === null ? sql`delegate_id = ${d.delegateId}` : sql`lower(delegate_email) = lower(${d.delegateEmail})`
          const existing = yield* sql`
            SELECT 1 FROM delegations
            WHERE delegator_id = ${d.delegatorId} AND ${same} AND status IN ('pending', 'active') AND expires_at > now()`
          if (existing.length > 0) return "exists" as const
          const id = newId("dlg")
          yield* sql`
            INSERT INTO delegations (id, tenant_id, delegator_id, delegate_id, delegate_email, reason, expires_at)
            VALUES (${id}, ${d.tenantId}, ${d.delegatorId}, ${d.delegateId}, ${d.delegateEmail}, ${d.reason}, ${d.expiresAt})`
          return (yield* byId(id))!
        })).pipe(Effect.orDie),
      discard: (id) => sql`DELETE FROM delegations WHERE id = ${id}`.pipe(Effect.orDie, Effect.asVoid),
      list: (tenantId, party, identityId, wanted, offset, limit) => {
        const where = sql.and([
          sql`d.tenant_id = ${tenantId}`,
          sql`${partyColumn(party)} = ${identityId}`,
          ...(wanted !== undefined ? [sql`${status} = ${wanted}`] : [])
        ])
        return pageWithTotal<DelegationRow>(
          sql,
          sql`${select} WHERE ${where} ORDER BY d.created_at DESC, d.id DESC OFFSET ${offset} LIMIT ${limit}`,
          sql`SELECT count(*) FROM delegations d WHERE ${where}`
        )
      },
      transition: (t) =>
        Effect.gen(function*() {
          const stamp = sql.literal(t.stamp)
          const [moved] = yield* sql<{ id: string }>`
            UPDATE delegations d SET status = ${t.to}, ${stamp} = now()
            WHERE d.id = ${t.id} AND d.tenant_id = ${t.tenantId} AND ${partyColumn(t.party)} = ${t.identityId}
              AND d.status IN ${sql.in(t.from)} AND d.expires_at > now()
            RETURNING d.id`
          if (moved) return (yield* byId(moved.id))!
          const [current] = yield* sql<DelegationRow>`
            ${select} WHERE d.id = ${t.id} AND d.tenant_id = ${t.tenantId} AND ${partyColumn(t.party)} = ${t.identityId}`
          return current ? { current: current.status } : "not_found" as const
        }).pipe(Effect.orDie),
      activeGrant: (tenantId, delegatorId, delegateId) =>
        sql<{ id: string; role_id: string; permissions: ReadonlyArray<string> }>`
          SELECT d.id, i.default_role_id AS role_id, r.permissions
          FROM delegations d
          JOIN identities i ON i.id = d.delegator_id AND i.status = 'active'
          JOIN roles r ON r.id = i.default_role_id
          WHERE d.tenant_id = ${tenantId} AND d.delegator_id = ${delegatorId} AND d.delegate_id = ${delegateId}
            AND d.status = 'active' AND d.expires_at > now()
          ORDER BY d.created_at LIMIT 1`.pipe(
          Effect.orDie,
          Effect.map(([row]) => row && { delegationId: row.id, roleId: row.role_id, permissions: row.permissions })
        )
    })
  })
)

/** A person for `makeDelegationRepoTest`: an identity of a tenant, with its default role's permissions. */
export interface TestPerson {
  readonly id: string
  readonly tenantId: string
  readonly email: string
  readonly displayName?: string
  readonly roleId: string
  readonly permissions: ReadonlyArray<string>
}

/** Delegations in memory between `people`, for unit tests; expiry is read on Effect's Clock (a TestClock moves it). */
export const makeDelegationRepoTest = (people: ReadonlyArray<TestPerson>): Layer.Layer<DelegationRepo> =>
  Layer.sync(DelegationRepo, () => {
    type Row = { -readonly [K in keyof DelegationRow]: DelegationRow[K] }
    const rows: Array<Row> = []
    const now = Clock.currentTimeMillis
    const nameOf = (id: string | null) => (id === null ? null : people.find((p) => p.id === id)?.displayName ?? null)
    // As read: `expired` for a pending or active one past its end.
    const read = (r: Row, at: number): DelegationRow =>
      ({ ...r, status: (r.status === "pending" || r.status === "active") && r.expires_at.getTime() <= at ? "expired" : r.status })
    const partyOf = (r: Row, party: Party) => (party === "delegator" ? r.delegator_id : r.delegate_id)
    return DelegationRepo.of({
      personOfTenant: (tenantId, identityId) => Effect.sync(() => people.find((p) => p.id === identityId && p.tenantId === tenantId) && { id: identityId }),
      rolePermissions: (tenantId, identityId) =>
        Effect.sync(() => people.find((p) => p.id === identityId && p.tenantId === tenantId)?.permissions ?? []),
      personByEmail: (tenantId, email) =>
        Effect.sync(() => {
          const p = people.find((x) => x.tenantId === tenantId && x.email.toLowerCase() === email.toLowerCase())
          return p && { id: p.id }
        }),
      insert: (d) =>
        Effect.map(now, (at) => {
          const same = (r: Row) => d.delegateEmail === null ? r.delegate_id === d.delegateId : r.delegate_email?.toLowerCase() === d.delegateEmail.toLowerCase()
          if (rows.some((r) => r.delegator_id === d.delegatorId && same(r) && ["pending", "active"].includes(read(r, at).status))) return "exists" as const
          const row: Row = {
            id: newId("dlg"),
            tenant_id: d.tenantId,
            delegator_id: d.delegatorId,
            delegate_id: d.delegateId,
            delegate_email: d.delegateEmail,
            reason: d.reason,
            status: "pending",
            expires_at: d.expiresAt,
            invited_at: new Date(at),
            responded_at: null,
            revoked_at: null,
            created_at: new Date(at),
            delegator_display_name: nameOf(d.delegatorId),
            delegate_display_name: nameOf(d.delegateId)
          }
          rows.push(row)
          return read(row, at)
        }),
      discard: (id) =>
        Effect.sync(() => {
          const i = rows.findIndex((r) => r.id === id)
          if (i >= 0) rows.splice(i, 1)
        }),
      list: (tenantId, party, identityId, status, offset, limit) =>
        Effect.map(now, (at) => {
          const all = rows.filter((r) => r.tenant_id === tenantId && partyOf(r, party) === identityId)
            .map((r) => read(r, at))
            .filter((r) => status === undefined || r.status === status)
            .reverse()
          return pageOfRows(all, offset, limit, (d) => d)
        }),
      transition: (t) =>
        Effect.map(now, (at) => {
          const r = rows.find((x) => x.id === t.id && x.tenant_id === t.tenantId && partyOf(x, t.party) === t.identityId)
          if (!r) return "not_found" as const
          const current = read(r, at).status
          if (!(t.from as ReadonlyArray<string>).includes(current)) return { current }
          r.status = t.to
          r[t.stamp] = new Date(at)
          return read(r, at)
        }),
      activeGrant: (tenantId, delegatorId, delegateId) =>
        Effect.map(now, (at) => {
          const r = rows.find((x) =>
            x.tenant_id === tenantId && x.delegator_id === delegatorId && x.delegate_id === delegateId && read(x, at).status === "active"
          )
          const delegator = people.find((p) => p.id === delegatorId)
          return r && delegator && { delegationId: r.id, roleId: delegator.roleId, permissions: delegator.permissions }
        })
    })
  })
