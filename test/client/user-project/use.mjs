// Plain Node 24, no TypeScript, no loader: what a user of the installed package writes.
import { Effect } from "effect"
import { FetchHttpClient } from "effect/http"
import { createClient, make } from "trawl/client"
import { signPayload, verifyWebhookSignature } from "trawl/webhooks"

const { TRAWL_URL: baseUrl, TRAWL_API_KEY: apiKey, TARGET_URL: target } = process.env
const out = {}

// The Promise client.
const trawl = createClient({ baseUrl, apiKey })
const job = await trawl.jobs.create({ payload: { url: target } })
out.created = job
try {
  await trawl.jobs.get({ params: { id: "job_doesnotexist" } })
  out.missing = "resolved"
} catch (e) {
  out.missing = { isError: e instanceof Error, status: e.status, code: e.code }
}

// The Effect client: the same call, the refusal as a typed failure.
out.effect = await Effect.runPromise(
  Effect.gen(function*() {
    const client = yield* make({ baseUrl, apiKey })
    const again = yield* client.jobs.get({ params: { id: job.id } })
    const failure = yield* Effect.flip(client.jobs.get({ params: { id: "job_doesnotexist" } }))
    return { id: again.id, url: again.url, failure: { tag: failure._tag, status: failure.status, code: failure.code } }
  }).pipe(Effect.provide(FetchHttpClient.layer))
)

// The webhook helper: a signature it made verifies.
const body = JSON.stringify({ id: job.id })
const timestamp = Math.floor(Date.now() / 1000)
const signature = signPayload("whsec_test", timestamp, body)
out.webhook = verifyWebhookSignature({ secret: "whsec_test", rawBody: body, headers: { "x-service-signature": signature, "x-service-timestamp": String(timestamp) } })

process.stdout.write(JSON.stringify(out))
