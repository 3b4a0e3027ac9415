import { spawnSync } from "node:child_process"
import { createSocket } from "node:dgram"
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import http from "node:http"
import https from "node:https"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createBraveEngine, createCamoufoxEngine, MAX_SCREENSHOT_BYTES, renderedContentType } from "../../src/crawl/engines/browser.ts"
import { Semaphore } from "../../src/crawl/semaphore.ts"
import { startGuardProxy } from "../../src/crawl/engines/guard-proxy.ts"
import { classifyAddress } from "../../src/crawl/ssrf.ts"
import { hostilePages } from "./hostile-pages.ts"
import { ARTICLE, type Fixture, fakeLookup, hasChromium, html, jsChallenge, NO_CHROMIUM_REASON, page, startFixture, testBrowserArgs } from "./fixture.ts"

const PNG_MAGIC = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])
const JPEG_MAGIC = Buffer.from([0xff, 0xd8, 0xff])

const hasOpenssl = spawnSync("openssl", ["version"]).status === 0

/** The pids of this process's Chromium children. */
const chromiumChildren = (): Array<string> =>
  spawnSync("ps", ["-o", "pid=,comm=", "--ppid", String(process.pid)], { encoding: "utf8" }).stdout
    .split("\n").filter((l) => /chrom/i.test(l)).map((l) => l.trim().split(/\s+/)[0]!)

/** A page that would stream 300 MB of HTML; counts what it sent. */
let endlessSent = 0
const endlessPage: import("./fixture.ts").Handler = (_req, res) => {
  res.writeHead(200, { "content-type": "text/html" })
  res.write("<!doctype html><html><body><p>")
  const chunk = Buffer.alloc(64 * 1024, "x")
  let sent = 0
  const pump = () => {
    while (!res.destroyed && sent < 300 * 1024 * 1024) {
      sent += chunk.length
      endlessSent += chunk.length
      if (!res.write(chunk)) return void res.once("drain", pump)
    }
    res.end("</p></body></html>")
  }
  pump()
}

/** A root, an intermediate and a leaf for public.example whose AIA names the intermediate at `aiaUrl`; the server sends the leaf alone. */
const makeChainWithAia = (dir: string, aiaUrl: string) => {
  writeFileSync(join(dir, "ext.cnf"), [
    "[ca]", "basicConstraints=critical,CA:TRUE", "keyUsage=critical,keyCertSign,cRLSign",
    "[leaf]", "basicConstraints=CA:FALSE", "keyUsage=critical,digitalSignature,keyEncipherment", "extendedKeyUsage=serverAuth",
    "subjectAltName=DNS:public.example", `authorityInfoAccess=caIssuers;URI:${aiaUrl}`
  ].join("\n"))
  const openssl = (...args: Array<string>) => {
    const r = spawnSync("openssl", args, { cwd: dir, encoding: "utf8" })
    if (r.status !== 0) throw new Error(`openssl ${args.join(" ")}: ${r.stderr}`)
  }
  openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "root.key", "-out", "root.pem", "-subj", "/CN=Trawl test root", "-days", "2", "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign")
  openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "int.key", "-out", "int.csr", "-subj", "/CN=Trawl test intermediate")
  openssl("x509", "-req", "-in", "int.csr", "-CA", "root.pem", "-CAkey", "root.key", "-CAcreateserial", "-out", "int.pem", "-days", "2", "-extfile", "ext.cnf", "-extensions", "ca")
  openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "leaf.key", "-out", "leaf.csr", "-subj", "/CN=public.example")
  openssl("x509", "-req", "-in", "leaf.csr", "-CA", "int.pem", "-CAkey", "int.key", "-CAcreateserial", "-out", "leaf.pem", "-days", "2", "-extfile", "ext.cnf", "-extensions", "leaf")
  openssl("x509", "-in", "int.pem", "-outform", "der", "-out", "int.der")
}

describe("the content type of a rendered page", () => {
  it("names utf-8, the charset the page is serialized in, whatever the site sent", () => {
    expect(renderedContentType("text/html; charset=windows-1252")).toBe("text/html; charset=utf-8")
    expect(renderedContentType("text/html;charset=Shift_JIS; foo=bar")).toBe("text/html; foo=bar; charset=utf-8")
    expect(renderedContentType("text/html")).toBe("text/html; charset=utf-8")
    expect(renderedContentType("application/xhtml+xml")).toBe("application/xhtml+xml; charset=utf-8")
    expect(renderedContentType("image/png")).toBe("image/png")
    expect(renderedContentType(null)).toBeNull()
  })
})

describe("camoufox without a binary", () => {
  it("is unavailable and answers engine_unavailable", async () => {
    const unset = createCamoufoxEngine({})
    expect(await unset.available()).toBe(false)
    expect(await unset.fetch({ url: "http://127.0.0.1:9/", timeoutMs: 1000, allowPrivate: true })).toMatchObject({
      engine: "camoufox",
      classification: "engine_unavailable"
    })
    const missing = createCamoufoxEngine({ camoufoxPath: "/nonexistent/camoufox" })
    expect(await missing.available()).toBe(false)
  })
})

describe("a browser that never starts", () => {
  // A stand-in binary that never announces its DevTools endpoint, as a wedged browser would not:
  // Playwright waits for it for its whole launch timeout, and the attempt must not.
  let dir: string
  let binary: string
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "trawl-stuck-browser-"))
    binary = join(dir, "stuck-browser")
    writeFileSync(binary, "#!/bin/sh\nexec sleep 45\n")
    chmodSync(binary, 0o755)
  })
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it("answers cancelled soon after the signal, and timeout soon after the deadline", async () => {
    const engine = createBraveEngine({ bravePath: binary })
    const ac = new AbortController()
    setTimeout(() => ac.abort(), 300)
    let t = performance.now()
    const cancelled = await engine.fetch({ url: "http://127.0.0.1:9/", timeoutMs: 60_000, allowPrivate: true, signal: ac.signal })
    expect(cancelled.classification).toBe("cancelled")
    expect(performance.now() - t).toBeLessThan(10_000)
    t = performance.now()
    const late = await engine.fetch({ url: "http://127.0.0.1:9/", timeoutMs: 1_000, allowPrivate: true })
    expect(late.classification).toBe("timeout")
    expect(performance.now() - t).toBeLessThan(10_000)
    await engine.close?.()
  }, 30_000)
})

describe("guard proxy (no browser)", () => {
  it("refuses a CONNECT to a non-public address and records it", async () => {
    const internal = await startFixture({})
    const proxy = await startGuardProxy({ allowPrivate: false })
    const net = await import("node:net")
    const answer = await new Promise<string>((resolve) => {
      const s = net.connect(Number(new URL(proxy.url).port), "127.0.0.1", () => s.write(`CONNECT 127.0.0.1:${internal.port} HTTP/1.1\r\nHost: 127.0.0.1:${internal.port}\r\n\r\n`))
      let buf = ""
      s.on("data", (d) => (buf += d.toString()))
      s.on("close", () => resolve(buf))
    })
    expect(answer).toMatch(/^HTTP\/1.1 403/)
    expect(proxy.refused(`https://127.0.0.1:${internal.port}/x`)).toBeTruthy()
    expect(internal.connections()).toBe(0)
    await proxy.close()
    await internal.close()
  })

  it("cuts every connection once the targets sent more than its budget, and makes no new one", async () => {
    let sent = 0
    const endless = http.createServer((_req, res) => {
      res.writeHead(200, { "content-type": "text/html" })
      const chunk = Buffer.alloc(64 * 1024, "a")
      const pump = () => {
        while (!res.destroyed && sent < 200 * 1024 * 1024) {
          sent += chunk.length
          if (!res.write(chunk)) return void res.once("drain", pump)
        }
        res.end()
      }
      pump()
    })
    await new Promise<void>((r) => endless.listen(0, "127.0.0.1", () => r()))
    const target = `http://127.0.0.1:${(endless.address() as AddressInfo).port}/`
    const proxy = await startGuardProxy({ allowPrivate: true, maxInboundBytes: 1024 * 1024 })
    const fetchThrough = () => new Promise<number>((resolve) => {
      let got = 0
      const req = http.get({ host: "127.0.0.1", port: Number(new URL(proxy.url).port), path: target, headers: { host: new URL(target).host } }, (res) => {
        res.on("data", (d: Buffer) => (got += d.length))
        res.on("close", () => resolve(got))
        res.on("error", () => resolve(got))
      })
      req.on("error", () => resolve(got))
    })
    const got = await fetchThrough()
    expect(proxy.overBudget()).toBe(true)
    expect(got).toBeLessThan(4 * 1024 * 1024)
    // The target stopped being read: it got no further than its socket buffers allow.
    expect(sent).toBeLessThan(32 * 1024 * 1024)
    expect(await fetchThrough()).toBe(0)
    await proxy.close()
    await new Promise<void>((r) => endless.close(() => r()))
  })
})

const JSON_BODY = JSON.stringify({ a: 1, b: ["x", "y"] })
let slowImagesServed = 0
// A 1x1 transparent PNG.
const PNG_BYTES = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==", "base64")

describe.skipIf(!hasChromium)("brave engine (system Chromium)", () => {
  let site: Fixture
  /** When each pop-up asked /popup-ping, so a test can see whether any pop-up outlived its first moments. */
  const popupPings: number[] = []
  const engine = createBraveEngine({ launchArgs: testBrowserArgs(), maxPages: 2, recycleAfterPages: 5, settleMs: 500 })
  beforeAll(async () => {
    site = await startFixture({
      "/ok": page(200, ARTICLE),
      "/js": page(200, html(`<div id="app"></div><script>document.getElementById("app").textContent = "content injected by JavaScript"</script>`)),
      "/challenge": jsChallenge,
      "/forbidden": page(403, html("<h1>Forbidden</h1>")),
      "/boom": page(500, html("<h1>Oops</h1>")),
      "/redirect": (_req, res) => res.writeHead(302, { location: "/ok" }).end(),
      "/redirect-with-credentials": (req, res) => res.writeHead(302, { location: `http://user:pw@${req.headers.host}/ok` }).end(),
      "/redirect-to-file": (_req, res) => res.writeHead(302, { location: "file:///etc/hostname" }).end(),
      "/tall": page(200, html(`<div style="height:3000px;background:linear-gradient(red,blue)">tall page</div>`)),
      "/big": page(200, html(`<p>${"z".repeat(300 * 1024)}</p>`)),
      "/endless": endlessPage,
      // A page whose script redefines what a reader in its own world would call.
      "/tampers": page(200, html(`<h1>Real content</h1><p>${"words ".repeat(50)}</p><script>
        Object.defineProperty(Element.prototype, "outerHTML", { get() { throw new Error("no") } })
        XMLSerializer.prototype.serializeToString = () => "x".repeat(50000000)
      </script>`)),
      // Refreshes itself at once; every reload after the first sends its text only 400 ms after its
      // head, so a read most likely finds the document half parsed.
      "/refresh-slow": (req, res) => {
        const first = !req.url!.includes("again")
        res.writeHead(200, { "content-type": "text/html; charset=utf-8" })
        res.write(`<!doctype html><html><head><meta http-equiv="refresh" content="0;url=/refresh-slow?again"></head><body>`)
        const rest = () => res.end(`<h1>Refreshing slowly</h1><p>${"words ".repeat(30)}</p></body></html>`)
        if (first) return rest()
        const t = setTimeout(rest, 400)
        res.on("close", () => clearTimeout(t))
      },
      "/with-image": page(200, html(`<h1>A page with a picture</h1><img src="/png" width="10" height="10">`)),
      "/builds-big": page(200, html(`<p id="p"></p><script>document.getElementById("p").textContent = "y".repeat(400 * 1024)</script>`)),
      "/json": (_req, res) => res.writeHead(200, { "content-type": "application/json" }).end(JSON_BODY),
      "/png": (_req, res) => res.writeHead(200, { "content-type": "image/png" }).end(PNG_BYTES),
      "/empty": (_req, res) => res.writeHead(200, { "content-type": "text/html" }).end(),
      "/no-content": (_req, res) => res.writeHead(204).end(),
      // A target posing as the guard proxy: its headers must not make it anything but a page.
      "/spoof": (_req, res) => res.writeHead(502, { "content-type": "text/html", "x-trawl-proxy-error": "ABORT_ERR", "x-trawl-refused": "1" }).end(html("<h1>Gateway trouble</h1>")),
      "/blank": (_req, res) => res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(" \n\t "),
      // Blanks past what the browser keeps of a body for reading back (its buffer is about 10 MB, and 20 MB was not read).
      "/blank-big": (_req, res) => res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(" ".repeat(24 * 1024 * 1024)),
      // Pop-ups (/popups, /popup-target, /popup-ping), a memory hog (/hog), a page reloading itself (/refresh-loop).
      ...hostilePages,
      "/popup-ping": (_req, res) => {
        popupPings.push(Date.now())
        res.writeHead(204).end()
      },
      // The pop-ups of /popups, on a page that loads for three seconds after opening them.
      "/popups-held": page(200, html(`<h1>Opens pop-ups</h1><script>for (let i = 0; i < 5; i++) window.open("/popup-target?i=" + i, "_blank", "noopener")</script>
        <img src="/held-img" width="10" height="10">`)),
      "/held-img": (_req, res) => {
        const t = setTimeout(() => res.writeHead(200, { "content-type": "image/png" }).end(PNG_BYTES), 3_000)
        res.on("close", () => clearTimeout(t))
      },
      // A busy canvas as tall as three screens: its full-page PNG is about 14 MB.
      "/noise": page(200, html(`<canvas id="c" width="1366" height="2600"></canvas><script>
        const c = document.getElementById("c").getContext("2d"), img = c.createImageData(1366, 2600)
        crypto.getRandomValues(new Uint8Array(img.data.buffer, 0, 65536))
        for (let i = 0; i < img.data.length; i += 65536) crypto.getRandomValues(new Uint8Array(img.data.buffer, i, Math.min(65536, img.data.length - i)))
        for (let i = 3; i < img.data.length; i += 4) img.data[i] = 255
        c.putImageData(img, 0, 0)
      </script>`)),
      // Its load event never fires: the image never answers.
      "/never-loads": page(200, html(`<h1>Read me anyway</h1><img src="/hang" width="10" height="10">`)),
      "/hang": (_req, res) => {
        const t = setTimeout(() => res.end(), 120_000)
        res.on("close", () => clearTimeout(t))
      },
      // Twelve lazy images, one per 700 px: only the first come into view without scrolling.
      "/lazy": page(200, html(Array.from({ length: 12 }, (_, i) => `<img loading="lazy" src="/lazy-img?i=${i}" width="10" height="10" style="display:block;margin-top:700px">`).join(""))),
      "/lazy-img": (_req, res) => res.writeHead(200, { "content-type": "image/png" }).end(PNG_BYTES),
      // The same, each image answered after a second; counts the answers finished.
      "/lazy-slow": page(200, html(Array.from({ length: 6 }, (_, i) => `<img loading="lazy" src="/slow-img?i=${i}" width="10" height="10" style="display:block;margin-top:1500px">`).join(""))),
      "/slow-img": (_req, res) => {
        const t = setTimeout(() => res.writeHead(200, { "content-type": "image/png" }).end(PNG_BYTES, () => slowImagesServed++), 1_000)
        res.on("close", () => clearTimeout(t))
      },
      // A page whose scripts break what a scroll in their own world would call.
      "/hostile-scroll": page(200, html(`<h1>Hostile</h1><div style="height:3000px"></div><script>
        window.scrollTo = () => new Promise(() => {})
        Object.defineProperty(Element.prototype, "scrollHeight", { get() { return 1e9 } })
        Object.defineProperty(HTMLImageElement.prototype, "complete", { get() { return false } })
      </script>`)),
      "/latin1-json": (_req, res) => res.writeHead(200, { "content-type": "application/json; charset=iso-8859-1" }).end(Buffer.from('{"name":"caf\u00e9"}', "latin1")),
      "/png-binary-charset": (_req, res) => res.writeHead(200, { "content-type": "image/png; charset=binary" }).end(PNG_BYTES),
      // A page that moves on as soon as it is scrolled.
      "/nav-on-scroll": page(200, html(`<h1>Before the scroll</h1><div style="height:4000px"></div><script>addEventListener("scroll", () => { location.href = "/ok" }, { once: true })</script>`)),
      "/latin1-text": (_req, res) => res.writeHead(200, { "content-type": "text/plain; charset=iso-8859-1" }).end(Buffer.from("caf\u00e9 cr\u00e8me", "latin1")),
      "/source-text": (_req, res) => res.writeHead(200, { "content-type": "text/plain; charset=utf-8" }).end("<!DOCTYPE html><html><body>shown as text</body></html>"),
      // Answers Chromium shows nothing for and fails its navigation on.
      "/empty-403": (_req, res) => res.writeHead(403).end(),
      "/empty-404": (_req, res) => res.writeHead(404).end(),
      "/empty-500": (_req, res) => res.writeHead(500).end(),
      "/auth": (_req, res) => res.writeHead(401, { "www-authenticate": 'Basic realm="x"' }).end(),
      "/png-untyped": (req, _res) => {
        req.socket.end(Buffer.concat([Buffer.from(`HTTP/1.1 200 OK\r\nContent-Length: ${PNG_BYTES.length}\r\nConnection: close\r\n\r\n`), PNG_BYTES]))
      },
      "/pdf": (_req, res) => res.writeHead(200, { "content-type": "application/pdf" }).end("%PDF-1.4\n%%EOF\n"),
      "/slow": (_req, res) => {
        const t = setTimeout(() => res.writeHead(200).end(ARTICLE), 15_000)
        res.on("close", () => clearTimeout(t))
      }
    })
  })
  afterAll(async () => {
    await engine.close?.()
    await site.close()
  })
  const get = (path: string, extra: Partial<Parameters<typeof engine.fetch>[0]> = {}) =>
    engine.fetch({ url: site.url(path), timeoutMs: 20_000, allowPrivate: true, ...extra })

  it("renders a page, including content injected by JavaScript", async () => {
    const a = await get("/js")
    expect(a).toMatchObject({ engine: "brave", classification: "ok", httpStatus: 200, finalUrl: site.url("/js") })
    expect(a.body!.toString()).toContain("content injected by JavaScript")
    expect(a.contentType).toContain("text/html")
    expect(a.bytes).toBe(a.body!.byteLength)
  })

  it("passes a JS cookie challenge that blocks plain HTTP", async () => {
    const a = await get("/challenge")
    expect(a).toMatchObject({ classification: "ok", httpStatus: 200 })
    expect(a.body!.toString()).toContain("Real content behind the wall")
  })

  it("takes real PNG and JPEG screenshots", async () => {
    const png = await get("/ok", { screenshot: { format: "png" } })
    expect(png.screenshot!.subarray(0, 8).equals(PNG_MAGIC)).toBe(true)
    const jpeg = await get("/tall", { screenshot: { format: "jpeg", quality: 50, fullPage: true } })
    expect(jpeg.screenshot!.subarray(0, 3).equals(JPEG_MAGIC)).toBe(true)
    // full page: the image is taller than the 768 px viewport (JPEG SOF0/SOF2 height)
    const sof = jpeg.screenshot!.findIndex((b, i, buf) => b === 0xff && (buf[i + 1] === 0xc0 || buf[i + 1] === 0xc2))
    expect(jpeg.screenshot!.readUInt16BE(sof + 5)).toBeGreaterThan(768)
  })

  it("renders a screenshot without images when loadResources is false, and with them by default", async () => {
    const before = site.hits.filter((h) => h === "/png").length
    const withImages = await get("/with-image", { screenshot: { format: "png" } })
    const afterDefault = site.hits.filter((h) => h === "/png").length
    const without = await get("/with-image", { screenshot: { format: "png", loadResources: false } })
    expect(withImages.classification).toBe("ok")
    expect(without.classification).toBe("ok")
    expect(without.screenshot!.subarray(0, 8).equals(PNG_MAGIC)).toBe(true)
    expect(afterDefault - before).toBe(1)
    expect(site.hits.filter((h) => h === "/png").length).toBe(afterDefault)
  })

  it("reads a page whose load never ends (a resource that never answers) as it stands, within the attempt", async () => {
    const a = await get("/never-loads", { timeoutMs: 6_000 })
    expect(a.classification, a.error).toBe("ok")
    expect(a.body!.toString()).toContain("Read me anyway")
    expect(a.durationMs).toBeLessThan(6_000)
  })

  it("loads lazy images before a full-page screenshot", async () => {
    const lazyHits = () => site.hits.filter((h) => h.startsWith("/lazy-img")).length
    const before = lazyHits()
    const a = await get("/lazy", { screenshot: { format: "png", fullPage: true } })
    expect(a.classification).toBe("ok")
    expect(a.screenshot!.subarray(0, 8).equals(PNG_MAGIC)).toBe(true)
    expect(lazyHits() - before).toBe(12)
  })

  it("waits for the lazy images it made load before a full-page screenshot, and a page's scripts cannot hold it", async () => {
    slowImagesServed = 0
    const a = await get("/lazy-slow", { screenshot: { format: "png", fullPage: true } })
    expect(a.screenshot!.subarray(0, 8).equals(PNG_MAGIC)).toBe(true)
    expect(slowImagesServed).toBe(6)
    const hostile = await get("/hostile-scroll", { timeoutMs: 12_000, screenshot: { format: "png", fullPage: true } })
    expect(hostile.classification, hostile.error).toBe("ok")
    expect(hostile.screenshot!.subarray(0, 8).equals(PNG_MAGIC)).toBe(true)
    expect(hostile.durationMs).toBeLessThan(9_000)
  })

  it("keeps a text document that looks like HTML as the text it is", async () => {
    const a = await get("/source-text")
    expect(a.contentType).toBe("text/plain; charset=utf-8")
  })

  it("labels kept text with the charset its bytes are in, and keeps no spoilt bytes", async () => {
    for (const [path, text] of [["/latin1-text", "caf\u00e9 cr\u00e8me"], ["/latin1-json", '{"name":"caf\u00e9"}']] as const) {
      const a = await get(path)
      const charset = /charset=([^;\s]+)/.exec(a.contentType ?? "")?.[1] ?? "utf-8"
      expect(new TextDecoder(charset).decode(a.body!), path).toBe(text)
    }
    // An image that names a charset is decoded as text by Chromium: its bytes are not kept as the image.
    const png = await get("/png-binary-charset")
    if (png.contentType?.startsWith("image/png")) expect(png.body!.equals(PNG_BYTES)).toBe(true)
    else expect(png.contentType).toBe("text/html; charset=utf-8")
  })

  it("names the page its content came from, not where a screenshot's scrolling moved it", async () => {
    const a = await get("/nav-on-scroll", { screenshot: { format: "png", fullPage: true } })
    expect(a.body!.toString()).toContain("Before the scroll")
    expect(a.finalUrl).toBe(site.url("/nav-on-scroll"))
  })

  it("labels what it keeps of a document it could not read the bytes of as the markup it is", async () => {
    const a = await get("/pdf")
    expect(a.classification).toBe("ok")
    // Either the bytes the target sent, with their type, or the viewer's markup, as HTML.
    if (a.contentType === "application/pdf") expect(a.body!.toString().slice(0, 200)).toMatch(/^%PDF/)
    else {
      expect(a.contentType).toBe("text/html; charset=utf-8")
      expect(a.body!.toString().trimStart()).toMatch(/^</)
    }
  })

  it("keeps the bytes the target sent for a document the browser shows in a viewer (JSON, an image)", async () => {
    const json = await get("/json")
    // JSON is handed over decoded (it is UTF-8 by definition, so its bytes are the same), and labelled as UTF-8
    expect(json).toMatchObject({ classification: "ok", httpStatus: 200, contentType: "application/json; charset=utf-8", bytes: Buffer.byteLength(JSON_BODY) })
    expect(json.body!.toString()).toBe(JSON_BODY)
    const png = await get("/png")
    expect(png).toMatchObject({ classification: "ok", contentType: "image/png", bytes: PNG_BYTES.byteLength })
    expect(png.body!.equals(PNG_BYTES)).toBe(true)
  })

  it("answers empty for an empty or blank page, as the http engine does, though the browser shows an empty document", async () => {
    // An answer of no bytes keeps no bytes (as the http engine has it), not the browser's empty document.
    expect(await get("/empty")).toMatchObject({ classification: "empty", httpStatus: 200, bytes: 0 })
    expect((await get("/empty")).body!.byteLength).toBe(0)
    expect((await get("/blank")).classification).toBe("empty")
    // A 204 leaves the browser on its blank page, but the target answered: empty, with its status.
    expect(await get("/no-content")).toMatchObject({ classification: "empty", httpStatus: 204, finalUrl: site.url("/no-content") })
  })

  it("answers empty for a body of blanks too large to read back, which makes a bare document", async () => {
    expect(await get("/blank-big")).toMatchObject({ classification: "empty", httpStatus: 200 })
  })

  it("closes the pop-ups a page opens, so they cannot hold pages past the node's cap", async () => {
    const since = Date.now()
    const a = await get("/popups-held")
    const until = Date.now()
    expect(a.classification).toBe("ok")
    expect(a.durationMs).toBeGreaterThan(3_000)
    // Kept open, five pop-ups ask every 50 ms (throttled to a few times a second in the background)
    // from their first moment until the attempt ends and its context is closed, three seconds and
    // more: about twenty asks in the last fifth of that time, and as many with the machine's two
    // cores under four busy loops. Closed as they appear, they stop before; closing is asynchronous
    // and slow on a loaded machine (a CI run saw pop-ups ask for over 500 ms; under four busy loops
    // one asked past 70 % of the time), hence a window that grows with the attempt.
    const pings = popupPings.filter((t) => t >= since)
    const first = pings[0] ?? until
    const late = pings.filter((t) => t > first + (until - first) * 0.8)
    expect(late.length).toBeLessThan(5)
  })

  it("ends the attempt at once when a page's renderer crashes out of its capped heap", async () => {
    const a = await get("/hog", { timeoutMs: 30_000 })
    expect(a).toMatchObject({ classification: "connection_error", body: null })
    expect(a.error).toMatch(/renderer crashed/)
    expect(a.durationMs).toBeLessThan(15_000)
    // The engine goes on serving.
    expect((await get("/ok")).classification).toBe("ok")
  })

  it("does not call a page that keeps replacing its document empty", async () => {
    const a = await get("/refresh-loop", { timeoutMs: 10_000 })
    expect(a.classification, a.error).not.toBe("empty")
    if (a.classification === "ok") expect(a.body!.toString()).toContain("Refreshing")
  })

  it("reads a page that keeps replacing its document once the new document is parsed, not half way", async () => {
    const a = await get("/refresh-slow", { timeoutMs: 10_000 })
    expect(a.classification, a.error).toBe("ok")
    expect(a.body!.toString()).toContain("Refreshing slowly")
  })

  it("keeps no screenshot larger than MAX_SCREENSHOT_BYTES, and says why", async () => {
    const a = await get("/noise", { screenshot: { format: "png", fullPage: true } })
    expect(a.classification).toBe("ok")
    expect(a.screenshot).toBeNull()
    expect(a.screenshotUnavailable).toMatch(new RegExp(`more than the ${MAX_SCREENSHOT_BYTES} kept`))
  })

  it("reports a target that a page navigates to after its load, and that refuses the connection, as connection_error", async () => {
    const closed = http.createServer()
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve))
    const port = (closed.address() as { port: number }).port
    await new Promise<void>((resolve) => closed.close(() => resolve()))
    const moving = await startFixture({
      "/moves": page(200, html(`<h1>Here for a moment</h1><script>setTimeout(() => { location.href = "http://127.0.0.1:${port}/gone" }, 300)</script>
        <img src="/later" width="10" height="10">`)),
      "/later": (_req, res) => {
        const t = setTimeout(() => res.writeHead(200, { "content-type": "image/png" }).end(PNG_BYTES), 800)
        res.on("close", () => clearTimeout(t))
      }
    })
    try {
      const a = await engine.fetch({ url: moving.url("/moves"), timeoutMs: 20_000, allowPrivate: true })
      expect(a).toMatchObject({ classification: "connection_error", httpStatus: null, body: null })
      expect(a.error).toMatch(/ECONNREFUSED/)
    } finally {
      await moving.close()
    }
  })

  it("reports a target that refuses the connection as connection_error with no status, not the guard proxy's 502", async () => {
    const closed = http.createServer()
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve))
    const port = (closed.address() as { port: number }).port
    await new Promise<void>((resolve) => closed.close(() => resolve()))
    const a = await engine.fetch({ url: `http://127.0.0.1:${port}/`, timeoutMs: 20_000, allowPrivate: true })
    expect(a).toMatchObject({ classification: "connection_error", httpStatus: null, body: null })
    expect(a.error).toMatch(/ECONNREFUSED/)
    // A target's own 502, whatever headers it sends, is its answer.
    expect(await get("/spoof")).toMatchObject({ classification: "server_error", httpStatus: 502 })
  })

  it("records redirects", async () => {
    const a = await get("/redirect")
    expect(a).toMatchObject({ classification: "ok", finalUrl: site.url("/ok"), redirects: [site.url("/redirect")] })
  })

  it("refuses a redirect to a URL with credentials or another scheme as unsafe_url, as the http engine does", async () => {
    // Chromium follows the hop before its answer can be judged (its address is the guard proxy's to
    // refuse); what it brought back is not kept.
    const credentials = await get("/redirect-with-credentials")
    expect(credentials).toMatchObject({ classification: "unsafe_url", body: null })
    expect(credentials.error).toMatch(/credentials_in_url/)
    const file = await get("/redirect-to-file")
    expect(file).toMatchObject({ classification: "unsafe_url", body: null })
    expect(file.error).toMatch(/scheme_not_allowed/)
  })

  it("an answer Chromium shows nothing for is still the target's answer, with its status, as the http engine has it", async () => {
    expect(await get("/empty-403")).toMatchObject({ classification: "blocked", httpStatus: 403 })
    expect(await get("/empty-404")).toMatchObject({ classification: "not_found", httpStatus: 404, bytes: 0 })
    expect(await get("/empty-500")).toMatchObject({ classification: "server_error", httpStatus: 500 })
    expect(await get("/auth")).toMatchObject({ classification: "ok", httpStatus: 401 })
  })

  it("keeps the bytes of an answer without a type that the browser sniffs as an image", async () => {
    const a = await get("/png-untyped")
    expect(a).toMatchObject({ classification: "ok", httpStatus: 200, contentType: null, bytes: PNG_BYTES.byteLength })
    expect(a.body!.equals(PNG_BYTES)).toBe(true)
  })

  it("classifies 404, 403 and 500", async () => {
    expect(await get("/missing")).toMatchObject({ classification: "not_found", httpStatus: 404 })
    expect(await get("/forbidden")).toMatchObject({ classification: "blocked", httpStatus: 403 })
    expect(await get("/boom")).toMatchObject({ classification: "server_error", httpStatus: 500 })
  })

  it("caps the rendered HTML", async () => {
    const small = createBraveEngine({ launchArgs: testBrowserArgs(), maxBodyBytes: 100 * 1024, settleMs: 200 })
    const a = await small.fetch({ url: site.url("/big"), timeoutMs: 20_000, allowPrivate: true })
    // A page whose script builds a DOM past the cap: its markup is measured in the page, not read.
    const built = await small.fetch({ url: site.url("/builds-big"), timeoutMs: 20_000, allowPrivate: true })
    await small.close?.()
    expect(a).toMatchObject({ classification: "too_large", body: null })
    expect(built).toMatchObject({ classification: "too_large", body: null, httpStatus: 200 })
    expect(built.error).toMatch(/rendered HTML of \d+ characters/)
  })

  it("reads the page's markup where the page's scripts cannot change how it is read", async () => {
    const a = await get("/tampers")
    expect(a).toMatchObject({ classification: "ok", httpStatus: 200 })
    expect(a.body!.toString()).toContain("<h1>Real content</h1>")
    expect(a.body!.toString().startsWith("<!DOCTYPE html>") || a.body!.toString().startsWith("<!doctype html>")).toBe(true)
  })

  it("stops a page that downloads more than its transfer cap, while it downloads", async () => {
    const capped = createBraveEngine({ launchArgs: testBrowserArgs(), maxTransferBytes: 2 * 1024 * 1024, settleMs: 200 })
    const before = endlessSent
    const a = await capped.fetch({ url: site.url("/endless"), timeoutMs: 20_000, allowPrivate: true })
    await capped.close?.()
    expect(a).toMatchObject({ classification: "too_large", body: null })
    expect(a.error).toMatch(/downloaded more than 2097152 bytes/)
    // Cut off early: the target sent nowhere near the 300 MB it would have.
    expect(endlessSent - before).toBeLessThan(64 * 1024 * 1024)
  })

  it("shares one page cap among engines given the same page slots, and a close during a launch leaves no browser", async () => {
    const browsersBefore = new Set(chromiumChildren())
    const slots = new Semaphore(1)
    const a = createBraveEngine({ launchArgs: testBrowserArgs(), pageSlots: slots, settleMs: 100 })
    const b = createBraveEngine({ launchArgs: testBrowserArgs(), pageSlots: slots, settleMs: 100 })
    const first = a.fetch({ url: site.url("/slow"), timeoutMs: 2_000, allowPrivate: true })
    await new Promise((r) => setTimeout(r, 300))
    // The one slot is taken by the first engine's page: the second engine's fetch waits for it.
    const second = b.fetch({ url: site.url("/ok"), timeoutMs: 1_000, allowPrivate: true })
    expect((await second).classification).toBe("timeout")
    expect((await first).classification).toBe("timeout")
    await a.close?.()
    // Closed while it launches its browser: the fetch gets no page, and the browser is closed.
    const c = createBraveEngine({ launchArgs: testBrowserArgs(), settleMs: 100 })
    const during = c.fetch({ url: site.url("/ok"), timeoutMs: 20_000, allowPrivate: true })
    await new Promise((r) => setTimeout(r, 50))
    await c.close?.()
    expect((await during).classification).not.toBe("ok")
    await b.close?.()
    await new Promise((r) => setTimeout(r, 500))
    expect(chromiumChildren().filter((pid) => !browsersBefore.has(pid))).toEqual([])
  })

  it("times out", async () => {
    const t = performance.now()
    const a = await get("/slow", { timeoutMs: 1500 })
    expect(a.classification).toBe("timeout")
    expect(performance.now() - t).toBeLessThan(8000)
  })

  it("is cancelled by the signal", async () => {
    const ac = new AbortController()
    setTimeout(() => ac.abort(), 500)
    const a = await get("/slow", { signal: ac.signal })
    expect(a.classification).toBe("cancelled")
  })

  it("recycles the browser and keeps serving (more pages than recycleAfterPages, 2 at a time)", async () => {
    const results = await Promise.all(Array.from({ length: 7 }, () => get("/ok")))
    expect(results.map((r) => r.classification)).toEqual(new Array(7).fill("ok"))
  })

  it("refuses a loopback target when allowPrivate is false, before the browser connects", async () => {
    const before = site.connections()
    const a = await get("/ok", { allowPrivate: false })
    expect(a.classification).toBe("unsafe_url")
    expect(site.connections()).toBe(before)
  })

  describe("SSRF inside the browser", () => {
    // 127.0.0.2 plays a public site (test classifier); 127.0.0.1 plays an internal service.
    let pub: Fixture
    let internal: Fixture
    let guarded: ReturnType<typeof createBraveEngine>
    beforeAll(async () => {
      internal = await startFixture({ "/secret": page(200, html("<p>internal secret</p>")), "/pixel.png": page(200, "png") }, "127.0.0.1")
      pub = await startFixture(
        {
          "/ok": page(200, ARTICLE),
          "/redirect-to-internal": (_req, res) => res.writeHead(302, { location: `http://127.0.0.1:${internal.port}/secret` }).end(),
          "/redirect-to-evil-name": (_req, res) => res.writeHead(302, { location: `http://evil.example:${internal.port}/secret` }).end(),
          "/subresources": page(
            200,
            html(`${"<p>public page with embedded internal resources</p>".repeat(5)}
              <img src="http://127.0.0.1:${internal.port}/pixel.png">
              <img src="http://evil.example:${internal.port}/pixel.png">
              <script>fetch("http://127.0.0.1:${internal.port}/secret").catch(function(){})</script>`)
          )
        },
        "127.0.0.2"
      )
      guarded = createBraveEngine({
        // the browser resolves nothing itself; the guard (fake resolver) does
        launchArgs: testBrowserArgs(),
        settleMs: 500,
        lookup: fakeLookup({ "public.example": "127.0.0.2", "evil.example": "127.0.0.1" }),
        classify: (ip) => (ip === "127.0.0.2" ? "public" : classifyAddress(ip))
      })
    })
    afterAll(async () => {
      await guarded.close?.()
      await pub.close()
      await internal.close()
    })
    const fetchPub = (path: string) =>
      guarded.fetch({ url: `http://public.example:${pub.port}${path}`, timeoutMs: 20_000, allowPrivate: false })

    it("the pretend-public site loads through the guard", async () => {
      const a = await fetchPub("/ok")
      expect(a).toMatchObject({ classification: "ok", httpStatus: 200 })
    })

    it.each(["/redirect-to-internal", "/redirect-to-evil-name"])("a main-navigation redirect %s is unsafe_url and never reaches the target", async (path) => {
      const a = await fetchPub(path)
      expect(a.classification).toBe("unsafe_url")
      expect(internal.hits).toEqual([])
      expect(internal.connections()).toBe(0)
    })

    it("a page's WebRTC sends no UDP (STUN/TURN would not pass the guard proxy)", async () => {
      const udp = createSocket("udp4")
      const packets: Array<Buffer> = []
      udp.on("message", (m) => packets.push(m))
      await new Promise<void>((r) => udp.bind(0, "127.0.0.1", () => r()))
      const port = udp.address().port
      try {
        const stunPage = await startFixture({
          "/webrtc": page(200, html(`${"<p>a page that opens a peer connection</p>".repeat(5)}
            <script>
              const pc = new RTCPeerConnection({ iceServers: [{ urls: "stun:127.0.0.1:${port}" }, { urls: "turn:127.0.0.1:${port}?transport=udp", username: "u", credential: "c" }] })
              pc.createDataChannel("probe")
              pc.createOffer().then((offer) => pc.setLocalDescription(offer))
            </script>`))
        }, "127.0.0.2")
        try {
          const a = await guarded.fetch({ url: `http://public.example:${stunPage.port}/webrtc`, timeoutMs: 20_000, allowPrivate: false })
          expect(a).toMatchObject({ classification: "ok", httpStatus: 200 })
          await new Promise((r) => setTimeout(r, 1500))
          expect(packets).toEqual([])
        } finally {
          await stunPage.close()
        }
      } finally {
        udp.close()
      }
    })

    it("subresources and fetches to internal addresses are aborted; the page itself is ok", async () => {
      const a = await fetchPub("/subresources")
      expect(a).toMatchObject({ classification: "ok", httpStatus: 200 })
      expect(internal.hits).toEqual([])
      expect(internal.connections()).toBe(0)
    })

    // Chromium fetches a certificate's missing intermediate from the URL in its AIA extension by
    // itself, outside the page. Such a fetch goes through the context's guard proxy too: it reaches
    // an AIA host classified public, and never one classified private.
    it.skipIf(!hasOpenssl)("a certificate's AIA fetch (Chromium's own) passes the guard: refused for a private address (skipped without the openssl command, which makes the certificates)", async () => {
      const dir = mkdtempSync(join(tmpdir(), "trawl-aia-"))
      const aiaHits: Array<string> = []
      const aia = http.createServer((req, res) => {
        aiaHits.push(req.url ?? "")
        res.writeHead(200, { "content-type": "application/pkix-cert" }).end(readFileSync(join(dir, "int.der")))
      })
      await new Promise<void>((r) => aia.listen(0, "127.0.0.77", () => r()))
      const aiaUrl = `http://127.0.0.77:${(aia.address() as AddressInfo).port}/int.der`
      makeChainWithAia(dir, aiaUrl)
      const site = https.createServer({ key: readFileSync(join(dir, "leaf.key")), cert: readFileSync(join(dir, "leaf.pem")) }, page(200, ARTICLE))
      await new Promise<void>((r) => site.listen(0, "127.0.0.66", () => r()))
      const url = `https://public.example:${(site.address() as AddressInfo).port}/`
      const fetchWith = async (aiaPublic: boolean) => {
        // A browser of its own each time: Chromium keeps intermediates it fetched.
        const engine = createBraveEngine({
          // The AIA address is left to Chromium itself, so that a fetch that bypassed the guard would arrive.
          launchArgs: ["--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE 127.0.0.77"],
          settleMs: 300,
          lookup: fakeLookup({ "public.example": "127.0.0.66" }),
          classify: (ip) => (ip === "127.0.0.66" || (aiaPublic && ip === "127.0.0.77") ? "public" : classifyAddress(ip))
        })
        try {
          const a = await engine.fetch({ url, timeoutMs: 20_000, allowPrivate: false })
          expect(a).toMatchObject({ classification: "ok", httpStatus: 200 })
          await new Promise((r) => setTimeout(r, 1000))
        } finally {
          await engine.close?.()
        }
      }
      try {
        await fetchWith(false)
        expect(aiaHits).toEqual([])
        // The same page with the AIA host public: Chromium does fetch it (so the refusal above was the guard's).
        await fetchWith(true)
        expect(aiaHits).toContain("/int.der")
      } finally {
        aia.close()
        site.close()
        rmSync(dir, { recursive: true, force: true })
      }
    }, 60_000)
  })
})

describe.skipIf(hasChromium)("brave engine", () => {
  it(`skipped: ${NO_CHROMIUM_REASON}`, () => {})
})
