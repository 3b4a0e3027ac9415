/**
 * A per-fetch forward proxy on 127.0.0.1 through which a browser context sends all its traffic.
 *
 * Why: `page.route` does not see redirect hops, and the browser resolves names itself (DNS
 * rebinding between our check and its connection). The proxy receives the host *name* from the
 * browser, resolves it with the guard's safe lookup and connects to exactly the classified address,
 * for plain HTTP (absolute-form requests), HTTPS and WebSocket tunnels (CONNECT) alike.
 *
 * One proxy per fetch (one listening socket on an ephemeral loopback port) makes attribution of
 * refusals to the fetch exact without proxy credentials.
 */
import http from "node:http"
import net from "node:net"
import { type AddressClassifier, classifyAddress, createSafeLookup, literalAddressOf, type LookupFunction, parseTargetUrl, refusedClass } from "../ssrf.ts"

export interface GuardProxyOptions {
  allowPrivate: boolean
  lookup?: LookupFunction
  classify?: AddressClassifier
  /**
   * The most bytes all targets together may send through the proxy (the page, its resources,
   * TLS overhead included). Past it every connection is cut and no new one is made, so a page
   * cannot make the browser download without bound. Unlimited when unset.
   */
  maxInboundBytes?: number
  /** Called once, when the budget is passed. */
  onOverBudget?: () => void
}

export interface Refusal {
  /** The refused URL (plain HTTP) or `host:port` (CONNECT). */
  target: string
  /** `host:port` of the refused target. */
  authority: string
  reason: string
}

export interface GuardProxy {
  /** `http://127.0.0.1:<port>` */
  readonly url: string
  readonly refusals: Refusal[]
  /** True when the given URL (or its authority) was refused by the proxy. */
  refused(url: string): Refusal | undefined
  /**
   * The error (`ECONNREFUSED`, ...) with which the proxy last failed to reach this plain-http URL,
   * answering 502 in the target's place; undefined once the target answered it again.
   */
  unreached(url: string): string | undefined
  /** True once the targets sent more than `maxInboundBytes`. */
  overBudget(): boolean
  close(): Promise<void>
}

const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-authenticate",
  "proxy-authorization",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade"
])

const authorityOf = (u: URL) => `${u.hostname}:${u.port || (u.protocol === "https:" ? "443" : "80")}`

export const startGuardProxy = async (opts: GuardProxyOptions): Promise<GuardProxy> => {
  const classify = opts.classify ?? classifyAddress
  const lookup = createSafeLookup({ allowPrivate: opts.allowPrivate, lookup: opts.lookup, classify })
  const agent = new http.Agent({ keepAlive: true, maxSockets: 16, lookup: lookup as unknown as http.AgentOptions["lookup"] })
  const refusals: Refusal[] = []
  // Kept by the proxy, not said in a header of the answer: a target's own headers pass through.
  const unreachable = new Map<string, string>()
  const sockets = new Set<net.Socket>()
  const budget = opts.maxInboundBytes ?? Infinity
  let inbound = 0
  let exhausted = false
  /** Counts what a target sent; past the budget, every connection goes. */
  const received = (chunk: Buffer) => {
    inbound += chunk.length
    if (inbound > budget && !exhausted) {
      exhausted = true
      for (const s of sockets) s.destroy()
      agent.destroy()
      opts.onOverBudget?.()
    }
  }

  /** Syntax + literal classification; names are classified by `lookup` at connect time. */
  const precheck = (url: URL): string | null => {
    const parsed = parseTargetUrl(url.href, { allowPrivate: opts.allowPrivate })
    if (!parsed.ok) return `${parsed.reason}: ${parsed.detail}`
    const literal = literalAddressOf(parsed.url)
    const c = literal === undefined ? undefined : refusedClass(literal, opts.allowPrivate, classify)
    return c ? `non_public_address: ${literal} is ${c}` : null
  }

  const refuse = (target: string, authority: string, reason: string) => {
    refusals.push({ target, authority, reason })
  }

  const server = http.createServer((req, res) => {
    let url: URL
    try {
      url = new URL(req.url ?? "")
      if (url.protocol !== "http:") throw new Error("not absolute http")
    } catch {
      res.writeHead(400, { "content-type": "text/plain" }).end("proxy: absolute http:// URL required")
      return
    }
    if (exhausted) {
      res.destroy()
      return
    }
    const reason = precheck(url)
    if (reason) {
      refuse(url.href, authorityOf(url), reason)
      res.writeHead(403, { "content-type": "text/plain", "x-trawl-refused": "1" }).end(`refused: ${reason}`)
      return
    }
    const headers: http.OutgoingHttpHeaders = {}
    for (const [k, v] of Object.entries(req.headers)) if (!HOP_BY_HOP.has(k) && v !== undefined) headers[k] = v
    const upstream = http.request(
      {
        host: url.hostname.replace(/^\[|\]$/g, ""),
        port: url.port || 80,
        method: req.method,
        path: url.pathname + url.search,
        headers,
        agent,
        lookup: lookup as unknown as http.RequestOptions["lookup"]
      },
      (up) => {
        const out: http.OutgoingHttpHeaders = {}
        unreachable.delete(url.href)
        // The proxy's own headers are its own: a target cannot pass one off as the proxy's.
        for (const [k, v] of Object.entries(up.headers)) if (!HOP_BY_HOP.has(k) && !k.startsWith("x-trawl-") && v !== undefined) out[k] = v
        res.writeHead(up.statusCode ?? 502, up.statusMessage, out)
        up.on("data", received)
        up.pipe(res)
        up.on("error", () => res.destroy())
      }
    )
    upstream.on("error", (e: NodeJS.ErrnoException) => {
      if (e.code === "ERR_UNSAFE_ADDRESS") refuse(url.href, authorityOf(url), e.message)
      else {
        // The browser will see this proxy's 502; the engine reports the failure instead (bounded: oldest out).
        if (unreachable.size >= 1000) unreachable.delete(unreachable.keys().next().value!)
        unreachable.set(url.href, e.code ?? "ERR_PROXY")
      }
      if (!res.headersSent) {
        res
          .writeHead(e.code === "ERR_UNSAFE_ADDRESS" ? 403 : 502, {
            "content-type": "text/plain",
            "x-trawl-refused": e.code === "ERR_UNSAFE_ADDRESS" ? "1" : "0"
          })
          .end(`proxy error: ${e.code ?? e.message}`)
      } else res.destroy()
    })
    res.on("close", () => upstream.destroy())
    req.pipe(upstream)
  })

  server.on("connect", (req: http.IncomingMessage, client: net.Socket, head: Buffer) => {
    sockets.add(client)
    client.on("close", () => sockets.delete(client))
    client.on("error", () => client.destroy())
    const authority = req.url ?? ""
    let url: URL
    try {
      url = new URL(`https://${authority}`)
    } catch {
      client.end("HTTP/1.1 400 Bad Request\r\n\r\n")
      return
    }
    const port = Number(url.port || 443)
    if (exhausted) {
      client.destroy()
      return
    }
    const reason = precheck(url)
    if (reason) {
      refuse(authority, authority, reason)
      client.end("HTTP/1.1 403 Forbidden\r\nx-trawl-refused: 1\r\n\r\n")
      return
    }
    const upstream = net.connect({
      host: url.hostname.replace(/^\[|\]$/g, ""),
      port,
      lookup: lookup as unknown as net.LookupFunction
    })
    sockets.add(upstream)
    upstream.on("close", () => sockets.delete(upstream))
    upstream.once("connect", () => {
      client.write("HTTP/1.1 200 Connection Established\r\n\r\n")
      if (head.length > 0) upstream.write(head)
      upstream.on("data", received)
      upstream.pipe(client)
      client.pipe(upstream)
    })
    upstream.on("error", (e: NodeJS.ErrnoException) => {
      if (e.code === "ERR_UNSAFE_ADDRESS") refuse(authority, authority, e.message)
      if (client.writable && !upstream.readableFlowing) {
        client.end(e.code === "ERR_UNSAFE_ADDRESS" ? "HTTP/1.1 403 Forbidden\r\nx-trawl-refused: 1\r\n\r\n" : "HTTP/1.1 502 Bad Gateway\r\n\r\n")
      } else client.destroy()
    })
  })
  // plain-HTTP WebSocket upgrades sent in absolute form are not supported: browsers tunnel them
  server.on("upgrade", (_req, socket: net.Socket) => socket.destroy())
  server.on("connection", (s: net.Socket) => {
    sockets.add(s)
    s.on("close", () => sockets.delete(s))
  })

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => resolve())
  })
  const port = (server.address() as net.AddressInfo).port

  return {
    url: `http://127.0.0.1:${port}`,
    refusals,
    unreached: (raw: string) => unreachable.get(raw),
    overBudget: () => exhausted,
    refused: (raw: string) => {
      let u: URL
      try {
        u = new URL(raw)
      } catch {
        return undefined
      }
      const auth = authorityOf(u)
      return refusals.find((r) => r.target === u.href || (u.protocol === "https:" && r.authority === auth))
    },
    close: async () => {
      agent.destroy()
      for (const s of sockets) s.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    }
  }
}
