import { execFileSync } from "node:child_process"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "vitest"
import { unifiedDiff } from "../../src/crawl/text-diff.ts"
import { visibleLines } from "../../src/crawl/visible-text.ts"

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

describe("visible text", () => {
  it("keeps the title and block text, drops scripts, styles and hidden elements", () => {
    const lines = visibleLines(`<html><head><title>T</title><style>p{}</style></head><body>
      <nav>Menu</nav><h1>Head</h1><p>One <b>bold</b> word</p><script>evil()</script><div hidden>secret</div><ul><li>a</li><li>b</li></ul></body></html>`)
    expect(lines).toEqual(["T", "Menu", "Head", "One bold word", "a", "b"])
  })
})
