import { client, INTERNAL_TOKEN } from "../../test/support/server-process.ts"
import type { MirrorRow } from "./bare-server.ts"
import type { Target } from "./load.ts"

interface ApiKeyJson {
  id: string
  name: string
  description: string | null
  keyPrefix: string
  roleId: string
  rateLimitPerMinute: number
  lastUsedAt: string | null
  expiresAt: string | null
  revokedAt: string | null
  createdAt: string
}

/**
 * Tenants (through the control plane, on `plan` if given: "pro" has ten times the daily jobs and
 * four times the concurrency of the default), API keys of each tenant's "read" role for its owner,
 * and one target per key: `GET /v1/iam/identities/{owner}/api-keys/{kid}` of that very key with it
 * as `x-api-key`. Also the rows as Trawl stores them, for the bare server's mirror table, and each
 * tenant's owner key (every permission of the tenant).
 */
export const bootstrap = async (
  baseUrl: string,
  options: { tenants: number; keysPerTenant: number; rateLimitPerMinute: number; credits?: string; plan?: string }
): Promise<{ targets: Array<Target>; rows: Array<MirrorRow>; owners: Array<{ tenantId: string; apiKey: string }> }> => {
  const { tenants: tenantCount, keysPerTenant, rateLimitPerMinute: keyRpm } = options
  const api = client(baseUrl)
  const targets: Array<Target> = []
  const rows: Array<MirrorRow> = []
  const owners: Array<{ tenantId: string; apiKey: string }> = []
  for (let t = 0; t < tenantCount; t++) {
    const tenant = await api.createTenant({
      name: `Bench ${t}`,
      ...(options.credits ? { credits: options.credits } : {}),
      ...(options.plan ? { plan: options.plan } : {})
    })
    owners.push({ tenantId: tenant.tenantId, apiKey: tenant.apiKey })
    const roles = await api.get("/v1/iam/roles", tenant.apiKey)
    if (roles.status !== 200) throw new Error(`GET /v1/iam/roles: ${roles.status} ${roles.text}`)
    const readRole = (roles.json.data.items as Array<{ id: string; name: string }>).find((r) => r.name === "read")
    if (!readRole) throw new Error(`tenant ${tenant.tenantId} has no "read" role: ${roles.text}`)
    const keysPath = `/v1/iam/identities/${tenant.ownerIdentityId}/api-keys`
    for (let k = 0; k < keysPerTenant; k++) {
      const res = await api.post(keysPath, { name: `bench-${t}-${k}`, roleId: readRole.id, rateLimitPerMinute: keyRpm }, tenant.apiKey)
      if (res.status !== 201) throw new Error(`POST ${keysPath} (key ${k + 1} of tenant ${t + 1}): ${res.status} ${res.text}`)
      const key = res.json.data as ApiKeyJson & { rawKey: string }
      targets.push({ path: `${keysPath}/${key.id}`, headers: { "x-api-key": key.rawKey } })
    }
    // The rows as Trawl stores them, for the bare server's mirror table (hash is not exposed).
    const list = await api.get(keysPath, tenant.apiKey)
    if (list.status !== 200) throw new Error(`GET ${keysPath}: ${list.status} ${list.text}`)
    for (const item of list.json.data.items as Array<ApiKeyJson>) {
      rows.push({
        id: item.id,
        tenant_id: tenant.tenantId,
        identity_id: tenant.ownerIdentityId,
        role_id: item.roleId,
        name: item.name,
        description: item.description,
        key_prefix: item.keyPrefix,
        key_hash: `bench-not-a-hash-${item.id}`,
        rate_limit_per_minute: item.rateLimitPerMinute,
        last_used_at: item.lastUsedAt,
        expires_at: item.expiresAt,
        revoked_at: item.revokedAt,
        created_at: item.createdAt
      })
    }
  }
  return { targets, rows, owners }
}


/**
 * One tenant for a steady load (chaos, soak): credit for far more than a run spends, and its owner
 * key's rate limit raised to 5000 a minute, since the load is steadier than the default allows.
 */
export const createLoadTenant = async (base: string, name: string) => {
  const res = await fetch(`${base}/internal/v1/tenants`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-internal-token": INTERNAL_TOKEN },
    body: JSON.stringify({ name, ownerEmail: `${name.toLowerCase()}-${Date.now()}@example.com`, ownerPassword: "correct horse battery", credits: "100000.0000" })
  })
  const json = (await res.json()) as any
  if (res.status !== 201) throw new Error(`tenant: ${res.status} ${JSON.stringify(json)}`)
  const { apiKey, apiKeyId, ownerIdentityId } = json.data
  const patched = await fetch(`${base}/v1/iam/identities/${ownerIdentityId}/api-keys/${apiKeyId}`, {
    method: "PATCH",
    headers: { "content-type": "application/json", "x-api-key": apiKey },
    body: JSON.stringify({ rateLimitPerMinute: 5000 })
  })
  if (patched.status !== 200) throw new Error(`key rate limit: ${patched.status} ${await patched.text()}`)
  return { apiKey: apiKey as string, tenantId: json.data.tenantId as string }
}
