import type { SqlClient } from "effect/sql"

/**
 * Locks a tenant's row for the rest of the transaction, so that the tenant's counted creations
 * (API keys, extractor configs) queue behind each other and a count cannot be passed by two at
 * once. FOR NO KEY UPDATE: enough to order them, without holding up rows that refer to the tenant.
 */
export const lockTenantRow = (sql: SqlClient.SqlClient, tenantId: string) => sql`SELECT 1 FROM tenants WHERE id = ${tenantId} FOR NO KEY UPDATE`
