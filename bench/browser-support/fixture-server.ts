/**
 * The local site of `npm run bench:browser`, in its own process so that its memory and CPU are not
 * counted as Trawl's. Listens on 127.0.0.1 only, on an ephemeral port.
 *
 *   GET /page/<n>       a 50-200 KB HTML article; by n % 6 it also has images, CSS, a script that
 *                       allocates memory and builds DOM, a late fetch(), a canvas, or nothing extra
 *   GET /img/<n>-<k>.png, /css/<n>.css, /js/<n>.js, /data/<n>.json   its subresources
 *
 * URLs are distinct per n, so nothing is served from a cache. Prints `fixture ready {"port":…}`;
 * exits when its stdin closes (the bench went away).
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import { crc32, deflateSync } from "node:zlib"
import { exitWithParent } from "../support/processes.ts"
import { makeProse } from "../support/prose.ts"

const HOST = "127.0.0.1"

// Deterministic prose (xorshift), cut into section blocks; a page is blocks until its size is reached.
const { rand, sentence } = makeProse(
  0x1f2e3d4c,
  "the a of and to in harbour market river council report season weather freight station engineer valley " +
    "museum library bridge garden village railway summer winter morning evening north south quietly rapidly " +
    "announced described measured observed local regional annual water stone timber copper grain harvest"
)
const BLOCKS = 64
const blocks = Array.from({ length: BLOCKS }, (_, i) => {
  const ps = Array.from({ length: 3 }, () => `<p>${Array.from({ length: 4 }, sentence).join(" ")}</p>`).join("\n")
  return `<section class="s${i % 16}"><h2>Section ${i}</h2>\n${ps}\n</section>\n`
})

// Images: a small pool of real PNGs (noisy gradients, so they neither compress to nothing nor cost
// the fixture CPU per request), served under per-page URLs.
const png = (w: number, h: number, salt: number): Buffer => {
  const raw = Buffer.alloc((w * 3 + 1) * h)
  for (let y = 0; y < h; y++) {
    const row = y * (w * 3 + 1)
    raw[row] = 1 // PNG "Sub" filter: bytes are deltas to the pixel on the left, so gradients compress
    const prev = [0, 0, 0]
    for (let x = 0; x < w; x++) {
      const px = [(x * 255) / w + rand() * 6, (y * 255) / h + salt, ((x ^ y) & 0xc0) + rand() * 6]
      for (let c = 0; c < 3; c++) {
        const v = px[c]! & 0xff
        raw[row + 1 + x * 3 + c] = v - prev[c]!
        prev[c] = v
      }
    }
  }
  const chunk = (type: string, data: Buffer) => {
    const len = Buffer.alloc(4)
    len.writeUInt32BE(data.length)
    const td = Buffer.concat([Buffer.from(type, "latin1"), data])
    const crc = Buffer.alloc(4)
    crc.writeUInt32BE(crc32(td))
    return Buffer.concat([len, td, crc])
  }
  const ihdr = Buffer.alloc(13)
  ihdr.writeUInt32BE(w, 0)
  ihdr.writeUInt32BE(h, 4)
  ihdr[8] = 8 // bit depth
  ihdr[9] = 2 // RGB
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk("IHDR", ihdr), chunk("IDAT", deflateSync(raw)), chunk("IEND", Buffer.alloc(0))])
}
const images = Array.from({ length: 12 }, (_, i) => png(160 + ((i * 97) % 560), 120 + ((i * 61) % 420), i * 20))

const cssOf = (n: number) =>
  Array.from({ length: 300 }, (_, i) => `.s${i % 16} .c${n}-${i} { margin: ${i % 7}px; color: #${((n * 977 + i * 131) & 0xffffff).toString(16).padStart(6, "0")}; }`).join("\n") +
  `\nbody { font-family: serif; max-width: 60em; margin: auto }\nimg { display: block; max-width: 100% }\n`

/**
 * A script that keeps roughly 4-40 MB reachable until the page closes: typed arrays (off-heap), an object
 * graph and strings (V8 heap), DOM nodes, plus a timer that keeps producing garbage.
 */
const jsOf = (n: number) => `(function () {
  var mb = ${4 + (n % 9) * 4};
  var hold = window.__benchHold = [];
  for (var i = 0; i < mb / 2; i++) hold.push(new Float64Array(131072).fill(i));
  var objs = [];
  for (var j = 0; j < mb * 4000; j++) objs.push({ id: j, name: "item-" + j, tags: ["a" + (j % 13), "b" + (j % 7)] });
  hold.push(objs);
  var list = document.createElement("ul");
  for (var k = 0; k < 1500 + (${n} % 5) * 500; k++) {
    var li = document.createElement("li");
    li.className = "c${n}-" + (k % 300);
    li.textContent = "generated row " + k + " of page ${n}";
    list.appendChild(li);
  }
  document.body.appendChild(list);
  var ticks = 0;
  setInterval(function () { ticks++; window.__benchGarbage = new Array(20000).fill(ticks).map(String); }, 100);
})();
`

const dataOf = (n: number) => JSON.stringify({ page: n, rows: Array.from({ length: 400 }, (_, i) => ({ i, label: `row ${i} of ${n}`, value: (i * n) % 1000 })) })

const pageOf = (n: number): string => {
  const kind = n % 6
  const target = 50_000 + ((n * 7919) % 150_000) // 50-200 KB
  const head: string[] = [`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Bench page ${n}</title>`]
  const extra: string[] = []
  if (kind === 1 || kind === 3) head.push(`<link rel="stylesheet" href="/css/${n}.css">`)
  if (kind === 1 || kind === 3) for (let k = 0; k < 4; k++) extra.push(`<img src="/img/${n}-${k}.png" alt="figure ${k}">`)
  if (kind === 2 || kind === 3) extra.push(`<script src="/js/${n}.js"></script>`)
  if (kind === 4) {
    // content that arrives after load: network idle is reached only after this fetch
    extra.push(`<div id="late"></div><script>setTimeout(function () { fetch("/data/${n}.json").then(function (r) { return r.json() }).then(function (d) {
      document.getElementById("late").textContent = d.rows.map(function (r) { return r.label }).join(", ") }) }, 300)</script>`)
  }
  if (kind === 5) {
    extra.push(`<canvas id="cv" width="1200" height="900"></canvas><script>(function () { var c = document.getElementById("cv").getContext("2d");
      for (var i = 0; i < 400; i++) { var g = c.createLinearGradient(0, 0, 1200, 900); g.addColorStop(0, "hsl(" + i + ",70%,50%)"); g.addColorStop(1, "#${(n & 0xfff).toString(16).padStart(3, "0")}");
      c.fillStyle = g; c.fillRect((i * 37) % 1100, (i * 53) % 800, 100, 100) } })()</script>`)
  }
  head.push(`</head><body><main><article><h1>Article ${n}</h1>\n`)
  const tail = `<p>End of article ${n}.</p></article></main><footer>Bench site</footer></body></html>\n`
  const parts = [...head, ...extra]
  let size = parts.reduce((a, p) => a + p.length, tail.length)
  const stride = [1, 3, 5, 7, 9, 11, 13, 15][n % 8]!
  for (let i = 0; size < target; i++) {
    const b = blocks[(n + i * stride) % BLOCKS]!
    parts.push(b)
    size += b.length
  }
  parts.push(tail)
  return parts.join("")
}

const send = (res: ServerResponse, type: string, body: string | Buffer) =>
  res.writeHead(200, { "content-type": type, "content-length": Buffer.byteLength(body) }).end(body)

const handler = (req: IncomingMessage, res: ServerResponse) => {
  const m = /^\/(page|img|css|js|data)\/(\d+)(?:-(\d+))?/.exec(req.url ?? "")
  if (!m) return res.writeHead(404, { "content-type": "text/plain" }).end("not found")
  const n = Number(m[2])
  switch (m[1]) {
    case "page":
      return send(res, "text/html; charset=utf-8", pageOf(n))
    case "img":
      return send(res, "image/png", images[(n * 3 + Number(m[3] ?? 0)) % images.length]!)
    case "css":
      return send(res, "text/css", cssOf(n))
    case "js":
      return send(res, "application/javascript", jsOf(n))
    default:
      return send(res, "application/json", dataOf(n))
  }
}

const server = createServer({ keepAliveTimeout: 30_000 }, handler)
server.listen(0, HOST, () => {
  exitWithParent(() => server.closeAllConnections())
  const port = (server.address() as { port: number }).port
  const imageBytes = images.reduce((a, b) => a + b.length, 0)
  console.log(`fixture ready ${JSON.stringify({ port, imageKB: Math.round(imageBytes / images.length / 1024) })}`)
})
server.on("error", (error) => {
  console.error("fixture server failed:", error)
  process.exit(1)
})
