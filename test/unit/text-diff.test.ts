import { execFileSync } from "node:child_process"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { servedContentType } from "../../src/crawl/content-type.ts"
import { computePageDiff, MAX_DIFF_LINES, pageDiff } from "../../src/crawl/page-diff.ts"
import { MAX_EDIT_STEPS, unifiedDiff } from "../../src/crawl/text-diff.ts"
import { diffLines, MAX_DIFF_INPUT_CHARS, visibleLines } from "../../src/crawl/visible-text.ts"

/** GNU diff's hunks for the same input, headers dropped. */
const gnuDiff = (a: Array<string>, b: Array<string>) => {
  const dir = mkdtempSync(join(tmpdir(), "diff-"))
  writeFileSync(join(dir, "a"), a.map((l) => l + "\n").join(""))
  writeFileSync(join(dir, "b"), b.map((l) => l + "\n").join(""))
  try {
    return execFileSync("diff", ["-u", join(dir, "a"), join(dir, "b")], { encoding: "utf8" })
  } catch (e) {
    return (e as { stdout: string }).stdout
  }
}
const hunks = (d: string) => d.split("\n").filter((l) => !l.startsWith("---") && !l.startsWith("+++")).join("\n")

describe("unified text diff", () => {
  it("is empty for equal texts", () => {
    expect(unifiedDiff(["a", "b"], ["a", "b"], { from: "x", to: "y" })).toBe("")
  })

  it.each([
    [["a", "b", "c"], ["a", "x", "c"]],
    [[], ["new", "lines"]],
    [["gone"], []],
    [Array.from({ length: 30 }, (_, i) => `line ${i}`), Array.from({ length: 30 }, (_, i) => (i === 3 || i === 25 ? `changed ${i}` : `line ${i}`))],
    [["p", "q", "r", "s", "t", "u", "v"], ["q", "r", "X", "t", "u", "v", "w"]]
  ])("matches GNU diff -u hunks for %j → %j", (a, b) => {
    const ours = unifiedDiff(a, b, { from: "a", to: "b" })
    expect(hunks(ours)).toBe(hunks(gnuDiff(a, b)))
  })
})

/** Applies a unified diff to `a` (every context and removed line must match); the lines it gives. */
const applyDiff = (a: ReadonlyArray<string>, diff: string): Array<string> => {
  if (diff === "") return [...a]
  const out: Array<string> = []
  let at = 0
  const lines = diff.split("\n").slice(2, -1)
  for (const line of lines) {
    const hunk = /^@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@$/.exec(line)
    if (hunk) {
      const start = Number(hunk[2] === "0" ? Number(hunk[1]) : Number(hunk[1]) - 1)
      while (at < start) out.push(a[at++]!)
      continue
    }
    const body = line.slice(1)
    if (line[0] === "+") out.push(body)
    else {
      expect(a[at], `line ${at + 1} of the old text`).toBe(body)
      if (line[0] === " ") out.push(body)
      at++
    }
  }
  while (at < a.length) out.push(a[at++]!)
  return out
}
const changedLines = (d: string) => d.split("\n").filter((l) => /^[-+]/.test(l) && !l.startsWith("---") && !l.startsWith("+++")).length

describe("unified text diff under load", () => {
  it("gives a correct, shortest diff for many random edits (as many changed lines as GNU diff)", () => {
    let seed = 7
    const rnd = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648
    for (let t = 0; t < 150; t++) {
      const a = Array.from({ length: Math.floor(rnd() * 40) }, () => `l${Math.floor(rnd() * 6)}`)
      const b = a.filter(() => rnd() > 0.2).flatMap((l) => (rnd() < 0.2 ? [l, `n${Math.floor(rnd() * 4)}`] : [l]))
      const ours = unifiedDiff(a, b, { from: "a", to: "b" })
      expect(applyDiff(a, ours)).toEqual(b)
      expect(changedLines(ours)).toBe(changedLines(gnuDiff(a, b)))
    }
  })

  it("replaces the differing middle at once when the texts are further apart than the edit budget", () => {
    const a = ["same start", ...Array.from({ length: 20_000 }, (_, i) => `old ${i}`), "same end"]
    const b = ["same start", ...Array.from({ length: 20_000 }, (_, i) => `new ${i}`), "same end"]
    const diff = unifiedDiff(a, b, { from: "a", to: "b" })
    expect(applyDiff(a, diff)).toEqual(b)
    expect(diff.split("\n").filter((l) => l.startsWith("@@"))).toEqual(["@@ -1,20002 +1,20002 @@"])
    expect(changedLines(diff)).toBe(40_000)
    // Within the budget the script stays the shortest one.
    const near = [...a]
    near[5_000] = "edited"
    expect(changedLines(unifiedDiff(a, near, { from: "a", to: "b" }))).toBe(2)
    expect(MAX_EDIT_STEPS).toBeLessThan(40_000)
  })

  it("gives a correct diff whatever the budget", () => {
    const a = ["p", "q", "r", "s", "t", "u", "v"]
    const b = ["q", "r", "X", "t", "u", "v", "w"]
    for (const budget of [0, 1, 2, 3, 4, 100]) expect(applyDiff(a, unifiedDiff(a, b, { from: "a", to: "b" }, 3, budget))).toEqual(b)
  })
})

describe("diff input", () => {
  it("reads the first 2 MiB characters of a version, HTML or not", () => {
    const text = "line\n".repeat(1_000_000) // 5 MB
    const { lines, cut } = diffLines(text, "text/plain; charset=utf-8")
    expect(cut).toBe(true)
    expect(lines).toHaveLength(Math.floor(MAX_DIFF_INPUT_CHARS / 5) + 1)
    expect(lines.at(-1)).toBe("line".slice(0, MAX_DIFF_INPUT_CHARS % 5))
    const html = `<p>first</p>${"<p>x</p>".repeat(400_000)}<p>beyond the cap</p>`
    const visible = diffLines(html, "text/html").lines
    expect(visible[0]).toBe("first")
    expect(visible).not.toContain("beyond the cap")
    expect(diffLines("<p>small</p>", "text/html")).toEqual({ lines: ["small"], cut: false })
  })

  it("ends markup cut inside a tag at that tag, so no part of it is read as text", () => {
    const open = "<html><body>" + "<div>".repeat(200_000)
    const page = `${open}deep text${"</div>".repeat(200_000)}</body></html>`
    // The cap falls just after a "<" of a closing tag.
    const at = page.indexOf("<", MAX_DIFF_INPUT_CHARS - 6)
    expect(at).toBeLessThan(MAX_DIFF_INPUT_CHARS)
    const { lines, cut } = diffLines(page, "text/html")
    expect(cut).toBe(true)
    expect(lines).toEqual(["deep text"])
    // A "<" that starts no tag is text, and stays.
    const pre = `<pre>${"x".repeat(MAX_DIFF_INPUT_CHARS - 20)} a < b and more text past the cut</pre>`
    expect(diffLines(pre, "text/html").lines.at(-1)).toMatch(/ a < b/)
  })

  it("ends plain text's last line at a final line break instead of adding an empty one", () => {
    expect(diffLines("line1\nline2\n", "text/plain").lines).toEqual(["line1", "line2"])
    expect(diffLines("line1\r\nline2", "text/plain").lines).toEqual(["line1", "line2"])
    expect(diffLines("a\n\n", "application/json").lines).toEqual(["a", ""])
    expect(diffLines("", "text/plain").lines).toEqual([])
  })

  it("gives up the shortest script once its comparisons pass the budget, and stays correct", () => {
    // Long texts with an edit every 50 lines: few steps, but each step compares thousands of lines.
    const a = Array.from({ length: 20_000 }, (_, i) => `line ${i}`)
    const b = a.map((l, i) => (i % 50 === 0 ? `${l} changed` : l))
    const cheap = unifiedDiff(a, b, { from: "a", to: "b" }, 3, MAX_EDIT_STEPS, 1000)
    expect(cheap.split("\n").filter((l) => l.startsWith("@@"))).toHaveLength(1)
    expect(applyDiff(a, cheap)).toEqual(b)
    const full = unifiedDiff(a, b, { from: "a", to: "b" })
    expect(full.split("\n").filter((l) => l.startsWith("@@")).length).toBeGreaterThan(1)
    expect(applyDiff(a, full)).toEqual(b)
  })
})

describe("page diff (what the diff endpoint answers)", () => {
  const utf8 = (s: string) => new TextEncoder().encode(s)
  const version = (body: Uint8Array, contentType: string | null, label: string) => ({ body, contentType, label })

  it("diffs the visible text of HTML, and says nothing of a version that is not text", () => {
    const r = computePageDiff({ before: version(utf8("<p>old</p>"), "text/html", "v1"), now: version(utf8("<p>new</p>"), "text/html", "v2") })
    expect(r).toMatchObject({ binary: false, truncated: false })
    expect(r.diff).toContain("-old\n+new")
    const png = computePageDiff({ before: version(Uint8Array.from([0x89, 0x50, 0x4e, 0x47]), "image/png", "v1"), now: version(Uint8Array.from([0x89, 0x50, 0x4e, 0x48]), "image/png", "v2") })
    expect(png).toEqual({ diff: "", binary: true, truncated: false })
    expect(computePageDiff({ before: null, now: version(utf8("{\"a\":1}"), "application/json", "v1") })).toMatchObject({ binary: false, diff: expect.stringContaining('+{"a":1}') })
  })

  it("takes a version without a type as HTML only when its bytes are text", () => {
    const png = (last: number) => Uint8Array.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, last])
    expect(computePageDiff({ before: version(png(1), null, "v1"), now: version(png(2), null, "v2") })).toEqual({ diff: "", binary: true, truncated: false })
    expect(computePageDiff({ before: version(utf8("<p>old</p>"), null, "v1"), now: version(utf8("<p>new</p>"), null, "v2") }).diff).toContain("-old\n+new")
    expect(servedContentType(null, png(1))).toBe("application/octet-stream")
    expect(servedContentType(null, utf8("<p>caf\u00e9</p>"))).toBe("text/html; charset=utf-8")
    expect(servedContentType("image/png", utf8("<p>x</p>"))).toBe("image/png")
    // A stored type that no header can carry (stored before the engines dropped such types) is served as none.
    expect(servedContentType("text/html; x=\u0001y", utf8("<p>x</p>"))).toBe("text/html; charset=utf-8")
    expect(servedContentType("  ", png(1))).toBe("application/octet-stream")
    // UTF-16 text has NUL bytes, but its byte order mark says it is text
    const utf16 = (text: string) => Uint8Array.from([0xff, 0xfe, ...Array.from(text).flatMap((c) => [c.charCodeAt(0), 0])])
    expect(servedContentType(null, utf16("<p>x</p>"))).toBe("text/html; charset=utf-16le")
    expect(computePageDiff({ before: version(utf16("<p>old</p>"), null, "v1"), now: version(utf16("<p>new</p>"), null, "v2") }).diff).toContain("-old\n+new")
  })

  it("decodes each version in the charset its content type names", () => {
    const latin1 = Uint8Array.from([0x63, 0x61, 0x66, 0xe9]) // "café" in windows-1252
    const r = computePageDiff({
      before: version(utf8("cafe"), "text/plain; charset=utf-8", "v1"),
      now: version(latin1, "text/plain; charset=windows-1252", "v2")
    })
    expect(r.diff).toContain("+café")
  })

  it("decodes as a browser does: a byte order mark first, then the type's charset, then an HTML <meta> charset", () => {
    const latin1 = (text: string) => Uint8Array.from(Array.from(text, (c) => c.charCodeAt(0)))
    const meta = (text: string) => latin1(`<html><head><meta charset="iso-8859-1"></head><body><p>${text}</p></body></html>`)
    expect(computePageDiff({ before: version(meta("café"), "text/html", "v1"), now: version(meta("cafè"), "text/html", "v2") }).diff).toContain("-café\n+cafè")
    const httpEquiv = (text: string) => latin1(`<meta http-equiv="Content-Type" content="text/html; charset=windows-1252"><p>${text}</p>`)
    expect(computePageDiff({ before: version(httpEquiv("café"), null, "v1"), now: version(httpEquiv("cafè"), null, "v2") }).diff).toContain("-café\n+cafè")
    // The type's charset outranks a <meta>; a byte order mark outranks both.
    expect(computePageDiff({ before: null, now: version(utf8(`<meta charset="iso-8859-1"><p>caf\u00e9</p>`), "text/html; charset=utf-8", "v1") }).diff).toContain("+café")
    const utf16 = (text: string) => Uint8Array.from([0xff, 0xfe, ...Array.from(text).flatMap((c) => [c.charCodeAt(0), 0])])
    const r = computePageDiff({ before: version(utf16("<p>old</p>"), "text/html; charset=utf-8", "v1"), now: version(utf16("<p>new</p>"), "text/html; charset=utf-8", "v2") })
    expect(r.diff).toContain("-old\n+new")
    expect(r.diff).not.toContain("\u0000")
  })

  it("takes a <meta> charset as the HTML standard does: a UTF-16 label means UTF-8, x-user-defined means windows-1252", () => {
    const latin1 = (text: string) => Uint8Array.from(Array.from(text, (c) => c.charCodeAt(0)))
    for (const label of ["utf-16", "UTF-16LE", "utf-16be"]) {
      const page = utf8(`<meta charset="${label}"><p>\u041f\u0440\u0438\u0432\u0435\u0442</p>`)
      expect(computePageDiff({ before: null, now: version(page, "text/html", "v1") }).diff).toContain("+\u041f\u0440\u0438\u0432\u0435\u0442")
      expect(servedContentType(null, page)).toBe("text/html; charset=utf-8")
    }
    const userDefined = latin1(`<meta charset="x-user-defined"><p>caf\u00e9</p>`)
    expect(computePageDiff({ before: null, now: version(userDefined, "text/html", "v1") }).diff).toContain("+caf\u00e9")
    // An unknown label is no label.
    expect(computePageDiff({ before: null, now: version(utf8(`<meta charset="no-such"><p>caf\u00e9</p>`), null, "v1") }).diff).toContain("+caf\u00e9")
  })

  it("serves a version without a type in the charset the page names, as the diff reads it", () => {
    const cp1251 = Uint8Array.from([...new TextEncoder().encode(`<html><head><meta charset="windows-1251"></head><body><p>`), 0xcf, 0xf0, 0xe8, 0xe2, 0xe5, 0xf2, ...new TextEncoder().encode("</p></body></html>")])
    expect(servedContentType(null, cp1251)).toBe("text/html; charset=windows-1251")
    expect(computePageDiff({ before: null, now: version(cp1251, null, "v1") }).diff).toContain("+\u041f\u0440\u0438\u0432\u0435\u0442")
    const latin = utf8(`<meta http-equiv="content-type" content="text/html; charset=latin1"><p>x</p>`)
    expect(servedContentType(null, latin)).toBe("text/html; charset=windows-1252")
    // A type of its own is served as it is.
    expect(servedContentType("text/html", cp1251)).toBe("text/html")
  })

  it("shows a text version after one that was not text as all new; a version that is not text has no diff", () => {
    const png = Uint8Array.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13])
    const afterBinary = computePageDiff({ before: version(png, "image/png", "v1"), now: version(utf8("<p>now text</p>"), "text/html", "v2") })
    expect(afterBinary).toMatchObject({ binary: false, truncated: false })
    expect(afterBinary.diff).toContain("+now text")
    expect(computePageDiff({ before: version(utf8("<p>text</p>"), "text/html", "v1"), now: version(png, "image/png", "v2") })).toEqual({ diff: "", binary: true, truncated: false })
  })

  it("the same bytes under another charset label are the same content: no diff, as the version is not changed", () => {
    const bytes = Uint8Array.from([0x3c, 0x70, 0x3e, 0x63, 0x61, 0x66, 0xe9, 0x3c, 0x2f, 0x70, 0x3e]) // <p>café</p> in Latin-1
    expect(computePageDiff({ before: version(bytes, "text/html; charset=iso-8859-1", "v1"), now: version(bytes, "text/html; charset=utf-8", "v2") })).toEqual({ diff: "", binary: false, truncated: false })
  })

  it("reads at most MAX_DIFF_LINES lines of a version, and says so", () => {
    const long = Array.from({ length: MAX_DIFF_LINES + 10 }, (_, i) => `row ${i}`).join("\n")
    const r = computePageDiff({ before: null, now: version(utf8(long), "text/plain", "v1") })
    expect(r.truncated).toBe(true)
    expect(r.diff).toContain(`+row ${MAX_DIFF_LINES - 1}\n`)
    expect(r.diff).not.toContain(`+row ${MAX_DIFF_LINES}\n`)
  })

  it("works in the diff worker, off the event loop", async () => {
    const r = await pageDiff({ before: version(utf8("a\nb"), "text/plain", "v1"), now: version(utf8("a\nc"), "text/plain", "v2") }, "ten_a")
    expect(r.diff).toContain("-b\n+c")
  })

  it("serves waiting diffs a tenant at a time in turn", async () => {
    const diffOf = (tenant: string, n: number) =>
      pageDiff({ before: version(utf8(`a\n${n}`), "text/plain", "v1"), now: version(utf8(`b\n${n}`), "text/plain", "v2") }, tenant)
        .then(() => `${tenant}${n}`)
    const ended: Array<string> = []
    // One worker: a1 starts at once, a2..a4 wait, then b1 waits; b1, with nothing of its own running,
    // goes before a's waiting diffs, not after all three.
    await Promise.all([...[1, 2, 3, 4].map((n) => diffOf("a", n)), diffOf("b", 1)].map((p) => p.then((label) => ended.push(label))))
    expect(ended).toEqual(["a1", "b1", "a2", "a3", "a4"])
  })
})

describe("visible text", () => {
  it("keeps the title and block text, drops scripts, styles and hidden elements", () => {
    const lines = visibleLines(`<html><head><title>T</title><style>p{}</style></head><body>
      <nav>Menu</nav><h1>Head</h1><p>One <b>bold</b> word</p><script>evil()</script><div hidden>secret</div><ul><li>a</li><li>b</li></ul></body></html>`)
    expect(lines).toEqual(["T", "Menu", "Head", "One bold word", "a", "b"])
  })

  it("keeps the lines of preformatted text, indentation included, so that one changed line is one changed line", () => {
    const lines = visibleLines(`<body><p>Log</p><pre>alpha\n  beta <b>bold</b>\n\ngamma<br>delta<span hidden>x</span>   \n</pre><p>after</p></body>`)
    expect(lines).toEqual(["Log", "alpha", "  beta bold", "gamma", "delta", "after"])
  })
})
