/**
 * The local fixture site of `npm run bench:crawl`, in its own process so that its CPU is counted
 * for none of the clients. It listens on several loopback addresses (env FIXTURE_HOSTS, e.g.
 * "127.0.0.2,127.0.0.3"), one ephemeral port each: every address is its own registrable domain
 * for Trawl's politeness limit.
 *
 *   GET /page/<n>   a ~PAGE_BYTES HTML article, distinct per n (title, headings, paragraph order)
 *   GET /warm/<n>   the same pages for warm-up runs
 *   GET /tiny/<n>   a small HTML page answered at once (job creation benchmark)
 *
 * Prints `fixture ready <json [{host, port}]>`; exits when its stdin closes.
 */
import { createServer, type Server } from "node:http"
import { exitWithParent } from "../support/processes.ts"
import { makeProse } from "../support/prose.ts"

const hosts = (process.env.FIXTURE_HOSTS ?? "127.0.0.2").split(",").map((h) => h.trim()).filter(Boolean)
const pageBytes = Number(process.env.PAGE_BYTES ?? 50_000)

// Deterministic prose: a small PRNG over a vocabulary, cut into paragraph blocks.
const { sentence } = makeProse(
  0x2545f491,
  "the a of and to in harbour market river council report season weather freight station " +
    "engineer valley museum library bridge garden village railway summer winter morning evening " +
    "north south quietly rapidly announced described measured observed local regional annual " +
    "water stone timber copper grain wool harvest festival schedule ferry coast island mountain " +
    "committee survey volunteer archive record history archive map lantern mill orchard"
)
const BLOCKS = 64
const blocks = Array.from({ length: BLOCKS }, (_, i) => {
  const ps = Array.from({ length: 3 }, () => `<p>${Array.from({ length: 4 }, sentence).join(" ")}</p>`).join("\n")
  return Buffer.from(`<section class="s${i}"><h2>Section ${i}</h2>\n${ps}\n</section>\n`)
})
const avgBlock = blocks.reduce((a, b) => a + b.length, 0) / BLOCKS

const pageOf = (kind: string, n: number): Buffer => {
  const head = Buffer.from(
    `<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>Fixture ${kind} ${n}</title>` +
      `<meta name="description" content="Fixture page ${n}"></head>\n<body><header><nav><a href="/">Home</a> ` +
      `<a href="/${kind}/${n + 1}">Next</a></nav></header>\n<main><article><h1>Article number ${n}</h1>\n`
  )
  const tail = Buffer.from(`<p>End of article ${n}.</p></article></main><footer>Fixture site</footer></body></html>\n`)
  const parts: Array<Buffer> = [head]
  let size = head.length + tail.length
  // Distinct per n: a different starting block and stride.
  const stride = [1, 3, 5, 7, 9, 11, 13, 15][n % 8]!
  for (let i = 0; size + avgBlock / 2 < pageBytes; i++) {
    const b = blocks[(n + i * stride) % BLOCKS]!
    parts.push(b)
    size += b.length
  }
  parts.push(tail)
  return Buffer.concat(parts, size)
}

const tinyOf = (n: number) =>
  Buffer.from(
    `<!doctype html><html><head><title>Tiny ${n}</title></head><body><main><h1>Tiny page ${n}</h1>` +
      `<p>A short page about the harbour and the ferry schedule, number ${n}.</p></main></body></html>\n`
  )

const counts = { page: 0, warm: 0, tiny: 0, other: 0 }

const handler = (req: import("node:http").IncomingMessage, res: import("node:http").ServerResponse) => {
  const m = /^\/(page|warm|tiny)\/(\d+)/.exec(req.url ?? "")
  if (!m || (req.method !== "GET" && req.method !== "HEAD")) {
    counts.other++
    res.writeHead(404, { "content-type": "text/plain" }).end("not found")
    return
  }
  const kind = m[1] as "page" | "warm" | "tiny"
  counts[kind]++
  const n = Number(m[2])
  const body = kind === "tiny" ? tinyOf(n) : pageOf(kind, n)
  res.writeHead(200, { "content-type": "text/html; charset=utf-8", "content-length": body.length })
  res.end(req.method === "HEAD" ? undefined : body)
}

const servers: Array<Server> = []
const main = async () => {
  const bound: Array<{ host: string; port: number }> = []
  for (const host of hosts) {
    const server = createServer({ keepAliveTimeout: 60_000 }, handler)
    server.keepAliveTimeout = 60_000
    server.headersTimeout = 61_000
    await new Promise<void>((res, rej) => {
      server.once("error", rej)
      server.listen(0, host, () => res())
    })
    servers.push(server)
    bound.push({ host, port: (server.address() as { port: number }).port })
  }
  exitWithParent(async () => {
    for (const s of servers) s.closeAllConnections()
  })
  process.on("SIGUSR2", () => console.log(`fixture counts ${JSON.stringify(counts)}`))
  console.log(`fixture ready ${JSON.stringify({ bound, sample: pageOf("page", 0).length })}`)
}

main().catch((error) => {
  console.error("fixture server failed:", error)
  process.exit(1)
})
