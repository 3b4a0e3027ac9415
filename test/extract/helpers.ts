import { extract } from "../../src/extract/extract.ts"
import type { AppliedConfig, Article, ExtractOutput, InputFormat, Product } from "../../src/extract/types.ts"

export const para = (n: number, topic = "harbour") =>
  Array.from({ length: n }, (_, i) =>
    `<p>Paragraph ${i + 1} about the ${topic}: the council said on Tuesday that the works, which began in spring, will continue until the end of the year, and residents were asked to plan their journeys accordingly.</p>`).join("\n")

export function article(content: string, opts: { format?: InputFormat; url?: string | null; configs?: AppliedConfig[] } = {}): ExtractOutput<Article> {
  return extract({ type: "article", content, inputFormat: opts.format ?? "html", url: opts.url === undefined ? "https://news.example.com/2024/05/story.html" : opts.url, configs: opts.configs ?? [] }) as ExtractOutput<Article>
}

export function product(content: string, opts: { format?: InputFormat; url?: string | null; configs?: AppliedConfig[] } = {}): ExtractOutput<Product> {
  return extract({ type: "product", content, inputFormat: opts.format ?? "html", url: opts.url === undefined ? "https://shop.example.com/p/widget-123" : opts.url, configs: opts.configs ?? [] }) as ExtractOutput<Product>
}
