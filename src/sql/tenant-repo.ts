import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { internalAdminRole, type SystemRole, tenantSystemRoles } from "../iam/permissions.ts"
import { type AddOnQuantity, planQuota, type QuotaKey, quotaKeys } from "../billing/plans.ts"
import { EXTRACTION_SERVICE_KEY, JOB_SERVICE_KEY } from "../billing/pricing.ts"
import { newId } from "../ids.ts"
import { iso, money } from "../schema/common.ts"
import { terminalExtractionStatuses } from "../schema/extraction.ts"
import { terminalStatuses } from "../schema/job.ts"
import { MAX_BALANCE, type Tenant, type Transaction, type TransactionFilter } from "../schema/tenant.ts"
import { createdBetween, createdWithin } from "./created-between.ts"
import { orderByTerms, sortLikeSql } from "./order-by.ts"
import { pageOfRows } from "./memory-search.ts"
import { pageWithTotal } from "./page-with-total.ts"
import { OID, pgArray } from "./pg-array.ts"
import { endpointInUse } from "./webhook-repo.ts"

export interface BootstrapInput {
  readonly tenantId: string
  readonly name: string
  readonly isInternal: boolean
  readonly plan: string
  readonly credits: string
  readonly email: string
  readonly passwordHash: string | null
  readonly apiKey: { readonly id: string; readonly prefix: string; readonly hash: string; readonly rateLimitPerMinute: number }
}

export interface BootstrapResult {
  readonly tenantId: string
  readonly organizationId: string
  readonly ownerIdentityId: string
  readonly roleId: string
  readonly apiKeyId: string
}

export class EmailTaken extends Error {}

/** A tenant's own limit of a quota: a super-admin's (replaces the plan's) or an approved request's (only raises it). */
interface QuotaOverride {
  readonly limit: number
  readonly raiseOnly: boolean
}

/** The limit in force: the plan's with its add-ons, unless an override replaces or raises it (docs/api.md "Quotas"). */
const effectiveLimit = (planLimit: number, override: QuotaOverride | undefined): number =>
  override === undefined ? planLimit : override.raiseOnly ? Math.max(planLimit, override.limit) : override.limit

export interface TenantRepoShape {
  /** Creates a tenant with its system roles, organization, owner identity, owner key and first credits, atomically. */
  readonly bootstrap: (input: BootstrapInput) => Effect.Effect<BootstrapResult, EmailTaken>
  /** The result of an earlier bootstrap of this tenant id (idempotent re-delivery). */
  readonly bootstrapResult: (tenantId: string) => Effect.Effect<BootstrapResult | undefined>
  /** The `internal` tenant (super-admins), created on first use; safe when nodes race. */
  readonly ensureInternalTenant: Effect.Effect<string>
  /** Adds a credential (identity + key) to the internal tenant with the internal_admin role. */
  readonly addInternalAdmin: (
    input: Omit<BootstrapInput, "tenantId" | "name" | "isInternal" | "plan" | "credits"> & { tenantId: string }
  ) => Effect.Effect<{ identityId: string; apiKeyId: string }, EmailTaken>
  readonly find: (tenantId: string) => Effect.Effect<Tenant | undefined>
  readonly list: (offset: number, limit: number) => Effect.Effect<{ items: ReadonlyArray<Tenant>; total: number }>
  readonly balance: (tenantId: string) => Effect.Effect<string | undefined>
  /**
   * Appends a ledger entry and moves the balance, in one transaction with the row
   * locked; refuses to go below zero. Idempotent by entry id.
   */
  readonly adjust: (entry: {
    id: string
    tenantId: string
    type: string
    amount: string
    note: string | null
    serviceKey?: string | null
    resourceId?: string | null
    resourceType?: string | null
  }) => Effect.Effect<{ ok: true; transaction: Transaction } | { ok: false; balance: string; reason: "below_zero" | "above_ceiling" }>
  /**
   * Debits calls priced when they are made (IP lookups), of any tenants, in one statement with
   * their tenants' rows locked: in order, each whose price its tenant's balance still covers gets
   * its ledger entry; the others none. Answers, per call in order, its entry (when written) and its
   * tenant's balance after the statement.
   */
  readonly debitCalls: (calls: ReadonlyArray<CallDebit>) => Effect.Effect<ReadonlyArray<{
    readonly transaction: Transaction | undefined
    readonly balance: string | undefined
  }>>
  /** Jobs and extractions of the tenant not charged yet: running, or ended and waiting for their charge. */
  readonly uncharged: (tenantId: string) => Effect.Effect<{ readonly jobs: number; readonly extractions: number }>
  /** Those of `ids` that are extractions written already. */
  readonly extractionsWritten: (ids: ReadonlyArray<string>) => Effect.Effect<ReadonlySet<string>>
  /**
   * Charges up to `limit` of the tenant's ended, uncharged jobs or extractions, oldest first, in
   * one statement with the tenant's row locked: a ledger debit for each that cost anything (at
   * most what the balance still holds, so it never goes below zero), and each marked settled.
   * `charge` prices one from its row. Answers how many were settled and the balance after (none
   * when there was nothing to charge).
   */
  readonly settle: (
    tenantId: string,
    source: ChargeSource,
    limit: number,
    charge: (row: ChargeableRow) => { readonly units: number; readonly note: string }
  ) => Effect.Effect<{ readonly settled: number; readonly balance: string | undefined }>
  /** Tenants with jobs or extractions that ended more than `olderThanMs` ago and are still uncharged. */
  readonly tenantsWithUnchargedWork: (olderThanMs: number, limit: number) => Effect.Effect<ReadonlyArray<string>>
  /** A page of the tenant's ledger, newest first unless `sort` says otherwise (`createdAt` is the ledger's own order). */
  readonly transactions: (
    tenantId: string,
    filter: TransactionFilter,
    sort: ReadonlyArray<{ readonly field: string; readonly dir: "asc" | "desc" }>,
    offset: number,
    limit: number
  ) => Effect.Effect<{ items: ReadonlyArray<Transaction>; total: number }>
  /** A quota's limit for a tenant: its override, else its plan's value. */
  readonly quotaLimit: (tenantId: string, key: QuotaKey) => Effect.Effect<number>
  /** A super-admin's override: replaces the plan's limit; null removes it (back to the plan and its add-ons). */
  readonly setQuota: (tenantId: string, key: QuotaKey, limit: number | null) => Effect.Effect<void>
  /** What the tenant uses of each quota now: daily counts since `dayStart`, the others in total. */
  readonly quotaUsage: (tenantId: string, dayStart: Date) => Effect.Effect<Record<QuotaKey, number>>
  /** Several limits in one query. */
  readonly quotaLimits: <K extends QuotaKey>(tenantId: string, keys: ReadonlyArray<K>) => Effect.Effect<Record<K, number>>
}

/** Sort fields of the ledger; entries are numbered in the order they were written. */
const transactionColumns: Readonly<Record<string, string>> = { createdAt: "seq", amount: "amount", id: "id" }

/** One call to debit: its tenant, its ledger entry's id, price (in 1/10000 EUR) and names. */
export interface CallDebit {
  readonly tenantId: string
  readonly entryId: string
  readonly units: number
  readonly serviceKey: string
  readonly resourceType: string
  readonly resourceId: string | null
  readonly note: string | null
}

/** What is charged once it has ended. */
export type ChargeSource = "jobs" | "extractions"

/** Per kind of chargeable work: its table, the columns it is priced from, the statuses it ends in, its ledger names. */
const chargeSources = {
  jobs: {
    table: "jobs",
    columns: "id, status, result, NULL::jsonb AS metadata, 0 AS cache_hits",
    ended: terminalStatuses,
    serviceKey: JOB_SERVICE_KEY,
    resourceType: "job"
  },
  extractions: {
    table: "extractions",
    columns: "id, status, NULL::jsonb AS result, metadata, cache_hits",
    ended: terminalExtractionStatuses,
    serviceKey: EXTRACTION_SERVICE_KEY,
    resourceType: "extraction"
  }
} as const

/** An ended job (its `result`) or extraction (`status`, `metadata`, `cacheHits`) to be priced. */
export interface ChargeableRow {
  readonly id: string
  readonly status: string
  readonly result: unknown
  readonly metadata: unknown
  readonly cacheHits: number
}


export class TenantRepo extends Context.Service<TenantRepo, TenantRepoShape>()("trawl/TenantRepo") {}

const toTenant = (r: any): Tenant => ({
  id: r.id,
  name: r.name,
  plan: r.plan,
  status: r.status,
  balance: money(r.balance),
  isInternal: r.is_internal,
  createdAt: iso(r.created_at)!
})

const toTransaction = (r: any): Transaction => ({
  id: r.id,
  type: r.type,
  amount: money(r.amount),
  balanceAfter: money(r.balance_after),
  serviceKey: r.service_key,
  resourceId: r.resource_id,
  resourceType: r.resource_type,
  note: r.note,
  createdAt: iso(r.created_at)!
})

/** True when a SQL failure (anywhere in its cause chain) is a unique-constraint violation. */
export const isUniqueViolation = (e: unknown): boolean => {
  for (let c: any = e, depth = 0; c && depth < 6; c = c.cause, depth++) {
    if (c._tag === "UniqueViolation" || c.code === "23505" || /duplicate key/i.test(String(c.message ?? ""))) return true
  }
  return false
}

export const TenantRepoLive = Layer.effect(
  TenantRepo,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const insertRoles = (tenantId: string, roles: ReadonlyArray<SystemRole>) =>
      Effect.forEach(roles, (role) =>
        sql<{ id: string }>`
          INSERT INTO roles (id, tenant_id, name, description, permissions, is_system)
          VALUES (${newId("role")}, ${tenantId}, ${role.name}, ${role.description}, ${JSON.stringify(role.permissions)}::jsonb, true)
          RETURNING id`.pipe(Effect.map((rows) => [role.name, rows[0]!.id] as const)))

    const insertPerson = (tenantId: string, email: string, passwordHash: string | null, roleId: string) =>
      Effect.gen(function*() {
        const identityId = newId("idt")
        yield* sql`
          INSERT INTO identities (id, tenant_id, type, display_name, status, password_hash, password_changed_at, default_role_id)
          VALUES (${identityId}, ${tenantId}, 'user', ${email.split("@")[0]!}, 'active', ${passwordHash},
                  ${passwordHash ? new Date() : null}, ${roleId})`
        yield* sql`
          INSERT INTO identity_emails (id, identity_id, tenant_id, email, is_primary)
          VALUES (${newId("eml")}, ${identityId}, ${tenantId}, ${email}, true)`
        return identityId
      })

    const insertKey = (tenantId: string, identityId: string, roleId: string, key: BootstrapInput["apiKey"], name: string) =>
      sql`
        INSERT INTO api_keys (id, tenant_id, identity_id, role_id, name, key_prefix, key_hash, rate_limit_per_minute)
        VALUES (${key.id}, ${tenantId}, ${identityId}, ${roleId}, ${name}, ${key.prefix}, ${key.hash}, ${key.rateLimitPerMinute})`

    const mapUnique = <A, R>(eff: Effect.Effect<A, unknown, R>) =>
      eff.pipe(
        Effect.catch((e) => isUniqueViolation(e) ? Effect.fail(new EmailTaken()) : Effect.die(e))
      )

    const bootstrapResult = (tenantId: string) =>
      sql<BootstrapResult>`
        SELECT t.id AS "tenantId", o.id AS "organizationId", k.identity_id AS "ownerIdentityId",
               k.role_id AS "roleId", k.id AS "apiKeyId"
        FROM tenants t
        JOIN organizations o ON o.tenant_id = t.id
        JOIN api_keys k ON k.tenant_id = t.id
        WHERE t.id = ${tenantId}
        ORDER BY k.id LIMIT 1`.pipe(Effect.orDie, Effect.map((rows) => rows[0]))

    const adjustIn = (entry: Parameters<TenantRepoShape["adjust"]>[0]) =>
      Effect.gen(function*() {
        const existing = yield* sql`SELECT * FROM credit_transactions WHERE id = ${entry.id}`
        if (existing[0]) return { ok: true as const, transaction: toTransaction(existing[0]) }
        // FOR NO KEY UPDATE: the balance's writers queue, without holding up rows that refer to the tenant.
        // The sum is the database's: exact in numeric, where a float sum drifts past about 10¹¹.
        const [row] = yield* sql<{ balance: string; next: string }>`
          SELECT balance, balance + ${entry.amount}::numeric AS next FROM tenants WHERE id = ${entry.tenantId} FOR NO KEY UPDATE`
        if (row!.next.startsWith("-")) return { ok: false as const, balance: money(row!.balance), reason: "below_zero" as const }
        if (Number(row!.next) > MAX_BALANCE) return { ok: false as const, balance: money(row!.balance), reason: "above_ceiling" as const }
        yield* sql`UPDATE tenants SET balance = ${row!.next}::numeric, updated_at = now() WHERE id = ${entry.tenantId}`
        const [tx] = yield* sql`
          INSERT INTO credit_transactions (id, tenant_id, type, amount, balance_after, service_key, resource_id, resource_type, note)
          VALUES (${entry.id}, ${entry.tenantId}, ${entry.type}, ${entry.amount}::numeric, ${row!.next}::numeric,
                  ${entry.serviceKey ?? null}, ${entry.resourceId ?? null}, ${entry.resourceType ?? null}, ${entry.note})
          RETURNING *`
        return { ok: true as const, transaction: toTransaction(tx) }
      })

    const quotaLimits: TenantRepoShape["quotaLimits"] = (tenantId, keys) =>
      // The subscription's plan raised by its add-ons; a super-admin's override replaces that, an
      // approved request's (raise_only) raises it.
      sql<{ plan: string; add_ons: ReadonlyArray<AddOnQuantity> | string | null; quota_key: string | null; quota_limit: number | null; raise_only: boolean | null }>`
        SELECT COALESCE(s.plan, t.plan) AS plan, s.add_ons, o.quota_key, o.quota_limit, o.raise_only FROM tenants t
        LEFT JOIN subscriptions s ON s.tenant_id = t.id
        LEFT JOIN quota_overrides o ON o.tenant_id = t.id AND o.quota_key IN ${sql.in(keys)}
        WHERE t.id = ${tenantId}`.pipe(
        Effect.orDie,
        Effect.map((rows) => {
          const plan = rows[0]?.plan ?? "starter"
          const raw = rows[0]?.add_ons ?? []
          const addOns: ReadonlyArray<AddOnQuantity> = typeof raw === "string" ? JSON.parse(raw) : raw
          const overrides = new Map(rows.filter((r) => r.quota_key !== null).map((r) => [r.quota_key!, { limit: r.quota_limit!, raiseOnly: r.raise_only === true }]))
          return Object.fromEntries(keys.map((k) => [k, effectiveLimit(planQuota(plan, k, addOns), overrides.get(k))])) as Record<(typeof keys)[number], number>
        })
      )

    return TenantRepo.of({
      bootstrapResult,
      bootstrap: (input) =>
        mapUnique(sql.withTransaction(Effect.gen(function*() {
          yield* sql`
            INSERT INTO tenants (id, name, is_internal, plan, balance)
            VALUES (${input.tenantId}, ${input.name}, ${input.isInternal}, ${input.plan}, 0)`
          const roles = new Map(yield* insertRoles(input.tenantId, input.isInternal ? [...tenantSystemRoles, internalAdminRole] : tenantSystemRoles))
          const ownerRoleId = roles.get(input.isInternal ? "internal_admin" : "owner")!
          const orgIdentityId = newId("idt")
          yield* sql`
            INSERT INTO identities (id, tenant_id, type, display_name, status)
            VALUES (${orgIdentityId}, ${input.tenantId}, 'organization', ${input.name}, 'active')`
          const organizationId = newId("org")
          yield* sql`INSERT INTO organizations (id, tenant_id, identity_id, name)
                     VALUES (${organizationId}, ${input.tenantId}, ${orgIdentityId}, ${input.name})`
          const ownerIdentityId = yield* insertPerson(input.tenantId, input.email, input.passwordHash, ownerRoleId)
          yield* sql`
            INSERT INTO identity_accesses (id, tenant_id, organization_id, identity_id, role_id, status)
            VALUES (${newId("acc")}, ${input.tenantId}, ${organizationId}, ${ownerIdentityId}, ${ownerRoleId}, 'active')`
          yield* insertKey(input.tenantId, ownerIdentityId, ownerRoleId, input.apiKey, "owner key")
          if (Number(input.credits) > 0) {
            const topup = yield* adjustIn({
              id: newId("txn"),
              tenantId: input.tenantId,
              type: "topup",
              amount: input.credits,
              note: "initial credits"
            })
            // The request's schema bounds the credits below the ceiling: never a tenant without the money it was given.
            if (!topup.ok) return yield* Effect.die(new Error(`initial credits refused: ${topup.reason}`))
          }
          return { tenantId: input.tenantId, organizationId, ownerIdentityId, roleId: ownerRoleId, apiKeyId: input.apiKey.id }
        }))),
      ensureInternalTenant: Effect.gen(function*() {
        const find = sql<{ id: string }>`SELECT id FROM tenants WHERE is_internal`.pipe(Effect.map((rows) => rows[0]?.id))
        const existing = yield* find
        if (existing) return existing
        const tenantId = newId("ten")
        const created = yield* sql.withTransaction(Effect.gen(function*() {
          yield* sql`INSERT INTO tenants (id, name, is_internal, plan) VALUES (${tenantId}, 'internal', true, 'internal')`
          yield* insertRoles(tenantId, [...tenantSystemRoles, internalAdminRole])
          const orgIdentityId = newId("idt")
          yield* sql`INSERT INTO identities (id, tenant_id, type, display_name) VALUES (${orgIdentityId}, ${tenantId}, 'organization', 'internal')`
          yield* sql`INSERT INTO organizations (id, tenant_id, identity_id, name) VALUES (${newId("org")}, ${tenantId}, ${orgIdentityId}, 'internal')`
          return tenantId
        })).pipe(Effect.catch((e) => isUniqueViolation(e) ? find : Effect.fail(e)))
        return created!
      }).pipe(Effect.orDie),
      addInternalAdmin: (input) =>
        mapUnique(sql.withTransaction(Effect.gen(function*() {
          const [role] = yield* sql<{ id: string }>`
            SELECT id FROM roles WHERE tenant_id = ${input.tenantId} AND name = 'internal_admin'`
          const [org] = yield* sql<{ id: string }>`SELECT id FROM organizations WHERE tenant_id = ${input.tenantId} LIMIT 1`
          const identityId = yield* insertPerson(input.tenantId, input.email, input.passwordHash, role!.id)
          yield* sql`
            INSERT INTO identity_accesses (id, tenant_id, organization_id, identity_id, role_id, status)
            VALUES (${newId("acc")}, ${input.tenantId}, ${org!.id}, ${identityId}, ${role!.id}, 'active')`
          yield* insertKey(input.tenantId, identityId, role!.id, input.apiKey, "internal admin key")
          return { identityId, apiKeyId: input.apiKey.id }
        }))),
      find: (tenantId) =>
        sql`SELECT * FROM tenants WHERE id = ${tenantId}`.pipe(Effect.orDie, Effect.map((rows) => rows[0] && toTenant(rows[0]))),
      list: (offset, limit) =>
        Effect.all([
          sql`SELECT * FROM tenants ORDER BY id DESC OFFSET ${offset} LIMIT ${limit}`,
          sql<{ n: string }>`SELECT count(*) AS n FROM tenants`
        ]).pipe(Effect.orDie, Effect.map(([rows, [count]]) => ({ items: rows.map(toTenant), total: Number(count!.n) }))),
      balance: (tenantId) =>
        sql<{ balance: string }>`SELECT balance FROM tenants WHERE id = ${tenantId}`.pipe(
          Effect.orDie,
          Effect.map((rows) => rows[0] && money(rows[0].balance))
        ),
      adjust: (entry) => sql.withTransaction(adjustIn(entry)).pipe(Effect.orDie),
      uncharged: (tenantId) =>
        sql<{ jobs: string; extractions: string }>`
          SELECT (SELECT count(*) FROM jobs WHERE tenant_id = ${tenantId} AND settled_at IS NULL) AS jobs,
                 (SELECT count(*) FROM extractions WHERE tenant_id = ${tenantId} AND settled_at IS NULL) AS extractions`.pipe(
          Effect.orDie,
          Effect.map(([row]) => ({ jobs: Number(row!.jobs), extractions: Number(row!.extractions) }))
        ),
      extractionsWritten: (ids) =>
        ids.length === 0 ? Effect.succeed(new Set<string>()) : sql<{ id: string }>`SELECT id FROM extractions WHERE id IN ${sql.in(ids)}`.pipe(
          Effect.orDie,
          Effect.map((rows) => new Set(rows.map((r) => r.id)))
        ),
      debitCalls: (calls) =>
        Effect.gen(function*() {
          const column = <K extends keyof CallDebit>(key: K) => calls.map((c) => c[key] === null ? null : String(c[key]))
          // Each tenant's running sum only falls, so the calls its balance covers are its first ones.
          // Tenants are locked in id order, so two statements over the same tenants cannot deadlock.
          const rows = yield* sql<{ entry_id: string; written: boolean; tenant_balance: string; [column: string]: unknown }>`
            WITH input AS (
              SELECT tenant_id, entry_id, units::bigint AS units, service_key, resource_type, resource_id, note, position
              FROM unnest(${pgArray(column("tenantId"), OID.text)}, ${pgArray(column("entryId"), OID.text)},
                          ${pgArray(column("units"), OID.text)}, ${pgArray(column("serviceKey"), OID.text)},
                          ${pgArray(column("resourceType"), OID.text)}, ${pgArray(column("resourceId"), OID.text)},
                          ${pgArray(column("note"), OID.text)})
                WITH ORDINALITY AS i(tenant_id, entry_id, units, service_key, resource_type, resource_id, note, position)
            ),
            tenant AS (
              SELECT id, round(balance * 10000)::bigint AS balance FROM tenants
              WHERE id IN (SELECT tenant_id FROM input) ORDER BY id FOR NO KEY UPDATE
            ),
            running AS (
              SELECT i.*, t.balance - sum(i.units) OVER (PARTITION BY i.tenant_id ORDER BY i.position) AS after
              FROM input i JOIN tenant t ON t.id = i.tenant_id
            ),
            taken AS (SELECT * FROM running WHERE after >= 0),
            left_over AS (SELECT tenant_id, min(after) AS after FROM taken GROUP BY tenant_id),
            ledger AS (
              INSERT INTO credit_transactions (id, tenant_id, type, amount, balance_after, service_key, resource_id, resource_type, note)
              SELECT entry_id, tenant_id, 'debit', -(units / 10000.0), after / 10000.0, service_key, resource_id, resource_type, note
              FROM taken ORDER BY position
              RETURNING *
            ),
            paid AS (
              UPDATE tenants t SET balance = l.after / 10000.0, updated_at = now() FROM left_over l WHERE t.id = l.tenant_id
            )
            SELECT i.entry_id, e.id IS NOT NULL AS written, e.*,
                   COALESCE(l.after, t.balance) / 10000.0 AS tenant_balance
            FROM input i
            LEFT JOIN ledger e ON e.id = i.entry_id
            LEFT JOIN left_over l ON l.tenant_id = i.tenant_id
            LEFT JOIN tenant t ON t.id = i.tenant_id
            ORDER BY i.position`
          return rows.map((row) => ({
            transaction: row.written ? toTransaction(row) : undefined,
            // A tenant that is gone has no balance: nothing was written for it.
            balance: row.tenant_balance === null ? undefined : money(row.tenant_balance)
          }))
        }).pipe(Effect.orDie),
      settle: (tenantId, source, limit, charge) =>
        Effect.gen(function*() {
          const { table, columns, ended, serviceKey, resourceType } = chargeSources[source]
          // Read, priced here, then written by one statement: no transaction holds the database
          // (the embedded one runs one at a time) while the prices are worked out.
          const rows = (yield* sql<{ id: string; status: string; result: unknown; metadata: unknown; cache_hits: number }>`
            SELECT ${sql.literal(columns)} FROM ${sql(table)}
            WHERE tenant_id = ${tenantId} AND settled_at IS NULL AND status IN ${sql.in(ended)}
            ORDER BY finished_at, id LIMIT ${limit}`).map((r): ChargeableRow => ({ ...r, cacheHits: r.cache_hits }))
          if (rows.length === 0) return { settled: 0, balance: undefined }
          const priced = rows.map((row) => ({ id: row.id, ...charge(row) }))
          // Each one still uncharged (locked, so a charge made meanwhile is seen and not made twice)
          // takes its price, or what the balance still holds: in order, the balance only falls.
          const [result] = yield* sql<{ settled: string; balance: string | null }>`
            WITH input AS (
              SELECT id, units::bigint AS units, note, entry_id, position
              FROM unnest(${pgArray(priced.map((p) => p.id), OID.text)}, ${pgArray(priced.map((p) => String(p.units)), OID.text)},
                          ${pgArray(priced.map((p) => p.note), OID.text)}, ${pgArray(priced.map(() => newId("txn")), OID.text)})
                WITH ORDINALITY AS i(id, units, note, entry_id, position)
            ),
            tenant AS (SELECT round(balance * 10000)::bigint AS balance FROM tenants WHERE id = ${tenantId} FOR NO KEY UPDATE),
            open AS (SELECT w.id FROM ${sql(table)} w JOIN input i ON i.id = w.id WHERE w.settled_at IS NULL FOR UPDATE OF w),
            charges AS (
              SELECT i.id, i.note, i.entry_id, i.position,
                     LEAST(i.units, GREATEST(0, t.balance - COALESCE(sum(i.units) OVER before, 0))) AS take,
                     i.units,
                     GREATEST(0, t.balance - sum(i.units) OVER upto) AS after
              FROM input i JOIN open o ON o.id = i.id CROSS JOIN tenant t
              WINDOW before AS (ORDER BY i.position ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING),
                     upto AS (ORDER BY i.position ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
            ),
            ledger AS (
              INSERT INTO credit_transactions (id, tenant_id, type, amount, balance_after, service_key, resource_id, resource_type, note)
              SELECT entry_id, ${tenantId}, 'debit', -(take / 10000.0), after / 10000.0, ${serviceKey}, id, ${resourceType},
                     note || CASE WHEN take < units THEN ' (' || trim_scale((units - take) / 10000.0)::text || ' EUR not covered by the balance)' ELSE '' END
              -- One that cost something is noted even when nothing was left to take (an amount of 0).
              FROM charges WHERE units > 0 ORDER BY position
            ),
            paid AS (
              UPDATE tenants SET balance = (SELECT (t.balance - COALESCE(sum(c.take), 0)) / 10000.0 FROM tenant t LEFT JOIN charges c ON true GROUP BY t.balance),
                                 updated_at = now()
              WHERE id = ${tenantId} AND EXISTS (SELECT 1 FROM charges WHERE take > 0)
            ),
            marked AS (
              UPDATE ${sql(table)} w SET settled_at = now(), charged = c.take / 10000.0 FROM charges c WHERE w.id = c.id RETURNING w.id
            )
            SELECT (SELECT count(*) FROM marked) AS settled,
                   (SELECT (t.balance - COALESCE((SELECT sum(take) FROM charges), 0)) / 10000.0 FROM tenant t) AS balance`
          return { settled: Number(result!.settled), balance: result!.balance === null ? undefined : money(result!.balance) }
        }).pipe(Effect.orDie),
      tenantsWithUnchargedWork: (olderThanMs, limit) => {
        const endedLongAgo = (source: ChargeSource) => {
          const { table, ended } = chargeSources[source]
          return sql`
            SELECT tenant_id, finished_at FROM ${sql(table)}
            WHERE settled_at IS NULL AND status IN ${sql.in(ended)} AND finished_at < now() - ${olderThanMs} * interval '1 millisecond'`
        }
        // Longest waiting first, so that a tenant whose charging keeps failing cannot crowd out the others.
        return sql<{ tenant_id: string }>`
          SELECT tenant_id FROM (${endedLongAgo("jobs")} UNION ALL ${endedLongAgo("extractions")}) ended
          GROUP BY tenant_id ORDER BY min(finished_at) LIMIT ${limit}`.pipe(Effect.orDie, Effect.map((rows) => rows.map((r) => r.tenant_id)))
      },
      transactions: (tenantId, filter, sort, offset, limit) => {
        const where = sql.and([
          sql`tenant_id = ${tenantId}`,
          ...(filter.type !== undefined ? [sql`type IN ${sql.in(filter.type)}`] : []),
          ...(filter.serviceKey !== undefined ? [sql`service_key = ${filter.serviceKey}`] : []),
          ...(filter.resourceType !== undefined ? [sql`resource_type = ${filter.resourceType}`] : []),
          ...(filter.resourceId !== undefined ? [sql`resource_id = ${filter.resourceId}`] : []),
          ...createdBetween(sql, filter.createdAt),
          ...(filter.amount?.gte !== undefined ? [sql`amount >= ${filter.amount.gte}::numeric`] : []),
          ...(filter.amount?.lte !== undefined ? [sql`amount <= ${filter.amount.lte}::numeric`] : [])
        ])
        return pageWithTotal<{ id: string }>(
          sql,
          sql`SELECT * FROM credit_transactions WHERE ${where} ORDER BY ${sql.literal(orderByTerms(sort, transactionColumns))} OFFSET ${offset} LIMIT ${limit}`,
          sql`SELECT count(*) FROM credit_transactions WHERE ${where}`
        ).pipe(Effect.map((page) => ({ items: page.items.map(toTransaction), total: page.total })))
      },
      setQuota: (tenantId, key, limit) =>
        (limit === null
          ? sql`DELETE FROM quota_overrides WHERE tenant_id = ${tenantId} AND quota_key = ${key}`
          : sql`INSERT INTO quota_overrides (tenant_id, quota_key, quota_limit, raise_only) VALUES (${tenantId}, ${key}, ${limit}, false)
                ON CONFLICT (tenant_id, quota_key) DO UPDATE SET quota_limit = EXCLUDED.quota_limit, raise_only = false, updated_at = now()`).pipe(
          Effect.orDie,
          Effect.asVoid
        ),
      quotaLimits,
      quotaUsage: (tenantId, dayStart) =>
        sql<Record<QuotaKey, string>>`
          SELECT
            (SELECT count(*) FROM jobs WHERE tenant_id = ${tenantId} AND created_at >= ${dayStart}) AS "scraper.jobs.daily",
            (SELECT count(*) FROM jobs WHERE tenant_id = ${tenantId} AND status IN ('queued', 'claimed')) AS "scraper.jobs.concurrent",
            (SELECT count(*) FROM extractions WHERE tenant_id = ${tenantId} AND created_at >= ${dayStart}) AS "extractor.extractions.daily",
            (SELECT count(*) FROM extractor_configs WHERE tenant_id = ${tenantId}) AS "extractor.configs.total",
            (SELECT count(*) FROM identities WHERE tenant_id = ${tenantId} AND type = 'user') AS "iam.identities.total",
            (SELECT count(*) FROM api_keys WHERE tenant_id = ${tenantId} AND revoked_at IS NULL
                                           AND (expires_at IS NULL OR expires_at > now())) AS "iam.api-keys.total",
            (SELECT count(*) FROM webhook_endpoints WHERE tenant_id = ${tenantId} AND ${endpointInUse(sql)}) AS "webhooks.endpoints.total"`.pipe(
          Effect.orDie,
          Effect.map(([row]) => Object.fromEntries(quotaKeys.map((k) => [k, Number(row![k])])) as Record<QuotaKey, number>)
        ),
      quotaLimit: (tenantId, key) => Effect.map(quotaLimits(tenantId, [key]), (limits) => limits[key])
    })
  })
)

/** A job or extraction as `makeTenantRepoTest` charges it: a row of `jobs` or `extractions`, trimmed. */
export interface TestWork {
  readonly source: ChargeSource
  readonly id: string
  readonly tenantId: string
  status: string
  readonly result?: unknown
  readonly metadata?: unknown
  readonly cacheHits?: number
  finishedAt: Date | null
  /** Set when charged (what was taken, in EUR, is `charged`). */
  settledAt?: Date | null
  charged?: string | null
}

/** What a `makeTenantRepoTest` starts with. */
export interface TenantRepoSeed {
  readonly tenants?: ReadonlyArray<{ readonly id: string; readonly name?: string; readonly plan?: string; readonly balance?: string; readonly isInternal?: boolean }>
  /**
   * The jobs and extractions that are charged, shared with the test (it adds work and ends it; the
   * layer marks it settled): the live layer reads these from their tables.
   */
  readonly work?: Array<TestWork>
  /** The tenant's subscription, when it has one (its plan and add-ons set its quotas): `SubscriptionRepo`'s rows in the live layer. */
  readonly subscription?: (tenantId: string) => { readonly plan: string; readonly addOns: ReadonlyArray<AddOnQuantity> } | undefined
}

/**
 * Tenants, their ledger and quota overrides in memory, for unit tests of the services above; times
 * come from Effect's Clock. Amounts are kept in 1/10000 EUR, as the live statements round them.
 * Work is charged as `settle` charges it (oldest ended first, never below zero, an uncovered part
 * noted); `quotaUsage`, which counts seven tables, is not faked and dies when called.
 */
export const makeTenantRepoTest = (seed: TenantRepoSeed = {}): Layer.Layer<TenantRepo> =>
  Layer.sync(TenantRepo, () => {
    interface Row { id: string; name: string; plan: string; status: string; units: number; isInternal: boolean; createdAt: Date }
    interface Entry { readonly seq: number; readonly tenantId: string; readonly createdMs: number; readonly units: number; readonly transaction: Transaction }
    const now = Effect.clockWith((clock) => clock.currentTimeMillis)
    const units = (eur: string | number) => Math.round(Number(eur) * 10_000)
    const eur = (u: number) => money(u / 10_000)
    const tenants = new Map<string, Row>((seed.tenants ?? []).map((t) => [t.id, {
      id: t.id,
      name: t.name ?? t.id,
      plan: t.plan ?? "starter",
      status: "active",
      units: units(t.balance ?? "0"),
      isInternal: t.isInternal ?? false,
      createdAt: new Date(0)
    }]))
    const ledger: Array<Entry> = []
    const overrides = new Map<string, QuotaOverride>()
    const emails = new Set<string>()
    const bootstraps = new Map<string, BootstrapResult>()
    const work = seed.work ?? []
    const toTenantView = (t: Row): Tenant => ({
      id: t.id, name: t.name, plan: t.plan, status: t.status, balance: eur(t.units), isInternal: t.isInternal, createdAt: t.createdAt.toISOString()
    })

    const write = (tenant: Row, entry: Omit<Transaction, "createdAt" | "balanceAfter" | "amount"> & { units: number }, ms: number) => {
      if (ledger.some((e) => e.transaction.id === entry.id)) {
        return Effect.die(new Error(`ledger entry ${entry.id} written twice (a unique violation in the live layer)`))
      }
      const { units: amount, ...rest } = entry
      const transaction: Transaction = { ...rest, amount: eur(amount), balanceAfter: eur(tenant.units), createdAt: new Date(ms).toISOString() }
      ledger.push({ seq: ledger.length + 1, tenantId: tenant.id, createdMs: ms, units: amount, transaction })
      return Effect.succeed(transaction)
    }

    const adjust: TenantRepoShape["adjust"] = (entry) =>
      Effect.gen(function*() {
        const existing = ledger.find((e) => e.transaction.id === entry.id)
        if (existing) return { ok: true as const, transaction: existing.transaction }
        const tenant = tenants.get(entry.tenantId)
        if (!tenant) return yield* Effect.die(new Error(`adjust: no tenant ${entry.tenantId}`))
        const next = tenant.units + units(entry.amount)
        if (next < 0) return { ok: false as const, balance: eur(tenant.units), reason: "below_zero" as const }
        if (next / 10_000 > MAX_BALANCE) return { ok: false as const, balance: eur(tenant.units), reason: "above_ceiling" as const }
        tenant.units = next
        const transaction = yield* write(tenant, {
          id: entry.id,
          type: entry.type as Transaction["type"],
          units: units(entry.amount),
          serviceKey: entry.serviceKey ?? null,
          resourceId: entry.resourceId ?? null,
          resourceType: entry.resourceType ?? null,
          note: entry.note
        }, yield* now)
        return { ok: true as const, transaction }
      })

    const takeEmail = (email: string) =>
      emails.has(email.toLowerCase()) ? Effect.fail(new EmailTaken()) : Effect.sync(() => void emails.add(email.toLowerCase()))

    const quotaLimits: TenantRepoShape["quotaLimits"] = (tenantId, keys) =>
      Effect.sync(() => {
        const subscription = seed.subscription?.(tenantId)
        const plan = subscription?.plan ?? tenants.get(tenantId)?.plan ?? "starter"
        return Object.fromEntries(keys.map((k) => [k, effectiveLimit(planQuota(plan, k, subscription?.addOns ?? []), overrides.get(`${tenantId} ${k}`))])) as Record<
          (typeof keys)[number],
          number
        >
      })

    const ended = (w: TestWork) => (chargeSources[w.source].ended as ReadonlyArray<string>).includes(w.status)

    return TenantRepo.of({
      bootstrap: (input) =>
        Effect.gen(function*() {
          if (tenants.has(input.tenantId)) return yield* Effect.fail(new EmailTaken())
          yield* takeEmail(input.email)
          const at = yield* now
          tenants.set(input.tenantId, {
            id: input.tenantId, name: input.name, plan: input.plan, status: "active", units: 0, isInternal: input.isInternal, createdAt: new Date(at)
          })
          const result: BootstrapResult = {
            tenantId: input.tenantId,
            organizationId: newId("org"),
            ownerIdentityId: newId("idt"),
            roleId: newId("role"),
            apiKeyId: input.apiKey.id
          }
          bootstraps.set(input.tenantId, result)
          if (Number(input.credits) > 0) {
            yield* adjust({ id: newId("txn"), tenantId: input.tenantId, type: "topup", amount: input.credits, note: "initial credits" })
          }
          return result
        }),
      bootstrapResult: (tenantId) => Effect.sync(() => bootstraps.get(tenantId)),
      ensureInternalTenant: Effect.gen(function*() {
        const existing = [...tenants.values()].find((t) => t.isInternal)
        if (existing) return existing.id
        const id = newId("ten")
        tenants.set(id, { id, name: "internal", plan: "internal", status: "active", units: 0, isInternal: true, createdAt: new Date(yield* now) })
        return id
      }),
      addInternalAdmin: (input) =>
        Effect.as(takeEmail(input.email), { identityId: newId("idt"), apiKeyId: input.apiKey.id }),
      find: (tenantId) => Effect.sync(() => {
        const t = tenants.get(tenantId)
        return t && toTenantView(t)
      }),
      list: (offset, limit) =>
        Effect.sync(() => {
          const all = [...tenants.values()].sort((a, b) => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0))
          return pageOfRows(all, offset, limit, toTenantView)
        }),
      balance: (tenantId) => Effect.sync(() => {
        const t = tenants.get(tenantId)
        return t && eur(t.units)
      }),
      adjust,
      debitCalls: (calls) =>
        Effect.gen(function*() {
          const at = yield* now
          // Each tenant's running sum over all its calls in order: the ones it covers are its first.
          const running = new Map<string, number>()
          const left = new Map<string, number>()
          const written: Array<Transaction | undefined> = []
          for (const call of calls) {
            const tenant = tenants.get(call.tenantId)
            if (!tenant) {
              written.push(undefined)
              continue
            }
            const after = (running.get(call.tenantId) ?? tenant.units) - call.units
            running.set(call.tenantId, after)
            if (after < 0) {
              written.push(undefined)
              continue
            }
            left.set(call.tenantId, after)
            tenant.units = after
            written.push(yield* write(tenant, {
              id: call.entryId,
              type: "debit",
              units: -call.units,
              serviceKey: call.serviceKey,
              resourceId: call.resourceId,
              resourceType: call.resourceType,
              note: call.note
            }, at))
          }
          return calls.map((call, i) => {
            const tenant = tenants.get(call.tenantId)
            return { transaction: written[i], balance: tenant && eur(tenant.units) }
          })
        }),
      uncharged: (tenantId) =>
        Effect.sync(() => {
          const open = work.filter((w) => w.tenantId === tenantId && !w.settledAt)
          return { jobs: open.filter((w) => w.source === "jobs").length, extractions: open.filter((w) => w.source === "extractions").length }
        }),
      extractionsWritten: (ids) => Effect.sync(() => new Set(work.filter((w) => w.source === "extractions" && ids.includes(w.id)).map((w) => w.id))),
      settle: (tenantId, source, limit, charge) =>
        Effect.gen(function*() {
          const rows = work
            .filter((w) => w.source === source && w.tenantId === tenantId && !w.settledAt && ended(w))
            .sort((a, b) => (a.finishedAt?.getTime() ?? Infinity) - (b.finishedAt?.getTime() ?? Infinity) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
            .slice(0, limit)
          if (rows.length === 0) return { settled: 0, balance: undefined }
          const tenant = tenants.get(tenantId)
          if (!tenant) return { settled: 0, balance: undefined }
          const at = yield* now
          const { serviceKey, resourceType } = chargeSources[source]
          const start = tenant.units
          let asked = 0
          for (const w of rows) {
            const price = charge({ id: w.id, status: w.status, result: w.result ?? null, metadata: w.metadata ?? null, cacheHits: w.cacheHits ?? 0 })
            const take = Math.min(price.units, Math.max(0, start - asked))
            asked += price.units
            tenant.units = Math.max(0, start - asked)
            w.settledAt = new Date(at)
            w.charged = eur(take)
            if (price.units > 0) {
              const uncovered = price.units - take
              yield* write(tenant, {
                id: newId("txn"),
                type: "debit",
                units: -take,
                serviceKey,
                resourceId: w.id,
                resourceType,
                note: price.note + (uncovered > 0 ? ` (${uncovered / 10_000} EUR not covered by the balance)` : "")
              }, at)
            }
          }
          return { settled: rows.length, balance: eur(tenant.units) }
        }),
      tenantsWithUnchargedWork: (olderThanMs, limit) =>
        Effect.map(now, (at) => {
          const firstEnded = new Map<string, number>()
          for (const w of work) {
            if (w.settledAt || !ended(w) || !w.finishedAt || w.finishedAt.getTime() >= at - olderThanMs) continue
            firstEnded.set(w.tenantId, Math.min(firstEnded.get(w.tenantId) ?? Infinity, w.finishedAt.getTime()))
          }
          return [...firstEnded].sort((a, b) => a[1] - b[1]).slice(0, limit).map(([tenantId]) => tenantId)
        }),
      transactions: (tenantId, filter, sort, offset, limit) =>
        Effect.sync(() => {
          const created = createdWithin(filter.createdAt)
          const matching = ledger.filter((e) =>
            e.tenantId === tenantId &&
            (filter.type === undefined || (filter.type as ReadonlyArray<string>).includes(e.transaction.type)) &&
            (filter.serviceKey === undefined || e.transaction.serviceKey === filter.serviceKey) &&
            (filter.resourceType === undefined || e.transaction.resourceType === filter.resourceType) &&
            (filter.resourceId === undefined || e.transaction.resourceId === filter.resourceId) &&
            created(e.createdMs) &&
            (filter.amount?.gte === undefined || e.units >= units(filter.amount.gte)) &&
            (filter.amount?.lte === undefined || e.units <= units(filter.amount.lte))
          )
          const key = (e: Entry, field: string): number | string => field === "createdAt" ? e.seq : field === "amount" ? e.units : e.transaction.id
          return pageOfRows(sortLikeSql(matching, sort, key), offset, limit, (e) => e.transaction)
        }),
      quotaLimit: (tenantId, key) => Effect.map(quotaLimits(tenantId, [key]), (limits) => limits[key]),
      setQuota: (tenantId, key, limit) =>
        Effect.sync(() => void (limit === null ? overrides.delete(`${tenantId} ${key}`) : overrides.set(`${tenantId} ${key}`, { limit, raiseOnly: false }))),
      quotaUsage: () => Effect.die(new Error("TenantRepo.quotaUsage is not supported in the test layer: it counts rows of seven tables")),
      quotaLimits
    })
  })

/** No tenants to start with; see `makeTenantRepoTest`. */
export const TenantRepoTest: Layer.Layer<TenantRepo> = makeTenantRepoTest()
