/** Public types of the extraction engine (see docs/extraction.md). */

export type ExtractType = "article" | "product"
export type InputFormat = "html" | "markdown" | "text" | "json"

/** One selector of an extractor config: `css` (+ `attr`) for HTML, `json` path for JSON input. */
export interface SelectorSpec {
  readonly css?: string
  readonly attr?: string
  readonly json?: string
  /** Default true: take the element's text (not its markup). Markup is never output, so `false` only keeps line breaks. */
  readonly textOnly?: boolean
  /** Default true: trim and collapse white space. */
  readonly trim?: boolean
}

export interface ConfigPayload {
  readonly selectors?: Readonly<Record<string, ReadonlyArray<SelectorSpec>>>
  /** Restricts the output to these fields (required fields are always kept). */
  readonly fields?: ReadonlyArray<string>
  /** Per field, an ordered map of operation name to options (see `post-process.ts`). */
  readonly postProcess?: Readonly<Record<string, Readonly<Record<string, unknown>>>>
  /** CSS selector of the element that holds the content; extraction looks only inside it. */
  readonly rootSelector?: string
}

export interface AppliedConfig {
  readonly id: string
  readonly payload: ConfigPayload
}

export interface ExtractInput {
  readonly type: ExtractType
  readonly content: string
  readonly inputFormat: InputFormat
  readonly url: string | null
  /** Matched configs, highest priority first. */
  readonly configs: ReadonlyArray<AppliedConfig>
}

export interface Image {
  url: string
  alt?: string
  width?: number
  height?: number
}

export interface Article {
  title: string
  content: string
  description?: string
  summary?: string
  author?: string
  authors?: string[]
  publishedAt?: string
  modifiedAt?: string
  lang?: string
  images?: Image[]
  tags?: string[]
}

export interface Product {
  name: string
  description?: string
  price?: number
  currency?: string
  availability?: string
  sku?: string
  brand?: string
  images?: Image[]
  attributes?: Record<string, string | number | boolean | null>
}

export interface ExtractMetadata {
  inputFormat: InputFormat
  strategiesUsed: string[]
  configsApplied: string[]
  truncated: boolean
  detectedLanguage?: string
  rootSelector?: string
}

export interface ExtractOutput<T extends Article | Product = Article | Product> {
  data: T
  metadata: ExtractMetadata
}
