import { Clock, Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { QuotaKey } from "../billing/plans.ts"
import { newId } from "../ids.ts"
import { pageWithTotal } from "./page-with-total.ts"
import { isUniqueViolation } from "./tenant-repo.ts"
import { pageOfRows } from "./memory-search.ts"

/** Statuses as stored: a withdrawn request is `cancelled`. */
export type StoredQuotaRequestStatus = "pending" | "approved" | "rejected" | "cancelled"

export interface QuotaRequestRow {
  readonly id: string
  readonly tenant_id: string
  readonly quota_key: string
  readonly requested_by: string
  readonly requested_limit: number
  readonly reason: string
  readonly status: StoredQuotaRequestStatus
  readonly decided_by: string | null
  readonly decided_at: Date | null
  readonly decision_note: string | null
  readonly withdrawn_at: Date | null
  readonly created_at: Date
  readonly updated_at: Date
}

export interface QuotaRequestFilter {
  readonly tenantId?: string | undefined
  readonly status?: StoredQuotaRequestStatus | undefined
}

export interface QuotaRequestRepoShape {
  /** A new `pending` request, or the id of the `pending` one the tenant has on this key already. */
  readonly insert: (request: {
    tenantId: string
    quotaKey: QuotaKey
    requestedBy: string
    requestedLimit: number
    reason: string
  }) => Effect.Effect<QuotaRequestRow | { readonly pending: string }>
  /** A page of requests, newest first; `tenantId` unset lists every tenant's (super-admins). */
  readonly list: (filter: QuotaRequestFilter, offset: number, limit: number) => Effect.Effect<{ items: ReadonlyArray<QuotaRequestRow>; total: number }>
  /** Marks a pending request of the tenant withdrawn; else says whether it is absent or not pending. */
  readonly withdraw: (tenantId: string, id: string) => Effect.Effect<QuotaRequestRow | "not_found" | { notPending: QuotaRequestRow }>
  /**
   * Decides a pending request, in one transaction with its row locked: an approval also writes the
   * requested limit as the tenant's quota override, so a request is never approved without it.
   */
  readonly decide: (
    id: string,
    decision: { approve: boolean; decidedBy: string; note: string | null }
  ) => Effect.Effect<QuotaRequestRow | "not_found" | { notPending: QuotaRequestRow }>
  /** The primary e-mail address of an identity, if it has one. */
  readonly primaryEmail: (identityId: string) => Effect.Effect<string | undefined>
  /** The primary e-mail addresses of the tenant's owners (people whose role is the system owner role). */
  readonly ownerEmails: (tenantId: string) => Effect.Effect<ReadonlyArray<string>>
}

export class QuotaRequestRepo extends Context.Service<QuotaRequestRepo, QuotaRequestRepoShape>()("trawl/QuotaRequestRepo") {}

const columns =
  "id, tenant_id, quota_key, requested_by, requested_limit, reason, status, decided_by, decided_at, decision_note, withdrawn_at, created_at, updated_at"

export const QuotaRequestRepoLive = Layer.effect(
  QuotaRequestRepo,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const cols = sql.literal(columns)

    /** The request, or why it cannot move from `pending`: it is absent, or has moved already. */
    const notMoved = (where: ReturnType<typeof sql.and>) =>
      sql<QuotaRequestRow>`SELECT ${cols} FROM quota_requests WHERE ${where}`.pipe(
        Effect.map(([row]) => (row ? { notPending: row } : ("not_found" as const)))
      )

    return QuotaRequestRepo.of({
      insert: (r) =>
        sql<QuotaRequestRow>`
          INSERT INTO quota_requests (id, tenant_id, quota_key, requested_by, requested_limit, reason)
          VALUES (${newId("qreq")}, ${r.tenantId}, ${r.quotaKey}, ${r.requestedBy}, ${r.requestedLimit}, ${r.reason})
          RETURNING ${cols}`.pipe(
          Effect.map(([row]): QuotaRequestRow | { readonly pending: string } => row!),
          // The partial unique index refuses a second pending request, also when two race.
          Effect.catch((e) =>
            isUniqueViolation(e)
              ? sql<{ id: string }>`SELECT id FROM quota_requests WHERE tenant_id = ${r.tenantId} AND quota_key = ${r.quotaKey} AND status = 'pending'`.pipe(
                Effect.map(([p]) => ({ pending: p?.id ?? "" })),
                Effect.orDie
              )
              : Effect.die(e)
          )
        ),
      list: (filter, offset, limit) => {
        const where = sql.and([
          ...(filter.tenantId !== undefined ? [sql`tenant_id = ${filter.tenantId}`] : []),
          ...(filter.status !== undefined ? [sql`status = ${filter.status}`] : [])
        ])
        return pageWithTotal<QuotaRequestRow>(
          sql,
          sql`SELECT ${cols} FROM quota_requests WHERE ${where} ORDER BY created_at DESC, id DESC OFFSET ${offset} LIMIT ${limit}`,
          sql`SELECT count(*) FROM quota_requests WHERE ${where}`
        )
      },
      withdraw: (tenantId, id) =>
        Effect.gen(function*() {
          const [row] = yield* sql<QuotaRequestRow>`
            UPDATE quota_requests SET status = 'cancelled', withdrawn_at = now(), updated_at = now()
            WHERE id = ${id} AND tenant_id = ${tenantId} AND status = 'pending'
            RETURNING ${cols}`
          return row ?? (yield* notMoved(sql.and([sql`id = ${id}`, sql`tenant_id = ${tenantId}`])))
        }).pipe(Effect.orDie),
      decide: (id, decision) =>
        sql.withTransaction(Effect.gen(function*() {
          const [row] = yield* sql<QuotaRequestRow>`
            UPDATE quota_requests
            SET status = ${decision.approve ? "approved" : "rejected"}, decided_by = ${decision.decidedBy},
                decided_at = now(), decision_note = ${decision.note}, updated_at = now()
            WHERE id = ${id} AND status = 'pending'
            RETURNING ${cols}`
          if (!row) return yield* notMoved(sql.and([sql`id = ${id}`]))
          if (decision.approve) {
            // A new override only raises (the plan and its add-ons still win when they give more); a
            // super-admin's override in force keeps replacing the plan's limit, at the new value, or
            // at its own when that is higher already: an increase never lowers a limit.
            yield* sql`
              INSERT INTO quota_overrides (tenant_id, quota_key, quota_limit, raise_only) VALUES (${row.tenant_id}, ${row.quota_key}, ${row.requested_limit}, true)
              ON CONFLICT (tenant_id, quota_key) DO UPDATE SET quota_limit = GREATEST(quota_overrides.quota_limit, EXCLUDED.quota_limit), updated_at = now()`
          }
          return row
        })).pipe(Effect.orDie),
      ownerEmails: (tenantId) =>
        sql<{ email: string }>`
          SELECT e.email FROM identities i
          JOIN roles r ON r.id = i.default_role_id AND r.is_system AND r.name = 'owner'
          JOIN identity_emails e ON e.identity_id = i.id AND e.is_primary
          WHERE i.tenant_id = ${tenantId} AND i.type = 'user' AND i.status = 'active'
          ORDER BY i.created_at`.pipe(Effect.orDie, Effect.map((rows) => rows.map((r) => r.email))),
      primaryEmail: (identityId) =>
        sql<{ email: string }>`
          SELECT email FROM identity_emails WHERE identity_id = ${identityId} AND is_primary ORDER BY created_at LIMIT 1`.pipe(
          Effect.orDie,
          Effect.map((rows) => rows[0]?.email)
        )
    })
  })
)

/**
 * Quota requests in memory, for unit tests of the services above; times come from Effect's Clock.
 * `emails` are identities' primary addresses, `owners` the owners' addresses per tenant, and an
 * approval writes its limit into `overrides` (key `tenantId quotaKey`), as the live one writes the
 * tenant's quota override.
 */
export const makeQuotaRequestRepoTest = (seed: {
  readonly emails?: Readonly<Record<string, string>>
  readonly owners?: Readonly<Record<string, ReadonlyArray<string>>>
  readonly overrides?: Map<string, number>
} = {}): Layer.Layer<QuotaRequestRepo> =>
  Layer.sync(QuotaRequestRepo, () => {
    type Row = { -readonly [K in keyof QuotaRequestRow]: QuotaRequestRow[K] }
    const rows: Array<Row> = []
    const now = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))
    const view = (r: Row): QuotaRequestRow => ({ ...r })
    return QuotaRequestRepo.of({
      insert: (q) =>
        Effect.map(now, (at) => {
          const pending = rows.find((r) => r.tenant_id === q.tenantId && r.quota_key === q.quotaKey && r.status === "pending")
          if (pending) return { pending: pending.id }
          const row: Row = {
            id: newId("qreq"),
            tenant_id: q.tenantId,
            quota_key: q.quotaKey,
            requested_by: q.requestedBy,
            requested_limit: q.requestedLimit,
            reason: q.reason,
            status: "pending",
            decided_by: null,
            decided_at: null,
            decision_note: null,
            withdrawn_at: null,
            created_at: at,
            updated_at: at
          }
          rows.push(row)
          return view(row)
        }),
      list: (filter, offset, limit) =>
        Effect.sync(() => {
          const all = rows.filter((r) => (filter.tenantId === undefined || r.tenant_id === filter.tenantId) && (filter.status === undefined || r.status === filter.status))
            .reverse()
          return pageOfRows(all, offset, limit, view)
        }),
      withdraw: (tenantId, id) =>
        Effect.map(now, (at) => {
          const r = rows.find((x) => x.id === id && x.tenant_id === tenantId)
          if (!r) return "not_found" as const
          if (r.status !== "pending") return { notPending: view(r) }
          Object.assign(r, { status: "cancelled", withdrawn_at: at, updated_at: at })
          return view(r)
        }),
      decide: (id, decision) =>
        Effect.map(now, (at) => {
          const r = rows.find((x) => x.id === id)
          if (!r) return "not_found" as const
          if (r.status !== "pending") return { notPending: view(r) }
          Object.assign(r, { status: decision.approve ? "approved" : "rejected", decided_by: decision.decidedBy, decided_at: at, decision_note: decision.note, updated_at: at })
          if (decision.approve) seed.overrides?.set(`${r.tenant_id} ${r.quota_key}`, Math.max(seed.overrides.get(`${r.tenant_id} ${r.quota_key}`) ?? 0, r.requested_limit))
          return view(r)
        }),
      primaryEmail: (identityId) => Effect.sync(() => seed.emails?.[identityId]),
      ownerEmails: (tenantId) => Effect.sync(() => seed.owners?.[tenantId] ?? [])
    })
  })
