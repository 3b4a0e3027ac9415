import { cpSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ARTICLE_HTML, ARTICLE_TITLE, type FixtureSite, loopbackOnlyEnv, startFixtureSite } from "../support/fixture-site.ts"
import { blankDatabaseTemplate, freePort, INTERNAL_TOKEN, nodeBin, type RunningServer, startServer } from "../support/server-process.ts"
import { root, runCli, runScript, startCli } from "./run-cli.ts"

/** The `trawl` binary against a real node (docs/cli.md): output, --json, one-line errors, exit codes. */
describe("trawl CLI", () => {
  let server: RunningServer
  let site: FixtureSite
  let guard: Record<string, string>
  let env: Record<string, string>
  const password = "correct horse battery staple"

  beforeAll(async () => {
    guard = loopbackOnlyEnv()
    site = await startFixtureSite()
    server = await startServer({ ALLOW_PRIVATE_TARGETS: "true", ...guard })
    env = { ...guard, TRAWL_URL: server.baseUrl }
  }, 180_000)

  afterAll(async () => {
    await server?.stop()
    await site?.close()
  })

  const json = (text: string) => JSON.parse(text) as any

  it("creates a tenant with the internal token, and says clearly when the token is missing or wrong", async () => {
    const missing = await runCli(["tenant", "create", "--name", "Acme", "--owner-email", "x@example.com"], env)
    expect(missing.code).toBe(2)
    expect(missing.stderr.trim()).toBe(
      "error missing_config: TRAWL_INTERNAL_TOKEN is not set: the node's internal token (the INTERNAL_TOKEN it runs with) is needed for the control plane"
    )

    // a TRAWL_URL that is no http(s) URL is configuration, not an unreachable node: nothing is sent
    for (const url of ["not-a-url", "ftp://127.0.0.1:1/"]) {
      const badUrl = await runCli(["tenant", "create", "--name", "Acme", "--owner-email", "x@example.com"], { ...env, TRAWL_URL: url, TRAWL_INTERNAL_TOKEN: INTERNAL_TOKEN })
      expect(badUrl.code).toBe(2)
      expect(badUrl.stderr.trim()).toBe(`error invalid_config: TRAWL_URL is not an http(s) URL: ${JSON.stringify(url)}`)
    }

    const wrong = await runCli(["tenant", "create", "--name", "Acme", "--owner-email", "x@example.com"], { ...env, TRAWL_INTERNAL_TOKEN: "not-the-token" })
    expect(wrong.code).toBe(1)
    expect(wrong.stderr.trim().split("\n")).toHaveLength(1)
    expect(wrong.stderr).toMatch(/^error unauthorized: .* \(HTTP 401\)$/m)

    // Checked against the API definition before anything is sent.
    const invalid = await runCli(["tenant", "create", "--name", "Acme", "--owner-email", "not-an-address"], { ...env, TRAWL_INTERNAL_TOKEN: INTERNAL_TOKEN })
    expect(invalid.code).toBe(2)
    expect(invalid.stderr).toMatch(/^error invalid_argument: ownerEmail: /m)

    const created = await runCli(
      ["tenant", "create", "--name", "Acme", "--owner-email", `owner-${Date.now()}@example.com`, "--owner-password", password, "--json"],
      { ...env, TRAWL_INTERNAL_TOKEN: INTERNAL_TOKEN }
    )
    expect(created.code, created.stderr).toBe(0)
    const tenant = json(created.stdout)
    expect(tenant.tenantId).toMatch(/^ten_/)
    expect(tenant.apiKey).toMatch(/^trawl_/)
    env = { ...env, TRAWL_API_KEY: tenant.apiKey }
  }, 420_000)

  it("creates jobs and waits for them, with progress on stderr and the jobs on stdout", async () => {
    const run = await runCli(["jobs", "create", site.url("/page"), site.url("/missing"), "--wait", "--json"], env)
    expect(run.code, run.stderr).toBe(0)
    const jobs = json(run.stdout) as Array<any>
    expect(jobs.map((j) => j.url)).toEqual([site.url("/page"), site.url("/missing")])
    expect(jobs.map((j) => j.status)).toEqual(["done", "done"])
    expect(jobs.map((j) => j.result.httpStatus)).toEqual([200, 404])
    // Not a terminal: one progress line per finished job, ending at 2/2.
    expect(run.stderr).toMatch(/\] 2\/2 {2}done 2/)

    const table = await runCli(["jobs", "get", jobs[0].id], env)
    expect(table.code).toBe(0)
    expect(table.stdout).toMatch(new RegExp(`^${jobs[0].id}\\s+done\\s+http\\s+200\\s+${site.url("/page").replace(/[.?]/g, "\\$&")}$`, "m"))

    const unknown = await runCli(["jobs", "get", "job_doesnotexist"], env)
    expect(unknown.code).toBe(1)
    expect(unknown.stderr.trim()).toMatch(/^error not_found: .*\(HTTP 404\)$/)
  }, 420_000)

  it("watches the event stream and sums up by status and engine", async () => {
    const watch = startCli(["jobs", "watch", "--count", "3", "--json"], env)
    // Jobs are created once the watch follows the stream: it counts jobs that finish from then on.
    const deadline = Date.now() + 120_000
    while (!watch.output().stderr.includes("following the event stream") && Date.now() < deadline && watch.child.exitCode === null) {
      await new Promise((r) => setTimeout(r, 200))
    }
    expect(watch.output().stderr).toContain(`following the event stream of ${server.baseUrl}`)
    const created = await runCli(["jobs", "create", site.url("/page?w=1"), site.url("/page?w=2"), site.url("/missing?w=3"), "--json"], env)
    expect(created.code, created.stderr).toBe(0)
    const ids = (json(created.stdout) as Array<any>).map((j) => j.id)
    const done = await watch.exited
    expect(done.code, done.stderr).toBe(0)
    const summary = json(done.stdout)
    expect(summary.finished).toBe(3)
    expect(summary.jobs.map((j: any) => j.id).sort()).toEqual([...ids].sort())
    expect(summary.byStatus).toEqual({ done: 3 })
    expect(summary.byEngine).toEqual({ http: 3 })

    // Jobs already over when the watch starts are read at once, not waited for.
    const again = await runCli(["jobs", "watch", ...ids.slice(0, 2)], env)
    expect(again.code, again.stderr).toBe(0)
    expect(again.stdout).toContain("2 finished\n  by status: done 2\n  by engine: http 2")
  }, 420_000)

  it("on a terminal, the progress bar is redrawn in place", async () => {
    // `script` gives the binary a pseudo-terminal (its output there is this run's stdout).
    const command = [nodeBin, join(root, "bin/trawl.mjs"), "jobs", "create", site.url("/page?w=tty1"), site.url("/page?w=tty2"), "--wait"]
      .map((a) => `'${a}'`)
      .join(" ")
    const run = await runScript(command, { ...env, TRAWL_CLI_FROM_SOURCE: "1" })
    expect(run.code, run.stdout).toBe(0)
    expect(run.stdout).toContain("\r\x1b[2K[############------------] 1/2  done 1")
    expect(run.stdout).toContain("\r\x1b[2K[########################] 2/2  done 2")
  }, 420_000)

  it("a watch without an end runs until Ctrl-C, and still prints its summary", async () => {
    const watch = startCli(["jobs", "watch", "--json"], env)
    const waitFor = async (what: () => boolean) => {
      const deadline = Date.now() + 120_000
      while (!what() && Date.now() < deadline && watch.child.exitCode === null) await new Promise((r) => setTimeout(r, 200))
    }
    await waitFor(() => watch.output().stderr.includes("following the event stream"))
    const created = await runCli(["jobs", "create", site.url("/page?w=sigint"), "--wait", "--json"], env)
    expect(created.code, created.stderr).toBe(0)
    const [job] = json(created.stdout) as Array<any>
    await waitFor(() => watch.output().stderr.includes(job.id))
    expect(watch.child.exitCode).toBeNull()
    watch.child.kill("SIGINT")
    const done = await watch.exited
    expect(done.code).toBe(130)
    const summary = json(done.stdout)
    expect(summary.jobs).toEqual([{ id: job.id, url: site.url("/page?w=sigint"), status: "done", engine: "http" }])
  }, 420_000)

  it("extracts from a URL and from a file, printing the extraction as JSON", async () => {
    const dir = mkdtempSync(join(tmpdir(), "trawl-cli-"))
    try {
      const file = join(dir, "article.html")
      writeFileSync(file, ARTICLE_HTML)
      const fromFile = await runCli(["extract", file, "--type", "article"], env)
      expect(fromFile.code, fromFile.stderr).toBe(0)
      const extraction = json(fromFile.stdout)
      expect(extraction.status).toBe("done")
      expect(extraction.data.title).toBe(ARTICLE_TITLE)

      const fromUrl = await runCli(["extract", site.url("/page"), "--type", "product"], env)
      expect(fromUrl.code, fromUrl.stderr).toBe(0)
      expect(json(fromUrl.stdout)).toMatchObject({ type: "product", url: site.url("/page") })

      const unreadable = await runCli(["extract", join(dir, "absent.html"), "--type", "article"], env)
      expect(unreadable.code).toBe(2)
      expect(unreadable.stderr).toMatch(/^error unreadable_file: cannot read /m)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  }, 420_000)

  it("lists, creates and revokes API keys; a revoked key is refused", async () => {
    const refused = await runCli(["keys", "create", "--name", "ci"], env)
    expect(refused.code).toBe(1)
    expect(refused.stderr).toMatch(/^error reauthentication_required: /m)

    const created = await runCli(["keys", "create", "--name", "ci", "--json"], { ...env, TRAWL_PASSWORD: password })
    expect(created.code, created.stderr).toBe(0)
    const key = json(created.stdout)
    expect(key.name).toBe("ci")
    expect(key.rawKey).toMatch(/^trawl_/)

    const listed = await runCli(["keys", "list", "--json"], env)
    expect(listed.code).toBe(0)
    expect((json(listed.stdout) as Array<any>).map((k) => k.id)).toContain(key.id)

    const revoked = await runCli(["keys", "revoke", key.id, "--json"], env)
    expect(revoked.code, revoked.stderr).toBe(0)
    expect(json(revoked.stdout)).toMatchObject({ revoked: true, apiKeyId: key.id })

    const withRevoked = await runCli(["keys", "list"], { ...env, TRAWL_API_KEY: key.rawKey })
    expect(withRevoked.code).toBe(1)
    expect(withRevoked.stderr).toMatch(/^error unauthorized: .*\(HTTP 401\)$/m)
  }, 420_000)

  it("shows a page's history and its diffs", async () => {
    const url = site.url("/changing.txt")
    for (let i = 0; i < 2; i++) {
      const run = await runCli(["jobs", "create", url, "--wait"], env)
      expect(run.code, run.stderr).toBe(0)
    }
    const history = await runCli(["history", url, "--diff"], env)
    expect(history.code, history.stderr).toBe(0)
    const lines = history.stdout.split("\n")
    expect(lines[0]).toMatch(/^FETCHED\s+VERSION\s+HTTP\s+SIZE\s+CHANGED\s+JOB$/)
    expect(lines.filter((l) => /^\S+\s+pv_\S+\s+200\s+\d+\s+yes\s+job_/.test(l))).toHaveLength(2)
    expect(history.stdout).toMatch(/^@@ .* @@$/m)

    const asJson = await runCli(["history", url, "--diff", "--json"], env)
    const versions = json(asJson.stdout) as Array<any>
    expect(versions).toHaveLength(2)
    expect(versions[0].diff.changed).toBe(true)
    expect(versions[1].diff.previousVersionId).toBeNull()
  }, 420_000)

  it("says when the node cannot be reached (exit 3) and when arguments are wrong (exit 2)", async () => {
    const port = await freePort()
    const unreachable = await runCli(["keys", "list"], { ...env, TRAWL_URL: `http://127.0.0.1:${port}` })
    expect(unreachable.code).toBe(3)
    expect(unreachable.stderr.trim()).toMatch(new RegExp(`^error unreachable: could not reach http://127\\.0\\.0\\.1:${port}`))

    const usage = await runCli(["extract", site.url("/page"), "--type", "recipe"], env)
    expect(usage.code).toBe(2)
    // a usage error's help goes to stderr with the error: stdout, which --json output is piped
    // from, stays empty; asked for, help and the version are the result, on stdout
    for (const args of [["jobs", "create", "--json"], ["jobs", "create", "--bogus-flag"], ["history"]]) {
      const wrong = await runCli(args, env)
      expect(wrong.code, args.join(" ")).toBe(2)
      expect(wrong.stdout, args.join(" ")).toBe("")
      expect(wrong.stderr).toContain("USAGE")
    }
    const help = await runCli(["jobs", "create", "--help"], env)
    expect([help.code, help.stderr]).toEqual([0, ""])
    expect(help.stdout).toContain("USAGE")
  }, 120_000)

  it("serve runs a node, as npm start does, and stops it on SIGTERM (exit 130, as for a signal)", async () => {
    const port = await freePort()
    const dataDir = mkdtempSync(join(tmpdir(), "trawl-cli-serve-"))
    cpSync(await blankDatabaseTemplate(), join(dataDir, "pg"), { recursive: true })
    const serve = startCli(["serve", "--port", String(port)], { ...guard, DATA_DIR: dataDir, INTERNAL_TOKEN, LOG_LEVEL: "warn" })
    try {
      const deadline = Date.now() + 120_000
      while (!serve.output().stdout.includes("trawl listening on") && Date.now() < deadline && serve.child.exitCode === null) {
        await new Promise((r) => setTimeout(r, 250))
      }
      expect(serve.output().stdout).toContain(`trawl listening on http://127.0.0.1:${port}`)
      const health = await fetch(`http://127.0.0.1:${port}/healthz`)
      expect(health.status).toBe(200)
      serve.child.kill("SIGTERM")
      const exit = await serve.exited
      expect(exit.code).toBe(130)
      // The node went with it.
      await expect(fetch(`http://127.0.0.1:${port}/healthz`)).rejects.toThrow()
    } finally {
      serve.child.kill("SIGKILL")
      rmSync(dataDir, { recursive: true, force: true })
    }
  }, 420_000)
})
