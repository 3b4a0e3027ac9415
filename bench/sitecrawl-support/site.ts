/**
 * The generated site of `npm run bench:sitecrawl`, in its own process so that its CPU is counted for
 * neither crawler. One loopback address (one site, one domain for Trawl's politeness limit), one
 * ephemeral port.
 *
 *   GET /s/<k>/<i>   page i (0 <= i < SITE_PAGES) of site section k; page 0 is the seed
 *   GET /robots.txt  404 (everything allowed; Crawlee does not read it by default, Trawl reads it once)
 *   GET /__counts?prefix=/s/<k>/   {distinct, fetches, duplicates, other} for that section (not counted)
 *   anything else    404 (counted as "other")
 *
 * Link graph (deterministic): page i links to its children 5i+1 .. 5i+5 (so every page is reachable
 * from page 0, at most 5 links deep for 1000 pages), to its parent, to page 0, and to three pages
 * picked by a PRNG seeded with i; one child link is repeated with a fragment and one as an absolute
 * URL, so that both crawlers have duplicates to recognise. Sizes vary from ~1 KB to ~60 KB by i.
 * Every section k is the same graph under its own prefix, so each round crawls URLs never fetched before.
 *
 * Env: SITE_HOST (default 127.0.0.2), SITE_PAGES (default 1000). Prints `site ready <json>`; exits
 * when its stdin closes.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import { exitWithParent } from "../support/processes.ts"
import { makeProse } from "../support/prose.ts"

const host = process.env.SITE_HOST ?? "127.0.0.2"
const pageCount = Number(process.env.SITE_PAGES ?? 1000)
if (!/^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host)) throw new Error(`the site listens on loopback only, not ${host}`)
if (!Number.isInteger(pageCount) || pageCount < 1) throw new Error("SITE_PAGES must be a positive integer")

const { sentence } = makeProse(
  0x5eed_c4a1,
  "the a of and to in crawler frontier sitemap harbour archive river valley station council garden " +
    "library bridge museum survey record ferry coast island orchard lantern mill timber copper grain " +
    "north south quietly steadily described measured annual regional local morning evening season"
)
const BLOCKS = 48
const blocks = Array.from({ length: BLOCKS }, (_, b) =>
  `<section><h2>Part ${b}</h2>\n` + Array.from({ length: 3 }, () => `<p>${Array.from({ length: 4 }, sentence).join(" ")}</p>`).join("\n") + `\n</section>\n`
)

/** A small PRNG per page, so that a page's links do not depend on which pages were served before. */
const pick = (i: number, n: number): Array<number> => {
  let s = (i + 1) * 0x9e3779b1
  const out: Array<number> = []
  for (let k = 0; k < n; k++) {
    s ^= s << 13
    s ^= s >>> 17
    s ^= s << 5
    out.push((s >>> 0) % pageCount)
  }
  return out
}

/** The links of page i, as page numbers (repeats and fragments are added when rendering). */
const linksOf = (i: number): Array<number> => {
  const children = [1, 2, 3, 4, 5].map((c) => 5 * i + c).filter((c) => c < pageCount)
  const parent = i === 0 ? [] : [Math.floor((i - 1) / 5)]
  return [...children, ...parent, 0, ...pick(i, 3)]
}

const render = (origin: string, prefix: string, i: number): Buffer => {
  const links = linksOf(i)
  const anchors = links.map((n) => `<li><a href="${prefix}${n}">Page ${n}</a></li>`)
  // The same pages again: one with a fragment, one absolute.
  const first = links[0]!
  anchors.push(`<li><a href="${prefix}${first}#details">Page ${first}, details</a></li>`)
  anchors.push(`<li><a href="${origin}${prefix}${links[links.length - 1]}">Page ${links[links.length - 1]} (absolute)</a></li>`)
  // ~1 KB to ~60 KB: 0 to 48 blocks of ~1.2 KB.
  const count = (i * 7) % 49
  const body: Array<string> = []
  for (let b = 0; b < count; b++) body.push(blocks[(i + b * 5) % BLOCKS]!)
  return Buffer.from(
    `<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>Site page ${i}</title>` +
      `<meta name="description" content="Generated page ${i}"></head>\n<body><header><nav><ul>${anchors.join("")}</ul></nav></header>\n` +
      `<main><article><h1>Page ${i}</h1>\n${body.join("")}<p>End of page ${i}.</p></article></main><footer>Generated site</footer></body></html>\n`
  )
}

/** Fetches per path (site pages only). */
const counts = new Map<string, number>()
let other = 0

const handler = (req: IncomingMessage, res: ServerResponse) => {
  const url = new URL(req.url ?? "/", "http://site")
  if (url.pathname === "/__counts") {
    const prefix = url.searchParams.get("prefix") ?? "/"
    let distinct = 0
    let fetches = 0
    for (const [path, n] of counts) {
      if (!path.startsWith(prefix)) continue
      distinct++
      fetches += n
    }
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ distinct, fetches, duplicates: fetches - distinct, other }))
    return
  }
  const m = /^(\/s\/\d+\/)(\d+)$/.exec(url.pathname)
  const i = m ? Number(m[2]) : -1
  if (!m || i >= pageCount || (req.method !== "GET" && req.method !== "HEAD")) {
    other++
    res.writeHead(404, { "content-type": "text/plain" }).end("not found")
    return
  }
  counts.set(url.pathname, (counts.get(url.pathname) ?? 0) + 1)
  const body = render(`http://${req.headers.host ?? host}`, m[1]!, i)
  res.writeHead(200, { "content-type": "text/html; charset=utf-8", "content-length": body.length })
  res.end(req.method === "HEAD" ? undefined : body)
}

const main = async () => {
  const server = createServer({ keepAliveTimeout: 60_000 }, handler)
  server.headersTimeout = 61_000
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject)
    server.listen(0, host, () => resolve())
  })
  const port = (server.address() as { port: number }).port
  exitWithParent(() => server.closeAllConnections())
  const sizes = Array.from({ length: Math.min(pageCount, 49) }, (_, i) => render(`http://${host}:${port}`, "/s/0/", i).length)
  console.log(`site ready ${JSON.stringify({ origin: `http://${host}:${port}`, pages: pageCount, minBytes: Math.min(...sizes), maxBytes: Math.max(...sizes) })}`)
}

main().catch((error) => {
  console.error("site failed:", error)
  process.exit(1)
})
