import { describe, expect, it } from "vitest"
import { allows, covers, grantablePermissions, internalAdminRole, intersectPermissions, isPowerful, isValidPermission, notHeld, resources, scopeOf, services, tenantSystemRoles } from "../../src/iam/permissions.ts"

const role = (name: string) => tenantSystemRoles.find((r) => r.name === name)!.permissions

describe("permissions", () => {
  it("matches wildcards part by part", () => {
    expect(covers("*:*:*", "scraper:jobs:write")).toBe(true)
    expect(covers("*:*:read", "scraper:jobs:write")).toBe(false)
    expect(covers("scraper:*:write", "scraper:jobs:write")).toBe(true)
    expect(covers("scraper:*:write", "extractor:configs:write")).toBe(false)
    expect(covers("scraper:jobs:read", "scraper:jobs:read")).toBe(true)
  })

  it("never lets a tenant wildcard stand for cross_tenant", () => {
    expect(covers("*:*:*", "cross_tenant:*:*")).toBe(false)
    expect(covers("cross_tenant:*:*", "scraper:jobs:read")).toBe(false)
    expect(covers("cross_tenant:*:*", "cross_tenant:*:*")).toBe(true)
  })

  it("gives the system roles the scopes of docs/api.md (Permissions and system roles)", () => {
    expect(scopeOf(role("owner"))).toBe("admin")
    expect(scopeOf(role("admin"))).toBe("admin")
    expect(scopeOf(role("write"))).toBe("write")
    expect(scopeOf(role("read"))).toBe("read")
    expect(scopeOf(["billing:transactions:write"])).toBe("admin")
    expect(scopeOf(["iam:roles:write"])).toBe("admin")
    expect(scopeOf(["network:ip:write"])).toBe("write")
  })

  it("lets the write role write crawl, page-history, extraction, network and quota requests only", () => {
    const w = role("write")
    for (const p of ["scraper:jobs:write", "page-history:pages:write", "extractor:configs:write", "network:ip:write", "quotas:requests:write"]) {
      expect(allows(w, p)).toBe(true)
    }
    for (const p of ["iam:api-keys:write", "billing:subscription:write", "quotas:quotas:write"]) expect(allows(w, p)).toBe(false)
    expect(allows(w, "iam:api-keys:read")).toBe(true)
  })

  it("validates permission strings", () => {
    for (const p of ["*:*:*", "scraper:jobs:read", "scraper:*:write", "*:*:read", "cross_tenant:*:*", "*:jobs:read"]) {
      expect(isValidPermission(p)).toBe(true)
    }
    for (const p of ["scraper:jobs", "scraper:jobs:delete", "foo:bar:read", "scraper:configs:read", "cross_tenant:jobs:read", ""]) {
      expect(isValidPermission(p)).toBe(false)
    }
  })

  it("marks roles that need re-authentication", () => {
    expect(isPowerful(role("owner"))).toBe(true)
    expect(isPowerful(internalAdminRole.permissions)).toBe(true)
    expect(isPowerful(role("write"))).toBe(false)
    // Every permission spelled another way is every permission.
    expect(isPowerful(["*:*:read", "*:*:write"])).toBe(true)
    expect(isPowerful(["*:*:read", ...services.map((s) => `${s}:*:write`)])).toBe(true)
    // One resource short of everything is not.
    expect(isPowerful(["*:*:read", ...resources.filter((r) => r !== "iam:sessions").map((r) => `${r}:write`)])).toBe(false)
    expect(isPowerful(["cross_tenant:*:read"])).toBe(true)
  })

  it("counts a wildcard as held when everything it stands for is held", () => {
    expect(notHeld(["*:*:read", "*:*:write"], ["*:*:*", "iam:*:*"])).toEqual([])
    expect(notHeld(["*:*:read", "scraper:*:write"], ["scraper:*:*", "*:*:*", "iam:roles:write"])).toEqual(["*:*:*", "iam:roles:write"])
    // A super-admin permission is held only as itself.
    expect(notHeld(["*:*:*"], ["cross_tenant:*:read"])).toEqual(["cross_tenant:*:read"])
  })
})

describe("intersectPermissions", () => {
  it("keeps what both sets allow, part by part", () => {
    expect(intersectPermissions(["*:*:*"], ["*:*:read"])).toEqual(["*:*:read"])
    expect(intersectPermissions(["*:*:read"], ["scraper:*:*", "iam:roles:write"])).toEqual(["scraper:*:read"])
    expect(intersectPermissions(["scraper:jobs:write"], ["*:*:read"])).toEqual([])
    expect(intersectPermissions(["*:*:read", "iam:delegations:write"], ["*:*:*"]).sort()).toEqual(["*:*:read", "iam:delegations:write"])
  })

  it("drops what another entry covers, and keeps cross-tenant permissions apart", () => {
    expect(intersectPermissions(["*:*:*"], ["*:*:read", "scraper:jobs:read"])).toEqual(["*:*:read"])
    expect(intersectPermissions(["cross_tenant:*:*"], ["*:*:*"])).toEqual([])
    expect(intersectPermissions(["cross_tenant:*:*", "*:*:*"], ["cross_tenant:*:read"])).toEqual(["cross_tenant:*:read"])
  })

  it("lets a caller hand out its own permissions, and on behalf only what both sides hold", () => {
    const base = { kind: "session", credentialId: "s", tenantId: "ten_a", identityId: "idt_owner", roleId: "r", isInternalTenant: false, rateLimitPerMinute: 600, expiresAt: null } as const
    const own = { ...base, permissions: ["*:*:*"], actorId: "idt_owner" } as any
    expect(grantablePermissions(own)).toEqual(["*:*:*"])
    const delegate = { ...base, permissions: ["*:*:*"], actorId: "idt_carol", actorPermissions: ["iam:roles:*", "scraper:jobs:read"] } as any
    expect(notHeld(grantablePermissions(delegate), ["*:*:*", "iam:roles:write", "scraper:jobs:read", "scraper:jobs:write"])).toEqual(["*:*:*", "scraper:jobs:write"])
  })
})
