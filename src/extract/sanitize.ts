/**
 * Sanitizing, done on the tree before any strategy reads it:
 * - executable and non-content elements (`script` except JSON-LD data blocks, `style`, `template`,
 *   `iframe`, `object`, `embed`, `frame`, `base` ...) are removed;
 * - event-handler attributes (`on*`) and `srcdoc` are removed (inline `style` stays: it tells hidden elements);
 * - URL attributes whose value is not http(s) or relative (`javascript:`, `vbscript:`, `data:` except
 *   images) are removed.
 * JSON-LD blocks stay (they are data, read as JSON, never as script) and are read by `structured.ts`.
 */
import { Element } from "./html/parser.ts"

const REMOVE = new Set(["script", "style", "template", "iframe", "frame", "frameset", "object", "embed", "applet", "base", "noembed", "noframes"])
const URL_ATTRS = new Set(["href", "src", "action", "formaction", "poster", "cite", "background", "data", "srcset", "data-src", "data-href", "xlink:href", "longdesc", "lowsrc", "dynsrc", "manifest", "ping"])

function unsafeUrl(v: string): boolean {
  const t = v.replace(/[\u0000-\u0020\u007f]+/g, "").toLowerCase()
  return /^(javascript|vbscript|livescript|mocha):/.test(t) || (t.startsWith("data:") && !t.startsWith("data:image/"))
}

export interface SanitizeStats {
  removedElements: number
  removedAttributes: number
}

/** Sanitizes the tree in place. */
export function sanitizeTree(root: Element): SanitizeStats {
  const stats: SanitizeStats = { removedElements: 0, removedAttributes: 0 }
  const stack: Element[] = [root]
  while (stack.length > 0) {
    const el = stack.pop()!
    const ch = el.children
    let w = 0
    for (let r = 0; r < ch.length; r++) {
      const c = ch[r]!
      if (typeof c !== "string") {
        if (REMOVE.has(c.tag) && !(c.tag === "script" && /ld\+json/i.test(c.attr("type") ?? ""))) {
          stats.removedElements++
          c.parent = null
          continue
        }
        const a = c.attrs
        if (a !== null) {
          for (const k in a) {
            if ((k.charCodeAt(0) === 111 && k.charCodeAt(1) === 110) /* on* */ || k === "srcdoc" || (URL_ATTRS.has(k) && unsafeUrl(a[k]!))) {
              delete a[k]
              stats.removedAttributes++
            }
          }
        }
        if (c.tag !== "script") stack.push(c)
      }
      ch[w++] = c
    }
    ch.length = w
  }
  return stats
}
