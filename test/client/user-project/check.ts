// A strict TypeScript project using the installed package: the declarations must carry real types.
import { Effect } from "effect"
import { FetchHttpClient } from "effect/http"
import { createClient, make, type TrawlClient, type TrawlPromiseClient } from "trawl/client"
import { verifyWebhookSignature, type VerifyResult } from "trawl/webhooks"

export const promiseUse = async (trawl: TrawlPromiseClient): Promise<string> => {
  const job = await trawl.jobs.create({ payload: { url: "https://example.com/" } })
  const status: "queued" | "claimed" | "done" | "failed" | "dead" = job.status
  // @ts-expect-error a job has no field of that name
  job.nonexistent
  // @ts-expect-error the body is checked against the definition's schema
  await trawl.jobs.create({ payload: { address: "https://example.com/" } })
  const health = await trawl.system.healthz()
  const alive: boolean = health.alive
  return `${status} ${alive}`
}

export const effectUse = (client: TrawlClient) =>
  client.jobs.get({ params: { id: "job_x" } }).pipe(
    // The refusal is a typed failure with the service's status and code.
    Effect.catchTag("NotFound", (e) => Effect.succeed({ refused: `${e.status} ${e.code}` }))
  )

export const program = Effect.gen(function*() {
  const client = yield* make({ baseUrl: "http://127.0.0.1:8080", apiKey: "trawl_x" })
  return yield* effectUse(client)
}).pipe(Effect.provide(FetchHttpClient.layer))

export const made: TrawlPromiseClient = createClient({ baseUrl: "http://127.0.0.1:8080" })
export const verified: VerifyResult = verifyWebhookSignature({ secret: "s", rawBody: "{}", headers: {} })
