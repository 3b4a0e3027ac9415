import { SMTPServer } from "smtp-server"

/** A mail as the in-process SMTP server received it. */
export interface ReceivedMail {
  /** The envelope's sender (MAIL FROM). */
  readonly from: string
  /** The envelope's recipients (RCPT TO), as given. */
  readonly recipients: ReadonlyArray<string>
  /** The To header, decoded. */
  readonly to: string
  /** The Subject header, decoded (RFC 2047 encoded words). */
  readonly subject: string
  /** The text/plain part, transfer encoding undone, line breaks as "\n". */
  readonly text: string | undefined
  /** The text/html part, if any, decoded as `text` is. */
  readonly html: string | undefined
  /** Every header, names in lower case, values unfolded and decoded; the last of a repeated one. */
  readonly headers: ReadonlyMap<string, string>
  /** The message as sent after DATA. */
  readonly raw: string
}

export interface TestSmtpServer {
  /** `smtp://127.0.0.1:PORT`: give it as SMTP_URL. */
  readonly url: string
  readonly port: number
  /** Every mail received so far, oldest first. */
  readonly mails: () => ReadonlyArray<ReceivedMail>
  /** The first mail to `to` (envelope or To header, any case) that satisfies `predicate`; rejects after `timeoutMs`. */
  readonly waitForMail: (to: string, predicate?: (mail: ReceivedMail) => boolean, timeoutMs?: number) => Promise<ReceivedMail>
  readonly close: () => Promise<void>
}

/** A real SMTP server on 127.0.0.1 and a free port, without TLS or authentication, keeping what it receives. */
export const startSmtpServer = async (): Promise<TestSmtpServer> => {
  const received: Array<ReceivedMail> = []
  const waiters = new Set<() => void>()
  const server = new SMTPServer({
    disabledCommands: ["STARTTLS", "AUTH"],
    authOptional: true,
    logger: false,
    onData(stream, session, callback) {
      const chunks: Array<Buffer> = []
      stream.on("data", (chunk: Buffer) => chunks.push(chunk))
      stream.on("error", callback)
      stream.on("end", () => {
        try {
          // The line break before the ending "." is the SMTP terminator's (nodemailer adds it when
          // the message does not end in one), so a text's own final line break cannot be told apart.
          const raw = Buffer.concat(chunks).toString("latin1").replace(/\r\n$/, "")
          received.push(parseMessage(raw, session.envelope.mailFrom ? session.envelope.mailFrom.address : "", session.envelope.rcptTo.map((r) => r.address)))
          for (const wake of waiters) wake()
          callback()
        } catch (error) {
          callback(error as Error)
        }
      })
    }
  })
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => resolve())
  })
  const port = (server.server.address() as { port: number }).port

  const matching = (to: string, predicate: (mail: ReceivedMail) => boolean) =>
    received.find((m) => [...m.recipients, ...addressesIn(m.to)].some((r) => r.toLowerCase() === to.toLowerCase()) && predicate(m))

  return {
    url: `smtp://127.0.0.1:${port}`,
    port,
    mails: () => received.slice(),
    waitForMail: (to, predicate = () => true, timeoutMs = 10_000) =>
      new Promise((resolve, reject) => {
        const check = () => {
          const found = matching(to, predicate)
          if (!found) return false
          clearTimeout(timer)
          waiters.delete(wake)
          resolve(found)
          return true
        }
        const wake = () => void check()
        const timer = setTimeout(() => {
          waiters.delete(wake)
          reject(new Error(`no mail to ${to} in ${timeoutMs} ms; received: ${received.map((m) => `${m.recipients.join(",")} "${m.subject}"`).join("; ") || "none"}`))
        }, timeoutMs)
        if (!check()) waiters.add(wake)
      }),
    close: () => new Promise<void>((resolve) => server.close(() => resolve()))
  }
}

/** The addresses of an address header (`a@x.io`, `Name <a@x.io>`, lists of them). */
const addressesIn = (header: string) => header.match(/[^\s<>,;"]+@[^\s<>,;"]+/g) ?? []

/** Splits a MIME entity (latin1 text, one char per byte) into its unfolded headers and its body. */
const splitEntity = (entity: string) => {
  const at = entity.search(/\r?\n\r?\n/)
  const head = at < 0 ? entity : entity.slice(0, at)
  const body = at < 0 ? "" : entity.slice(at).replace(/^\r?\n\r?\n/, "")
  const headers = new Map<string, string>()
  for (const line of head.replace(/\r?\n[ \t]/g, " ").split(/\r?\n/)) {
    const colon = line.indexOf(":")
    if (colon > 0) headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim())
  }
  return { headers, body }
}

/** A parameter of a structured header (`boundary`, `charset`), quoted or not. */
const headerParam = (value: string | undefined, name: string) => {
  const match = new RegExp(`;\\s*${name}\\s*=\\s*(?:"([^"]*)"|([^;\\s]*))`, "i").exec(value ?? "")
  return match ? (match[1] ?? match[2]) : undefined
}

/** Quoted-printable (RFC 2045 §6.7) to bytes: soft line breaks removed, `=XX` made a byte. */
export const decodeQuotedPrintable = (text: string): Buffer => {
  const unwrapped = text.replace(/[ \t]+(?=\r?\n)/g, "").replace(/=\r?\n/g, "")
  const bytes: Array<number> = []
  for (let i = 0; i < unwrapped.length; i++) {
    const hex = unwrapped[i] === "=" ? /^[0-9A-Fa-f]{2}$/.exec(unwrapped.slice(i + 1, i + 3)) : null
    if (hex) {
      bytes.push(parseInt(hex[0], 16))
      i += 2
    } else {
      bytes.push(unwrapped.charCodeAt(i) & 0xff)
    }
  }
  return Buffer.from(bytes)
}

const decodeTransfer = (body: string, encoding: string | undefined): Buffer => {
  switch ((encoding ?? "7bit").toLowerCase()) {
    case "quoted-printable":
      return decodeQuotedPrintable(body)
    case "base64":
      return Buffer.from(body.replace(/\s+/g, ""), "base64")
    default:
      return Buffer.from(body, "latin1")
  }
}

/** RFC 2047 encoded words: adjacent ones are joined byte-wise first, so a character split between two survives. */
const decodeHeader = (value: string) => {
  const word = /=\?([^?]+)\?([QqBb])\?([^?]*)\?=/g
  const decodeWord = (encoding: string, text: string) =>
    encoding.toUpperCase() === "B" ? Buffer.from(text, "base64") : decodeQuotedPrintable(text.replace(/_/g, " "))
  let out = ""
  let pending: Array<Buffer> = []
  let last = 0
  const flush = () => {
    if (pending.length > 0) out += Buffer.concat(pending).toString("utf8")
    pending = []
  }
  for (let m = word.exec(value); m; m = word.exec(value)) {
    const between = value.slice(last, m.index)
    // Whitespace between two encoded words is not part of the text.
    if (!(pending.length > 0 && /^\s*$/.test(between))) {
      flush()
      out += between
    }
    pending.push(decodeWord(m[2]!, m[3]!))
    last = m.index + m[0].length
  }
  flush()
  return out + value.slice(last)
}

/** The decoded text of a part, in its charset (UTF-8 unless named otherwise), with line breaks as "\n". */
const partText = (headers: ReadonlyMap<string, string>, body: string) => {
  const bytes = decodeTransfer(body, headers.get("content-transfer-encoding"))
  const charset = (headerParam(headers.get("content-type"), "charset") ?? "utf-8").toLowerCase()
  return new TextDecoder(charset).decode(bytes).replace(/\r\n/g, "\n")
}

/** The first text/plain and text/html parts of an entity, looking into multipart ones. */
const findParts = (entity: string, found: { text?: string; html?: string }) => {
  const { headers, body } = splitEntity(entity)
  const type = (headers.get("content-type") ?? "text/plain").split(";")[0]!.trim().toLowerCase()
  if (type.startsWith("multipart/")) {
    const boundary = headerParam(headers.get("content-type"), "boundary")
    if (!boundary) return
    const delimiter = `--${boundary}`
    const sections = body.split(new RegExp(`\\r?\\n?${delimiter.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}`))
    // sections[0] is the preamble; the part after the closing delimiter starts with "--".
    for (const section of sections.slice(1)) {
      if (section.startsWith("--")) break
      findParts(section.replace(/^[ \t]*\r?\n/, ""), found)
    }
  } else if (type === "text/plain" && found.text === undefined) {
    found.text = partText(headers, body)
  } else if (type === "text/html" && found.html === undefined) {
    found.html = partText(headers, body)
  }
}

/** What a test reads of a message nodemailer sent: headers, then text (and HTML) parts, possibly multipart. */
export const parseMessage = (raw: string, from: string, recipients: ReadonlyArray<string>): ReceivedMail => {
  const { headers } = splitEntity(raw)
  const decoded = new Map([...headers].map(([name, value]) => [name, decodeHeader(value)] as const))
  const parts: { text?: string; html?: string } = {}
  findParts(raw, parts)
  return {
    from,
    recipients,
    to: decoded.get("to") ?? "",
    subject: decoded.get("subject") ?? "",
    text: parts.text,
    html: parts.html,
    headers: decoded,
    raw
  }
}
