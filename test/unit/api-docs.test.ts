import { readFileSync } from "node:fs"
import { resolve } from "node:path"
import { Context } from "effect"
import { describe, expect, it } from "vitest"
import { Api } from "../../src/http/api.ts"
import { Anonymous, ANY_KEY, OwnSession, Requires } from "../../src/http/security.ts"
import { renderApiDocs } from "../../scripts/api-docs.ts"

describe("the endpoint → permission table", () => {
  it("in docs/api.md is the one generated from the API definition (run `npm run docs`)", () => {
    const current = readFileSync(resolve(import.meta.dirname, "../../docs/api.md"), "utf8")
    expect(renderApiDocs(current)).toBe(current)
  })

  it("covers every endpoint behind a key or session", () => {
    // What any caller may do to its own identity (log out, read its profile, its second factor), and the price list.
    const openToAnyCaller = new Set(["billing.pricing", "auth.csrf", "auth.refresh", "auth.logout", "auth.me", "users.me",
      // Answering an invitation or a delegation addressed to oneself.
      "invitations.accept", "invitations.decline", "delegations.accept", "delegations.decline", "delegations.renounce"])
    const ownAccount = new Map([
      ...["changePassword", "setupPassword", "sendEmailVerification", "enableTotp", "verifyTotp", "disableTotp", "regenerateRecoveryCodes"]
        .map((n) => [`auth.${n}`, "iam:identities:write"] as const),
      ["users.updateMe", "iam:identities:write"],
      ["users.revokeOtherSessions", "iam:sessions:write"],
      ["users.revokeSession", "iam:sessions:write"]
    ])
    for (const group of Object.values(Api.groups)) {
      if (group.identifier === "control" || group.identifier === "system") continue
      for (const [name, endpoint] of Object.entries(group.endpoints)) {
        if (endpoint.middlewares.has(Anonymous as never)) continue
        const required = Context.get(endpoint.annotations, Requires) ?? Context.get(group.annotations, Requires)
        // Changing one's own credentials or profile: a key needs a write permission, the person's own session none.
        if (ownAccount.has(`${group.identifier}.${name}`)) {
          expect([name, required, Context.get(endpoint.annotations, OwnSession)]).toEqual([name, ownAccount.get(`${group.identifier}.${name}`), true])
        } else if (openToAnyCaller.has(`${group.identifier}.${name}`)) expect(required).toBe(ANY_KEY)
        else expect(required, `${group.identifier}.${name}`).toMatch(/^[a-z_*-]+:[a-z*-]+:(read|write|\*)$/)
      }
    }
  })
})
