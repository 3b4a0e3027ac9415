import { spawn } from "node:child_process"
import { readFileSync } from "node:fs"
import { extname } from "node:path"
import { fileURLToPath } from "node:url"
import { Effect, Option } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { FetchHttpClient } from "effect/http"
import { make, type TrawlClient } from "../client/effect.ts"
import { CliFailure, ExitCode, markResponseErrors, note, printJson, printLine, table, toCliFailure } from "./output.ts"
import { endProgress, follow, summaryText, WatchState } from "./watch.ts"

/** Where the CLI talks to (docs/cli.md, "Configuration"). */
const settings = () => ({
  baseUrl: process.env.TRAWL_URL ?? "http://127.0.0.1:8080",
  apiKey: process.env.TRAWL_API_KEY,
  internalToken: process.env.TRAWL_INTERNAL_TOKEN ?? process.env.INTERNAL_TOKEN
})

/** Whether TRAWL_URL can be sent to at all (a malformed one is bad configuration, not an unreachable node). */
const isHttpUrl = (value: string) => {
  try {
    const url = new URL(value)
    return url.protocol === "http:" || url.protocol === "https:"
  } catch {
    return false
  }
}

const missing = (variable: string, why: string) =>
  new CliFailure({ exitCode: ExitCode.usage, code: "missing_config", message: `${variable} is not set: ${why}` })

/**
 * Runs `body` with the typed client, credentials from the environment; every failure becomes a
 * `CliFailure` (one line, one exit code).
 */
const withClient = <A, E>(
  need: "apiKey" | "internalToken",
  body: (client: TrawlClient) => Effect.Effect<A, E>
): Effect.Effect<A, CliFailure> =>
  Effect.gen(function*() {
    const s = settings()
    if (!isHttpUrl(s.baseUrl)) {
      return yield* new CliFailure({ exitCode: ExitCode.usage, code: "invalid_config", message: `TRAWL_URL is not an http(s) URL: ${JSON.stringify(s.baseUrl.slice(0, 200))}` })
    }
    if (need === "apiKey" && !s.apiKey) return yield* missing("TRAWL_API_KEY", "the API key to act with (trawl tenant create prints one)")
    if (need === "internalToken" && !s.internalToken) {
      return yield* missing("TRAWL_INTERNAL_TOKEN", "the node's internal token (the INTERNAL_TOKEN it runs with) is needed for the control plane")
    }
    const credentials = need === "apiKey" ? { apiKey: s.apiKey } : { internalToken: s.internalToken }
    const client = yield* make({ baseUrl: s.baseUrl, ...credentials, transformResponse: markResponseErrors })
    return yield* body(client)
  }).pipe(
    Effect.provide(FetchHttpClient.layer),
    Effect.mapError((e) => toCliFailure(e, settings().baseUrl))
  )

const json = Flag.Boolean("json").pipe(Flag.withDefault(false), Flag.withDescription("Print machine-readable JSON on stdout"))

// ---- serve -------------------------------------------------------------------------------

/** The package root, from src/cli/ or dist/src/cli/. */
export const packageRoot = () => fileURLToPath(new URL(import.meta.url.includes("/dist/src/cli/") ? "../../../" : "../../", import.meta.url))

const serve = Command.make("serve", {
  port: Flag.Int("port").pipe(Flag.optional, Flag.withDescription("Port to listen on (else PORT, else 8080)"))
}, ({ port }) =>
  // The node runs as its own process, exactly as `npm start` runs it; signals are passed on.
  Effect.callback<void, CliFailure>((resume) => {
    const child = spawn(process.execPath, ["src/main.ts"], {
      cwd: packageRoot(),
      stdio: "inherit",
      env: Option.isSome(port) ? { ...process.env, PORT: String(port.value) } : process.env
    })
    child.once("exit", (code, signal) => {
      // 130 is how the node itself reports a stop by signal (a Ctrl-C reaches the whole process group).
      if (code === 0 || code === 130 || signal === "SIGTERM" || signal === "SIGINT") resume(Effect.void)
      else resume(Effect.fail(new CliFailure({ exitCode: code ?? 1, code: "server_exited", message: `the node exited with ${code ?? signal}` })))
    })
    return Effect.sync(() => {
      if (child.exitCode === null) child.kill("SIGTERM")
    }).pipe(Effect.andThen(Effect.callback<void>((done) => {
      if (child.exitCode !== null || child.signalCode !== null) done(Effect.void)
      else child.once("exit", () => done(Effect.void))
    })))
  })).pipe(Command.withDescription("Run a node in this process's terminal (what npm start does)"))

// ---- tenant ------------------------------------------------------------------------------

const tenantCreate = Command.make("create", {
  name: Flag.String("name").pipe(Flag.withDescription("The tenant's name")),
  ownerEmail: Flag.String("owner-email").pipe(Flag.withDescription("The owner's e-mail address")),
  ownerPassword: Flag.String("owner-password").pipe(Flag.optional),
  plan: Flag.String("plan").pipe(Flag.optional, Flag.withDescription("Plan id (default starter)")),
  credits: Flag.String("credits").pipe(Flag.optional, Flag.withDescription("Starting credit in EUR, e.g. 10.00")),
  json
}, (o) =>
  withClient("internalToken", (client) =>
    client.control.createTenant({
      payload: {
        name: o.name,
        ownerEmail: o.ownerEmail,
        ...(Option.isSome(o.ownerPassword) ? { ownerPassword: o.ownerPassword.value } : {}),
        ...(Option.isSome(o.plan) ? { plan: o.plan.value } : {}),
        ...(Option.isSome(o.credits) ? { credits: o.credits.value } : {})
      }
    })).pipe(Effect.flatMap((t) =>
      o.json ? printJson(t) : printLine(
        `tenant ${t.tenantId} created\nowner identity ${t.ownerIdentityId}\nAPI key (shown once): ${t.apiKey}\n\nexport TRAWL_API_KEY=${t.apiKey}`
      )
    ))).pipe(Command.withDescription("Create a tenant with its owner and an owner API key (needs TRAWL_INTERNAL_TOKEN)"))

const tenant = Command.make("tenant").pipe(Command.withSubcommands([tenantCreate]), Command.withDescription("Tenants (control plane)"))

// ---- jobs --------------------------------------------------------------------------------

const jobRows = (jobs: ReadonlyArray<{ id: string; status: string; url: string; result?: { engine: string | null; httpStatus: number | null } | null }>) =>
  table(["ID", "STATUS", "ENGINE", "HTTP", "URL"], jobs.map((j) => [j.id, j.status, j.result?.engine ?? "-", String(j.result?.httpStatus ?? "-"), j.url]))

const jobsCreate = Command.make("create", {
  urls: Argument.String("url").pipe(Argument.variadic({ min: 1, max: 100 }), Argument.withDescription("URLs to fetch (1 to 100)")),
  wait: Flag.Boolean("wait").pipe(Flag.withDefault(false), Flag.withDescription("Wait until every job has finished, with progress")),
  priority: Flag.Int("priority").pipe(Flag.optional),
  json
}, (o) =>
  withClient("apiKey", (client) =>
    Effect.gen(function*() {
      const priority = Option.isSome(o.priority) ? { priority: o.priority.value } : {}
      const created = o.urls.length === 1
        ? [yield* client.jobs.create({ headers: {}, payload: { url: o.urls[0]!, ...priority } })]
        : yield* client.jobs.bulk({ headers: {}, payload: { jobs: o.urls.map((url) => ({ url, ...priority })) } }).pipe(
          Effect.tap((r) => Effect.forEach(r.failed, (f) => note(`refused ${f.url ?? `#${f.index}`}: ${f.reason}`))),
          Effect.map((r) => r.created)
        )
      const refused = o.urls.length - created.length
      if (!o.wait) {
        yield* o.json ? printJson(created) : printLine(jobRows(created))
        return refused === 0 ? ExitCode.ok : ExitCode.refused
      }
      const state = new WatchState(created.length)
      yield* follow(client, state, { ids: created.map((j) => j.id) }).pipe(Effect.ensuring(endProgress))
      const jobs = yield* Effect.forEach(created, (j) => client.jobs.get({ params: { id: j.id } }), { concurrency: 4 })
      yield* o.json ? printJson(jobs) : printLine(jobRows(jobs))
      if (refused > 0) return ExitCode.refused
      return jobs.every((j) => j.status === "done") ? ExitCode.ok : ExitCode.notDone
    })
  ).pipe(Effect.flatMap(exitWith))).pipe(Command.withDescription("Create crawl jobs; --wait follows them to the end"))

const jobsWatch = Command.make("watch", {
  ids: Argument.String("job-id").pipe(Argument.variadic(), Argument.withDescription("Jobs to follow until they finish (default: every job)")),
  count: Flag.Int("count").pipe(Flag.optional, Flag.withDescription("Stop after this many jobs have finished")),
  json
}, (o) =>
  Effect.gen(function*() {
    const limit = Option.getOrUndefined(o.count)
    const state = new WatchState(o.ids.length > 0 ? o.ids.length : limit)
    const report = Effect.suspend(() => (o.json ? printJson(state.summary()) : printLine(summaryText(state))))
    yield* withClient("apiKey", (client) =>
      follow(client, state, {
        ids: o.ids,
        ...(limit === undefined ? {} : { limit }),
        onConnected: note(`following the event stream of ${settings().baseUrl}`)
      })
    ).pipe(
      Effect.ensuring(endProgress),
      // Ctrl-C ends a watch: the summary of what it saw is still printed.
      Effect.onInterrupt(() => report)
    )
    yield* report
  })).pipe(Command.withDescription("Follow the event stream with a progress bar, then a summary by status and engine"))

const jobsGet = Command.make("get", { id: Argument.String("job-id"), json }, (o) =>
  withClient("apiKey", (client) => client.jobs.get({ params: { id: o.id } })).pipe(
    Effect.flatMap((job) => (o.json ? printJson(job) : printLine(jobRows([job]))))
  )).pipe(Command.withDescription("Show one job"))

const jobs = Command.make("jobs").pipe(Command.withSubcommands([jobsCreate, jobsWatch, jobsGet]), Command.withDescription("Crawl jobs"))

// ---- extract -----------------------------------------------------------------------------

const formats: Record<string, "html" | "markdown" | "text" | "json"> = { ".md": "markdown", ".markdown": "markdown", ".txt": "text", ".json": "json" }
const EXTRACTION_OVER = new Set(["done", "dead", "cancelled"])

const extract = Command.make("extract", {
  source: Argument.String("url-or-file").pipe(Argument.withDescription("An http(s) URL to fetch, or a local file (html, .md, .txt, .json)")),
  type: Flag.Literals("type", ["article", "product"]).pipe(Flag.withDescription("What to extract")),
  json
}, (o) =>
  Effect.gen(function*() {
    const isUrl = /^https?:\/\//i.test(o.source)
    let input: string | undefined
    if (!isUrl) {
      input = yield* Effect.try({
        try: () => readFileSync(o.source, "utf8"),
        catch: (e) => new CliFailure({ exitCode: ExitCode.usage, code: "unreadable_file", message: `cannot read ${o.source}: ${(e as Error).message}` })
      })
    }
    const result = yield* withClient("apiKey", (client) =>
      Effect.gen(function*() {
        const created = yield* client.extractions.create({
          headers: {},
          payload: isUrl
            ? { type: o.type, url: o.source }
            : { type: o.type, input: input!, inputFormat: formats[extname(o.source).toLowerCase()] ?? "html" }
        })
        // Extraction runs in the background; it is read again until it is over.
        let extraction = yield* client.extractions.get({ params: { id: created.id } })
        while (!EXTRACTION_OVER.has(extraction.status)) {
          yield* Effect.sleep("300 millis")
          extraction = yield* client.extractions.get({ params: { id: created.id } })
        }
        return extraction
      }))
    // The extraction as JSON is the output, with or without --json.
    yield* printJson(result)
    return yield* exitWith(result.status === "done" ? ExitCode.ok : ExitCode.notDone)
  })).pipe(Command.withDescription("Extract an article or product from a URL or a file, printed as JSON"))

// ---- keys --------------------------------------------------------------------------------

const keyRows = (keys: ReadonlyArray<{ id: string; name: string; keyPrefix: string; scope: string; expiresAt: unknown; revokedAt: unknown }>) =>
  table(["ID", "NAME", "PREFIX", "SCOPE", "EXPIRES", "REVOKED"], keys.map((k) => [k.id, k.name, k.keyPrefix, k.scope, String(k.expiresAt ?? "-"), String(k.revokedAt ?? "-")]))

/** The keys belong to an identity: the one the current key acts as. */
const me = (client: TrawlClient) => client.users.me()

const keysList = Command.make("list", { json }, (o) =>
  withClient("apiKey", (client) =>
    me(client).pipe(Effect.flatMap((p) => client.iam.listApiKeys({ params: { id: p.identityId }, query: { limit: 200 } })))).pipe(
    Effect.flatMap(({ items }) => (o.json ? printJson(items) : printLine(keyRows(items))))
  )).pipe(Command.withDescription("List the API keys of the identity the current key acts as"))

const keysCreate = Command.make("create", {
  name: Flag.String("name"),
  role: Flag.String("role").pipe(Flag.optional, Flag.withDescription("Role id (default: the identity's default role)")),
  expiresAt: Flag.String("expires-at").pipe(Flag.optional, Flag.withDescription("ISO date-time after which the key stops working")),
  password: Flag.String("current-password").pipe(Flag.optional, Flag.withDescription("The identity's password, when the service asks to reauthenticate (else TRAWL_PASSWORD)")),
  json
}, (o) =>
  withClient("apiKey", (client) =>
    Effect.gen(function*() {
      const profile = yield* me(client)
      const roleId = Option.getOrUndefined(o.role) ?? profile.defaultRoleId
      const password = Option.getOrUndefined(o.password) ?? process.env.TRAWL_PASSWORD
      if (!roleId) {
        return yield* new CliFailure({ exitCode: ExitCode.usage, code: "missing_role", message: "the identity has no default role: pass --role" })
      }
      return yield* client.iam.createApiKey({
        params: { id: profile.identityId },
        payload: {
          name: o.name,
          roleId,
          ...(Option.isSome(o.expiresAt) ? { expiresAt: o.expiresAt.value } : {}),
          ...(password === undefined ? {} : { currentPassword: password })
        }
      })
    })).pipe(Effect.flatMap((k) => (o.json ? printJson(k) : printLine(`${keyRows([k])}\n\nkey (shown once): ${k.rawKey}`))))).pipe(
    Command.withDescription("Create an API key; the raw key is shown once")
  )

const keysRevoke = Command.make("revoke", { id: Argument.String("key-id"), json }, (o) =>
  withClient("apiKey", (client) =>
    me(client).pipe(Effect.flatMap((p) => client.iam.revokeApiKey({ params: { id: p.identityId, kid: o.id } })))).pipe(
    Effect.flatMap((r) => (o.json ? printJson(r) : printLine(`key ${r.apiKeyId} revoked at ${String(r.revokedAt)}`)))
  )).pipe(Command.withDescription("Revoke an API key"))

const keys = Command.make("keys").pipe(Command.withSubcommands([keysList, keysCreate, keysRevoke]), Command.withDescription("API keys"))

// ---- history -----------------------------------------------------------------------------

const history = Command.make("history", {
  url: Argument.String("url"),
  diff: Flag.Boolean("diff").pipe(Flag.withDefault(false), Flag.withDescription("Show what changed in each version against the one before")),
  limit: Flag.Int("limit").pipe(Flag.withDefault(50)),
  json
}, (o) =>
  withClient("apiKey", (client) =>
    Effect.gen(function*() {
      const page = yield* client["page-history"].timeline({ query: { url: o.url, limit: o.limit } })
      const diffs = o.diff
        ? yield* Effect.forEach(page.items, (v) => client["page-history"].diff({ params: { versionId: v.id } }))
        : []
      if (o.json) return yield* printJson(o.diff ? page.items.map((v, i) => ({ ...v, diff: diffs[i] })) : page.items)
      yield* printLine(table(
        ["FETCHED", "VERSION", "HTTP", "SIZE", "CHANGED", "JOB"],
        page.items.map((v) => [String(v.fetchedAt), v.id, String(v.httpStatus ?? "-"), String(v.size), v.changed ? "yes" : "no", v.jobId])
      ))
      for (const [i, d] of diffs.entries()) {
        if (!d.changed || d.previousVersionId === null) continue
        // The service's diff is unified and names both versions itself.
        yield* printLine(d.binary ? `\n${page.items[i]!.id}: binary content differs from ${d.previousVersionId}` : `\n${d.diff.trimEnd()}`)
      }
    }))).pipe(Command.withDescription("The stored versions of a page; --diff shows their changes"))

// ---- the whole ---------------------------------------------------------------------------

/** A command's chosen exit code, carried to the process exit (0 needs nothing). */
function exitWith(code: number): Effect.Effect<void, CliFailure> {
  return code === ExitCode.ok ? Effect.void : Effect.fail(new CliFailure({ exitCode: code, code: "", message: "" }))
}

export const trawl = Command.make("trawl").pipe(
  Command.withSubcommands([serve, tenant, jobs, extract, keys, history]),
  Command.withDescription("Trawl from the command line: TRAWL_URL, TRAWL_API_KEY (docs/cli.md)")
)
