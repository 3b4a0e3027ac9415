import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Fiber, Layer } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Config, loadConfig } from "../../src/config.ts"
import { CrawlService, CrawlServiceLive } from "../../src/crawl/crawl-service.ts"
import { type Fixture, startFixture } from "./fixture.ts"

describe("CrawlService.crawl", () => {
  let site: Fixture
  let requested: Promise<void>
  let closed: Promise<void>
  beforeAll(async () => {
    let seen!: () => void
    let gone!: () => void
    requested = new Promise((resolve) => (seen = resolve))
    closed = new Promise((resolve) => (gone = resolve))
    // A page that never answers: only an aborted fetch ends its request.
    site = await startFixture({
      "/hang": (_req, res) => {
        seen()
        res.on("close", gone)
      }
    })
  })
  afterAll(() => site.close())

  const layer = CrawlServiceLive.pipe(
    Layer.provide(Layer.succeed(Config, loadConfig({ DATA_DIR: mkdtempSync(join(tmpdir(), "trawl-crawl-")), ALLOW_PRIVATE_TARGETS: "true" })))
  )

  it("stops its fetch when it is interrupted (a shard move, a shutdown), without the caller's signal", async () => {
    await Effect.runPromise(
      Effect.gen(function*() {
        const crawl = yield* CrawlService
        const fiber = yield* Effect.forkChild(crawl.crawl({
          url: site.url("/hang"),
          plan: [{ engine: "http", attempts: 1, timeoutMs: 60_000 }],
          jobTimeoutMs: 60_000,
          screenshot: false,
          signal: new AbortController().signal
        }))
        yield* Effect.promise(() => requested)
        yield* Fiber.interrupt(fiber)
        // Well before the page's 60 s timeout, the fixture sees the request go away.
        const outcome = yield* Effect.promise(() => Promise.race([closed.then(() => "closed"), new Promise((r) => setTimeout(() => r("still open"), 5_000))]))
        expect(outcome).toBe("closed")
      }).pipe(Effect.provide(layer), Effect.scoped)
    )
  }, 20_000)
})
