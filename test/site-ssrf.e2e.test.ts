/**
 * SSRF refusals of site maps and site crawls end to end, with the guard ON (no
 * ALLOW_PRIVATE_TARGETS), inside a network namespace that has only a loopback interface
 * (docs/site-crawls.md, "URL keys and scope": every URL goes through the guard before it is listed
 * or queued, and is counted `skipped.unsafe`).
 *
 * How loopback fixtures stay reachable with the guard on: like test/ssrf.e2e.test.ts, the server
 * declares one loopback address public (SSRF_TEST_PUBLIC_ADDRESSES=127.0.0.2, refused in
 * production), and the site there is the "public" site. Everything else keeps the normal classifier.
 *
 * What makes a leak visible without any traffic leaving the machine: inside the namespace the
 * private addresses 10.0.0.1, 169.254.169.254 and fd00::1 are put on its own `lo`, so they exist
 * nowhere else; trap servers listen on them (and on 127.0.0.1) and count connections. A private
 * copy of /etc/hosts, bind-mounted in the namespace's own mount namespace, names them as hosts of the
 * site (intranet.site.example, ...), so that they are in the map's scope (allowSubdomains) and must be
 * refused by the guard's resolution rather than by the scope. The script first fetches each trap
 * itself, to show the traps answer; then no connection may reach them from Trawl.
 *
 * The script that runs inside is test/support/site-ssrf-inside.ts. With DATABASE_URL, a second
 * variant runs Trawl on PostgreSQL through its unix socket (127.0.0.1:5432 is outside the namespace).
 */
import { spawn, spawnSync } from "node:child_process"
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createTestDatabase, nodeBin } from "./support/server-process.ts"
import { SITE_HOSTS, sitemapUnsafe, TRAPS, unsafeLiterals, unsafeNames } from "./support/site-ssrf-inside.ts"

const root = resolve(import.meta.dirname, "..")

const canUnshare = (() => {
  if (process.getuid?.() !== 0) return { ok: false, why: "not root" }
  const r = spawnSync("unshare", ["-n", "-m", "sh", "-c", "ip link set lo up && ip -6 addr add fd00::1/128 dev lo nodad"], { timeout: 10_000 })
  return r.status === 0 ? { ok: true, why: "" } : { ok: false, why: `unshare -n -m failed: ${r.stderr?.toString().trim() || r.error}` }
})()

/** PostgreSQL's unix socket directory, the namespace's only way to it. */
const socketDir = process.env.PGHOST?.startsWith("/") ? process.env.PGHOST : "/var/run/postgresql"
const variants: ReadonlyArray<{ name: string; database: RegExp; databaseUrl: () => Promise<string | undefined> }> = [
  { name: "embedded", database: /^embedded PGlite/, databaseUrl: async () => undefined },
  ...(process.env.DATABASE_URL && existsSync(join(socketDir, ".s.PGSQL.5432"))
    ? [{
      name: "postgres via unix socket",
      database: /^PostgreSQL/,
      databaseUrl: async () => {
        const db = new URL(await createTestDatabase(process.env.DATABASE_URL!))
        return `postgres://${db.username || "postgres"}@localhost${db.pathname}?host=${encodeURIComponent(socketDir)}`
      }
    }]
    : [])
]

/** Runs the inside script in a fresh namespace; answers its RESULT. */
const runInside = async (dir: string, mode: "map" | "crawl", databaseUrl: string | undefined): Promise<any> => {
  const hosts = join(dir, `hosts-${mode}`)
  writeFileSync(hosts, ["127.0.0.1 localhost", "::1 localhost", ...SITE_HOSTS.map(([ip, name]) => `${ip} ${name}`)].join("\n") + "\n")
  const addresses = TRAPS.filter((a) => !a.startsWith("127."))
    .map((a) => (a.includes(":") ? `ip -6 addr add ${a}/128 dev lo nodad` : `ip addr add ${a}/32 dev lo`))
    .join(" && ")
  const shell = `ip link set lo up && ${addresses} && mount --bind ${hosts} /etc/hosts && ` +
    `exec ${nodeBin} --import tsx test/support/site-ssrf-inside.ts ${mode}`
  const child = spawn("unshare", ["-n", "-m", "sh", "-c", shell], {
    cwd: root,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", ...(databaseUrl ? { INSIDE_DATABASE_URL: databaseUrl } : {}) }
  })
  let stdout = ""
  let stderr = ""
  child.stdout.on("data", (d) => (stdout += d))
  child.stderr.on("data", (d) => (stderr += d))
  const code = await new Promise<number | null>((res) => {
    const timer = setTimeout(() => child.kill("SIGKILL"), 230_000)
    child.once("exit", (c) => {
      clearTimeout(timer)
      res(c)
    })
  })
  const line = stdout.split("\n").find((l) => l.startsWith("RESULT "))
  expect(line, `namespace run failed (exit ${code}):\n${stdout.slice(-4000)}\n${stderr.slice(-4000)}`).toBeDefined()
  return JSON.parse(line!.slice("RESULT ".length))
}

/** The server ran on the variant's database, and the traps answered the script's own requests (both ports each), so zero later is a refusal. */
const expectTrapsReachable = (r: any, database: RegExp) => {
  expect(r.database, "the server ran on the variant's database").toMatch(database)
  for (const address of TRAPS) expect(r.control[address], `control fetch to ${address}`).toBeGreaterThanOrEqual(2)
}

describe.skipIf(!canUnshare.ok)(`site maps and crawls inside a loopback-only network namespace${canUnshare.ok ? "" : ` (skipped: ${canUnshare.why})`}`, () => {
  let dir: string
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "trawl-site-netns-"))
  })
  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  describe.each(variants)("($name)", (variant) => {
    it("a map lists only the public pages: private names are skipped as unsafe, literals as offsite, and no private address is contacted", async () => {
      const r = await runInside(dir, "map", await variant.databaseUrl())
      expectTrapsReachable(r, variant.database)
      const seed = `http://www.site.example:${r.port}/`
      expect(r.map.status, r.map.error).toBe(200)
      expect([...r.map.data.urls].sort()).toEqual([seed, `${seed}a`, `${seed}b`])
      // Four names on the pages and one in the sitemap resolve to private addresses: each key once.
      expect(r.map.data.skipped).toMatchObject({ unsafe: unsafeNames(r.port).length + 1, offsite: unsafeLiterals(r.port).length, robots: 0 })
      expect(r.map.data.urls).not.toContain(sitemapUnsafe(r.port))
      expect(r.mapPrivateSeed).toEqual({ status: 422, code: "unsafe_url" })
      // Not one connection to a private, link-local, unique-local or loopback trap, not even for robots.txt.
      expect(r.trapConnections).toEqual(Object.fromEntries(TRAPS.map((a) => [a, 0])))
      // The public site: each path once.
      expect([...r.siteRequests].sort()).toEqual(["/", "/a", "/b", "/robots.txt", "/sitemap.xml"])
    }, 240_000)

    it("a crawl queues only the public pages: every private link is skipped as unsafe, and no private address is contacted", async () => {
      const r = await runInside(dir, "crawl", await variant.databaseUrl())
      expectTrapsReachable(r, variant.database)
      const seed = `http://www.site.example:${r.port}/`
      expect(r.crawlCreated.status, r.crawlCreated.error).toBe(201)
      expect(r.crawl.status).toBe("done")
      // With allowExternal every link is in scope, so the guard is what refuses all nine: four names
      // and four literals on the pages, one name in the sitemap, each key once.
      const unsafe = new Set([...unsafeNames(r.port), ...unsafeLiterals(r.port), sitemapUnsafe(r.port)])
      expect(unsafe.size).toBe(9)
      expect(r.crawl.counts).toMatchObject({ done: 3, failed: 0, skipped: { unsafe: 9, offsite: 0, robots: 0 } })
      expect(r.crawlPages.status).toBe(200)
      expect([...r.crawlPages.urls].sort()).toEqual([seed, `${seed}a`, `${seed}b`])
      expect(r.crawlPrivateSeed).toEqual({ status: 422, code: "unsafe_url" })
      expect(r.trapConnections).toEqual(Object.fromEntries(TRAPS.map((a) => [a, 0])))
      // Each page fetched once (by its job), robots.txt and the sitemap once.
      expect([...r.siteRequests].sort()).toEqual(["/", "/a", "/b", "/robots.txt", "/sitemap.xml"])
    }, 240_000)
  })
})
