import { readFileSync, writeFileSync } from "node:fs"
import { resolve } from "node:path"
import { Context } from "effect"
import { Api } from "../src/http/api.ts"
import { ANY_KEY, OwnSession, Requires, SessionOnly } from "../src/http/security.ts"

const file = resolve(import.meta.dirname, "../docs/api.md")
const start = "<!-- permissions:start -->"
const end = "<!-- permissions:end -->"

const planeOf = (group: string, required: string | undefined, sessionOnly: boolean) =>
  group === "control" ? "control (`x-internal-token`)" : required === undefined ? "public, no authentication"
    : required.startsWith("cross_tenant:") ? "super-admin" : sessionOnly ? "session only (an API key is `400 session_required`)" : "`x-api-key` or session"

/** The endpoint → permission table, read from the `Requires` annotations of the API definition. */
export const permissionTable = (): string => {
  const rows: Array<string> = ["| Method | Path | Permission | Plane |", "|---|---|---|---|"]
  for (const group of Object.values(Api.groups)) {
    for (const endpoint of Object.values(group.endpoints)) {
      const required = Context.get(endpoint.annotations, Requires) ?? Context.get(group.annotations, Requires)
      const path = endpoint.path.replace(/:([A-Za-z]+)/g, "{$1}")
      const own = Context.get(endpoint.annotations, OwnSession) ? " (a key; the person's own session needs none)" : ""
      const sessionOnly = Context.get(endpoint.annotations, SessionOnly)
      const permission = required === ANY_KEY && sessionOnly ? "any valid session" : required ? `\`${required}\`${own}` : "none"
      rows.push(`| ${endpoint.method} | \`${path}\` | ${permission} | ${planeOf(group.identifier, required, sessionOnly)} |`)
    }
  }
  return rows.join("\n")
}

export const renderApiDocs = (current: string): string => {
  const i = current.indexOf(start)
  const j = current.indexOf(end)
  if (i < 0 || j < 0) throw new Error(`docs/api.md lacks the ${start} / ${end} markers`)
  return current.slice(0, i + start.length) + "\n" + permissionTable() + "\n" + current.slice(j)
}

if (process.argv[1] && resolve(process.argv[1]) === resolve(import.meta.filename)) {
  writeFileSync(file, renderApiDocs(readFileSync(file, "utf8")))
  console.log("docs/api.md: permission table regenerated")
}
