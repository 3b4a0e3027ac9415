import { readFileSync } from "node:fs"
import { join, posix, relative, resolve } from "node:path"
import { describe, expect, it } from "vitest"

/**
 * The client (`trawl/client`) is the API definition and its schemas and nothing of the server
 * (README.md, "Clients and the command line"): its import closure, followed from
 * src/client/index.ts, stays within these files and packages.
 */
const root = resolve(import.meta.dirname, "../..")

const closure = (entry: string) => {
  const files = new Set<string>()
  const packages = new Set<string>()
  const visit = (file: string) => {
    if (files.has(file)) return
    files.add(file)
    if (!file.endsWith(".ts")) return
    const text = readFileSync(join(root, file), "utf8")
    for (const m of text.matchAll(/(?:^|\n)\s*(?:import|export)\s+(?!type\s)[^;"'`]*?from\s*["']([^"']+)["']/g)) {
      const specifier = m[1]!
      if (specifier.startsWith(".")) visit(posix.normalize(posix.join(posix.dirname(file), specifier)))
      else packages.add(specifier.split("/").slice(0, specifier.startsWith("@") ? 2 : 1).join("/"))
    }
  }
  visit(relative(root, join(root, entry)).split(/[\\/]/).join("/"))
  return { files: [...files].sort(), packages: [...packages].sort() }
}

const allowed = (file: string) =>
  file.startsWith("src/client/") ||
  file.startsWith("src/schema/") ||
  /^src\/http\/[a-z-]+\.api\.ts$/.test(file) ||
  ["src/http/api.ts", "src/http/openapi.ts", "src/http/error-codes.ts", "src/http/security.ts", "src/billing/plan-rules.ts", "src/iam/principal.ts", "src/billing/plans.ts", "src/billing/pricing.ts", "config/plans.json", "config/pricing.json",
    // the document states how webhooks are signed and retried
    "src/webhooks/signing.ts", "src/webhooks/schedule.ts", "config/webhooks.json"].includes(file)

describe("the client's imports", () => {
  it("reach only the API definition, its schemas and effect", () => {
    const { files, packages } = closure("src/client/index.ts")
    expect(files).toContain("src/http/jobs.api.ts")
    expect(files.filter((f) => !allowed(f))).toEqual([])
    expect(packages.filter((p) => !p.startsWith("node:"))).toEqual(["effect"])
  })

  it("the webhook helper needs nothing but node:crypto", () => {
    expect(closure("src/webhooks/signing.ts")).toEqual({ files: ["src/webhooks/signing.ts"], packages: ["node:crypto"] })
  })
})
