import { execFile } from "node:child_process"
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join, resolve } from "node:path"
import { promisify } from "node:util"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { runCli } from "../cli/run-cli.ts"
import { type FixtureSite, loopbackOnlyEnv, startFixtureSite } from "../support/fixture-site.ts"
import { client, nodeBin, type RunningServer, startServer } from "../support/server-process.ts"

const run = promisify(execFile)
const root = resolve(import.meta.dirname, "../..")
const repoModules = join(root, "node_modules")

/**
 * The package as a user gets it (README.md, "Clients and the command line"): built, packed with `npm pack`, unpacked
 * into a scratch project whose dependencies are this repository's installed ones (no network),
 * then used from plain Node 24 and from a strict TypeScript project, against a real node.
 */
describe("the packed package", () => {
  let work: string
  let scratch: string
  let files: Array<string>
  let server: RunningServer
  let site: FixtureSite
  let guard: Record<string, string>
  const examples: Array<string> = []

  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), "trawl-pack-"))
    // A copy of the package's sources, so the build and pack never touch this checkout's dist/.
    const stage = join(work, "stage")
    for (const entry of ["package.json", "tsconfig.json", "tsconfig.build.json", "README.md", "bin", "src", "config", "docs"]) {
      cpSync(join(root, entry), join(stage, entry), { recursive: true })
    }
    symlinkSync(repoModules, join(stage, "node_modules"))
    await run(nodeBin, [join(repoModules, "typescript/bin/tsc"), "-p", "tsconfig.build.json"], { cwd: stage })
    const packed = await run("npm", ["pack", "--offline", "--ignore-scripts", "--json", "--pack-destination", work], {
      cwd: stage,
      env: { ...process.env, npm_config_offline: "true", npm_config_audit: "false", npm_config_fund: "false" }
    })
    const [info] = JSON.parse(packed.stdout) as Array<{ filename: string; files: Array<{ path: string }> }>
    files = info!.files.map((f) => f.path)

    // Installed as npm would place it, its dependencies linked from this repository.
    scratch = join(work, "scratch")
    cpSync(join(import.meta.dirname, "user-project"), scratch, { recursive: true })
    const installed = join(scratch, "node_modules/trawl")
    mkdirSync(installed, { recursive: true })
    await run("tar", ["xzf", join(work, info!.filename), "--strip-components=1", "-C", installed])
    const manifest = JSON.parse(readFileSync(join(installed, "package.json"), "utf8")) as { dependencies: Record<string, string> }
    for (const name of [...Object.keys(manifest.dependencies), "typescript", "@types/node"]) {
      const link = join(scratch, "node_modules", name)
      mkdirSync(dirname(link), { recursive: true })
      symlinkSync(join(repoModules, name), link)
    }

    // The README's client examples, as the package ships them, become files of the scratch project.
    const readme = readFileSync(join(installed, "README.md"), "utf8")
    for (const [, name, code] of readme.matchAll(/<!-- client-example: (\S+) -->\n```\w+\n([\s\S]*?)```/g)) {
      writeFileSync(join(scratch, name!), code!)
      examples.push(name!)
    }

    guard = loopbackOnlyEnv()
    site = await startFixtureSite()
    server = await startServer({ ALLOW_PRIVATE_TARGETS: "true", ...guard })
  }, 300_000)

  afterAll(async () => {
    await server?.stop()
    await site?.close()
    if (work) rmSync(work, { recursive: true, force: true })
  })

  it("holds the built entry points with their declarations, and no tests", () => {
    for (const f of ["dist/src/client/index.js", "dist/src/client/index.d.ts", "dist/src/webhooks/signing.js", "dist/src/webhooks/signing.d.ts", "dist/src/cli/main.js", "bin/trawl.mjs"]) {
      expect(files).toContain(f)
    }
    expect(files.filter((f) => f.startsWith("test/") || f.startsWith("node_modules/"))).toEqual([])
    // The client is the definition and its schemas: no server module is drawn into dist/.
    const built = readdirSync(join(scratch, "node_modules/trawl/dist/src"))
    expect(built.sort()).toEqual(["billing", "cli", "client", "http", "iam", "schema", "webhooks"])
  })

  it("works from plain Node 24: the Promise and the Effect client make real calls, the webhook helper verifies", async () => {
    const { apiKey } = await client(server.baseUrl).createTenant()
    const { stdout } = await run(nodeBin, ["use.mjs"], {
      cwd: scratch,
      env: { PATH: process.env.PATH ?? "", ...guard, TRAWL_URL: server.baseUrl, TRAWL_API_KEY: apiKey, TARGET_URL: site.url("/page") }
    })
    const out = JSON.parse(stdout)
    expect(out.created).toMatchObject({ url: site.url("/page"), status: "queued" })
    expect(out.created.id).toMatch(/^job_/)
    expect(out.missing).toEqual({ isError: true, status: 404, code: "not_found" })
    expect(out.effect).toMatchObject({ id: out.created.id, url: site.url("/page"), failure: { status: 404, code: "not_found" } })
    // The service's error class (its name is the definition's), not a transport or decoding failure.
    expect(["HttpClientError", "SchemaError"]).not.toContain(out.effect.failure.tag)
    expect(out.webhook).toMatchObject({ ok: true })

    // The installed binary runs the build (no tsx, no source compilation).
    const cli = await runCli(["jobs", "get", out.created.id, "--json"], { ...guard, TRAWL_URL: server.baseUrl, TRAWL_API_KEY: apiKey, TRAWL_CLI_FROM_SOURCE: "0" }, {
      bin: join(scratch, "node_modules/trawl/bin/trawl.mjs"),
      cwd: scratch
    })
    expect(cli.code, cli.stderr).toBe(0)
    expect(JSON.parse(cli.stdout)).toMatchObject({ id: out.created.id, url: site.url("/page") })
  }, 180_000)

  it("runs the README's examples of both clients as written", async () => {
    expect(examples).toEqual(["promise.mjs", "effect.ts"])
    const { apiKey } = await client(server.baseUrl).createTenant()
    const env = { PATH: process.env.PATH ?? "", ...guard, TRAWL_URL: server.baseUrl, TRAWL_API_KEY: apiKey }
    for (const example of examples) {
      const { stdout } = await run(nodeBin, [example, site.url(`/page?example=${example}`)], { cwd: scratch, env })
      const lines = stdout.trim().split("\n")
      expect(lines, example).toHaveLength(2)
      expect(lines[0], example).toMatch(/^created job_\S+ queued$/)
      expect(lines[1], example).toBe("refused 404 not_found")
    }
  }, 180_000)

  it("type-checks in a strict TypeScript project (TypeScript 7, no skipLibCheck)", async () => {
    const result = await run(nodeBin, [join(repoModules, "typescript/bin/tsc"), "-p", "tsconfig.json"], { cwd: scratch }).then(
      () => ({ code: 0, output: "" }),
      (e: { code: number; stdout: string }) => ({ code: e.code, output: e.stdout })
    )
    expect(result.output).toBe("")
    expect(result.code).toBe(0)
  }, 180_000)
})
