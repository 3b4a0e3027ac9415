import { describe, expect, it } from "vitest"
import { decodeQuotedPrintable, parseMessage } from "../support/smtp.ts"

const crlf = (lines: ReadonlyArray<string>) => lines.join("\r\n")

describe("the test SMTP server's message parser", () => {
  it("decodes quoted-printable: escapes in either case, soft breaks, a lone '=' kept, transport padding dropped", () => {
    expect(decodeQuotedPrintable("a=3Db=3db&c=\r\n=3Dd").toString("utf8")).toBe("a=b=b&c=d")
    expect(decodeQuotedPrintable("Zo=C3=AB=E2=80=94=F0=9F=90=9F").toString("utf8")).toBe("Zoë—🐟")
    expect(decodeQuotedPrintable("x =\r\ny").toString("utf8")).toBe("x y")
    expect(decodeQuotedPrintable("end   \r\nnext\t\r\n").toString("utf8")).toBe("end\r\nnext\r\n")
    expect(decodeQuotedPrintable("=G1=4").toString("utf8")).toBe("=G1=4")
  })

  it("reads folded, encoded headers and the text and HTML of a nested multipart message", () => {
    // "é" (C3 A9) split between two encoded words, one Q and one B, on a folded line.
    const raw = crlf([
      "From: sender@example.com",
      "To: Someone <Reader@Example.com>",
      "Subject: =?UTF-8?Q?Caf=C3?=",
      " =?UTF-8?B?qQ==?= and more",
      "Content-Type: multipart/mixed; boundary=outer",
      "",
      "preamble",
      "--outer",
      "Content-Type: multipart/alternative; boundary=\"in ner\"",
      "",
      "--in ner",
      "Content-Type: text/plain; charset=utf-8",
      "Content-Transfer-Encoding: base64",
      "",
      Buffer.from("line one\r\nhttps://x.example/?a=1&b==2").toString("base64"),
      "--in ner",
      "Content-Type: text/html; charset=utf-8",
      "Content-Transfer-Encoding: quoted-printable",
      "",
      "<a href=3D\"https://x.example/?a=3D1&amp;b=3D=3D2\">caf=C3=A9</a>",
      "--in ner--",
      "--outer",
      "Content-Type: text/plain",
      "",
      "an attachment-like second text part",
      "--outer--",
      ""
    ])
    const mail = parseMessage(raw, "sender@example.com", ["reader@example.com"])
    expect(mail.subject).toBe("Café and more")
    expect(mail.to).toBe("Someone <Reader@Example.com>")
    expect(mail.text).toBe("line one\nhttps://x.example/?a=1&b==2")
    expect(mail.html).toBe("<a href=\"https://x.example/?a=1&amp;b==2\">café</a>")
    expect(mail.headers.get("from")).toBe("sender@example.com")
  })

  it("takes a single-part 7bit message as it is", () => {
    const mail = parseMessage(crlf(["Subject: plain", "", "first", "second"]), "", [])
    expect(mail).toMatchObject({ subject: "plain", text: "first\nsecond", html: undefined, to: "" })
  })
})
