/** Article fields from an HTML page: structured data, meta tags and the main-content extractor. */
import type { Article } from "../types.ts"
import { byTag, normalizeSpace, rawText, walk, Element } from "../html/dom.ts"
import { objectOf, str, strs, typesOf, type JsonObject, type MetaTags } from "../structured.ts"
import { nodesOfType, type Page } from "../page.ts"
import { extractMainContent, isConsentBox, isConsentText, shownText, startsLine, wordsOf, type MainContent } from "./main-content.ts"
import { readScriptData } from "./script-data.ts"
import { structuredListing } from "./item-list.ts"
import { ImageSet } from "../images.ts"
import { toIsoDateTime } from "../dates.ts"
import { decodeEntities } from "../html/entities.ts"
import { normalizeLang } from "../language.ts"

const ARTICLE_TYPES = new Set([
  "Article", "NewsArticle", "BlogPosting", "ReportageNewsArticle", "AnalysisNewsArticle", "OpinionNewsArticle",
  "ReviewNewsArticle", "BackgroundNewsArticle", "TechArticle", "ScholarlyArticle", "SocialMediaPosting", "LiveBlogPosting",
  "Report", "AdvertiserContentArticle", "SatiricalArticle", "MedicalScholarlyArticle", "DiscussionForumPosting", "Blog",
  "WebPage", "Recipe", "HowTo", "Review", "JobPosting",
])

export interface FieldSources {
  /** field → strategy name that produced it */
  [field: string]: string
}

export interface ArticleResult {
  data: Article
  sources: FieldSources
  /** Strategies that contributed without owning a field (e.g. images). */
  extra: string[]
}

/** Whether a structured author value is one or more Organization nodes and nothing else. */
function onlyOrganisations(author: unknown): boolean {
  const list = Array.isArray(author) ? author : [author]
  return list.length > 0 && list.every((a) => a !== null && typeof a === "object" && typesOf(a as JsonObject).some((t) => /^(Organization|Corporation|NewsMediaOrganization)$/i.test(t)))
}

function notUrl(s: string | undefined): string | undefined {
  if (s === undefined) return undefined
  const t = normalizeSpace(s)
  return t === "" || /^https?:\/\//i.test(t) ? undefined : t
}

/** A scholarly tag's "Family, Given" name as it is written on the page: "Roy, Aniruddha" → "Aniruddha Roy". */
function givenNameFirst(name: string): string {
  const m = /^([^,]+),\s*([^,]+)$/.exec(name.trim())
  return m === null ? name : `${m[2]!.trim()} ${m[1]!.trim()}`
}

/** `Headline | Site` → `Headline` (keeps the part that matches the h1, else the longest part). */
export function cleanTitle(title: string, h1: string | undefined): string {
  const t = normalizeSpace(title)
  const parts = t.split(/\s+[|\-–—:·»«/]\s+|\s+::\s+/).filter((p) => p.length > 0)
  if (parts.length < 2) return t
  if (h1 !== undefined) {
    const hk = h1.toLowerCase()
    for (const p of parts) if (hk === p.toLowerCase()) return p
    if (t.toLowerCase().startsWith(hk)) return h1
  }
  return parts.reduce((a, b) => (b.length > a.length ? b : a))
}

export function articleFromPage(page: Page): ArticleResult {
  const sources: FieldSources = {}
  const extra: string[] = []
  const data: Article = { title: "", content: "" }
  const meta = page.meta
  // (a list's items, a job board's postings, are not the page)
  const listed = listedItems(page)
  const nodes = nodesOfType(page, ARTICLE_TYPES).filter(({ node }) => !listed.has(node))
  // prefer real article types over WebPage
  nodes.sort((a, b) => rank(a.node) - rank(b.node))
  const first = <T>(field: string, pick: (n: JsonObject) => T | undefined): T | undefined => {
    for (const { node, source } of nodes) {
      const v = pick(node)
      if (v !== undefined && (!Array.isArray(v) || v.length > 0)) {
        sources[field] = source
        return v
      }
    }
    return undefined
  }
  const fromMeta = (field: string, keys: string[]): string | undefined => {
    for (const k of keys) {
      const v = meta.get(k)
      if (v !== undefined) {
        sources[field] = /^(og|twitter|article):/.test(k) ? "opengraph" : "meta"
        return v
      }
    }
    return undefined
  }

  let lines: HeadlineLines | undefined
  // (on a front, the lines under its h1 are its first card's: not the page's byline or date)
  const nearHeadline = () => (lines ??= withoutItems(headlineLines(page.scope, data.title), inCard))
  const { headline: h1, banner } = headlineH1(page.scope, meta.title, meta.get("og:site_name"), page.url, true)
  let title = first("title", (n) => str(n.headline) ?? (rank(n) < 2 ? str(n.name) : undefined))
    ?? fromMeta("title", ["og:title", "twitter:title", "dc.title", "title"])
  // a structured headline that neither the h1 nor the meta title shows, where those two agree, is
  // another text (Wikipedia's short description; an SEO headline): the page's own headline wins
  const shownTitle = meta.get("og:title") ?? meta.title
  if (title !== undefined && h1 !== undefined && shownTitle !== undefined && sources.title !== "opengraph" && sources.title !== "meta") {
    const k = titleKey(title), shown = titleKey(shownTitle), head = titleKey(h1)
    if (head.length >= 3 && shown.includes(head) && !shown.includes(k) && !head.includes(k) && !k.includes(head)) {
      title = shownTitle
      sources.title = meta.get("og:title") !== undefined ? "opengraph" : "meta"
    }
  }
  if (title === undefined && h1 !== undefined) { title = h1; sources.title = "main-content" }
  if (title === undefined && meta.title !== undefined && meta.title !== "") { title = meta.title; sources.title = "meta" }
  if (title !== undefined) data.title = headlineOf(normalizeSpace(decodeEntities(title)), h1, meta.get("og:site_name") ?? banner, page.url)

  const description = first("description", (n) => str(n.description))
    ?? fromMeta("description", ["og:description", "description", "twitter:description", "dc.description"])
  if (description !== undefined) data.description = normalizeSpace(description)
  const ldBody = first("_body", (n) => str(n.articleBody) ?? str(n.text))
  // script data is page-wide: not read when a rootSelector narrows the scope
  const whole = page.scope === page.doc.body
  const scripts = whole ? page.scripts ?? [] : []
  const items = whole ? [...page.structured.jsonld, ...page.structured.microdata] : []
  // a page about a product (its structured data or its OpenGraph type says so)
  const productPage = nodesOfType(page, PRODUCT_TYPES).length > 0 || /product/i.test(meta.get("og:type") ?? "")
  const discussion = nodesOfType(page, DISCUSSION_TYPES).length > 0 || (page.url !== null && FORUM_URL.test(page.url)) || pageNamesThread(page.scope)
  const inCard = cardsAlike(page.scope, discussion)
  const main = chooseMainContent(page.scope, data.title, ldBody !== undefined && ldBody.length >= 400, scripts, data.description, items, productPage, discussion)
  // the same short line twice in a row is shown once: a card's name on its picture's link and again in
  // its heading, a price as the regular and the sale price where a style sheet hides one
  let content = main.paragraphs.filter((p, i, all) => i === 0 || p.length >= 200 || p !== all[i - 1]).join("\n\n")
  if (content !== "") sources.content = "main-content"
  if (ldBody !== undefined && ldBody.length > content.length * 2 && (ldBody.length >= 400 || content.length < 50)) {
    content = ldBody.replace(/\r\n?/g, "\n").split(/\n\s*\n|\n/).map((p) => normalizeSpace(p)).filter((p) => p !== "").join("\n\n")
    sources.content = sources._body!
  }
  delete sources._body
  data.content = content

  const summary = data.description ?? main.paragraphs[0]
  if (summary !== undefined && summary !== "") {
    data.summary = summary.length > 400 ? summary.slice(0, 400).replace(/\s+\S*$/, "") + "…" : summary
    if (sources.summary === undefined) sources.summary = data.description !== undefined ? sources.description! : "main-content"
  }

  // user reviews (several Review items, or reviews of a product) are not the page's author
  const reviewsOfPage = nodes.filter(({ node }) => typesOf(node).includes("Review")).length > 1 || nodesOfType(page, PRODUCT_TYPES).length > 0
  let authors = first("authors", (n) => reviewsOfPage && typesOf(n).includes("Review") ? undefined : strs(n.author).map(notUrl).filter((x): x is string => x !== undefined))
  // an organisation as the structured author (a company blog's plugin default) gives way to a person the page's byline names
  // (so is an author string that is the publisher's or the site's name: Squarespace's blog default)
  const siteNames = [str(nodes[0]?.node.publisher), meta.get("og:site_name")].filter((x): x is string => x !== undefined).map(titleKey)
  const isSiteName = (a: string) => siteNames.includes(titleKey(a))
  const organisations = authors !== undefined && authors.length > 0 && (nodes.some(({ node }) => onlyOrganisations(node.author)) || authors.every(isSiteName)) ? authors : undefined
  if (organisations !== undefined) {
    const shown = findByline(page.scope, inCard) ?? (() => { const near = bylineNearHeadline(nearHeadline()); return near !== undefined ? [near] : undefined })()
    if (shown !== undefined && shown.some((name) => !organisations.includes(name))) { authors = shown; sources.authors = "main-content" }
  }
  if (authors === undefined || authors.length === 0) {
    const m = [...meta.all("author"), ...meta.all("article:author"), ...meta.all("dc.creator"), ...meta.all("byl"), ...meta.all("citation_author").map(givenNameFirst)]
      .map((x) => notUrl(x.replace(/^by\s+/i, ""))).filter((x): x is string => x !== undefined)
    if (m.length > 0) { authors = m; sources.authors = "meta" }
  }
  // (a collection's bylines are its items': only a byline line under its headline names its author)
  if (authors === undefined || authors.length === 0) {
    let byline = main.listing === true ? undefined : findByline(page.scope, inCard)
    if (byline === undefined) {
      const near = bylineNearHeadline(nearHeadline())
      if (near !== undefined) byline = [near]
    }
    if (byline !== undefined) { authors = byline; sources.authors = "main-content" }
  }
  if (authors !== undefined) authors = authors.map(cleanAuthor).filter((x): x is string => x !== undefined).flatMap(splitAuthors)
  if (authors !== undefined && authors.length > 0) {
    data.authors = [...new Set(authors)]
    data.author = data.authors.join(", ")
    sources.author = sources.authors!
  }
  // the writer's name alone on the body's last line (VnExpress's right-aligned "Võ Hải", "（佐野遥）"):
  // the byline set at the end, not text
  if (data.authors !== undefined && sources.content === "main-content") {
    const cut = data.content.lastIndexOf("\n\n")
    const tail = data.content.slice(cut + 2)
    // ("© Reuters" is a credit the text keeps)
    const last = /©|copyright/i.test(tail) ? undefined : cleanAuthor(tail.replace(/^[(（【\[—–-]\s*|\s*[)）】\]]$/gu, ""))
    if (cut > 0 && last !== undefined && data.authors.some((a) => titleKey(a) === titleKey(last))) data.content = data.content.slice(0, cut)
  }

  // (`datePosted`: a JobPosting's)
  const published = first("publishedAt", (n) => toIsoDateTime(str(n.datePublished) ?? str(n.dateCreated) ?? str(n.datePosted)))
    ?? toIsoDateTime(fromMeta("publishedAt", ["article:published_time", "og:published_time", "published_time", "date", "pubdate", "publishdate", "publish-date", "dc.date", "dc.date.issued", "sailthru.date", "parsely-pub-date", "datepublished",
      // scholarly pages (Highwire Press tags, read by Google Scholar; PRISM)
      "citation_publication_date", "citation_online_date", "citation_date", "prism.publicationdate"]))
    ?? metaPublished(meta, sources)
    ?? (aboutAnEvent(page, nodes, data.title) ? undefined : shownDate())
  function shownDate(): string | undefined {
    // (a collection's dates are its items': only a date line under its headline dates it)
    const pageWide = main.listing !== true
    return (pageWide ? timeElement(page.scope, sources, inCard) : undefined)
      ?? (pageWide ? dateLabel(page.scope, sources, inCard) : undefined)
      ?? dateUnderHeadline(nearHeadline(), sources)
      ?? urlDate(page.url, sources)
  }
  if (published !== undefined) data.publishedAt = published
  else delete sources.publishedAt
  const modified = first("modifiedAt", (n) => toIsoDateTime(str(n.dateModified)))
    ?? toIsoDateTime(fromMeta("modifiedAt", ["article:modified_time", "og:updated_time", "modified_time", "last-modified", "datemodified"]))
  if (modified !== undefined) data.modifiedAt = modified
  else delete sources.modifiedAt

  const lang = normalizeLang(meta.htmlLang) ?? normalizeLang(first("lang", (n) => str(n.inLanguage))) ?? normalizeLang(meta.get("content-language")) ?? normalizeLang(meta.get("og:locale"))
  if (lang !== undefined) { data.lang = lang; sources.lang ??= "meta" }

  let tags = first("tags", (n) => {
    const k = n.keywords
    const list = typeof k === "string" ? k.split(",") : strs(k)
    const t = list.map((x) => normalizeSpace(x)).filter((x) => x !== "")
    return t.length > 0 ? t : undefined
  })
  if (tags === undefined) {
    const m = [...meta.all("article:tag"), ...meta.all("news_keywords"), ...meta.all("keywords")].flatMap((x) => x.split(",")).map((x) => normalizeSpace(x)).filter((x) => x !== "")
    if (m.length > 0) { tags = m; sources.tags = meta.all("article:tag").length > 0 ? "opengraph" : "meta" }
  }
  if (tags !== undefined) data.tags = [...new Set(tags)].slice(0, 50)

  const images = new ImageSet(page.base)
  let imageSource: string | undefined
  for (const { node, source } of nodes) if (images.addJsonLd(node.image ?? node.thumbnailUrl) > 0) imageSource ??= source
  const ogImages = meta.all("og:image").concat(meta.all("og:image:url"), meta.all("og:image:secure_url"))
  const ogW = meta.get("og:image:width"), ogH = meta.get("og:image:height")
  for (const u of ogImages) if (images.add(u, meta.get("og:image:alt"), ogW, ogH)) imageSource ??= "opengraph"
  for (const u of meta.all("twitter:image").concat(meta.all("twitter:image:src"))) if (images.add(u, meta.get("twitter:image:alt"))) imageSource ??= "opengraph"
  if (main.root !== null && images.addFromElements(main.root) > 0) imageSource ??= "images"
  if (images.images.length > 0) {
    data.images = images.images
    sources.images = imageSource ?? "images"
    extra.push("images")
  }

  if (data.title === "") {
    const fallback = meta.title !== undefined && meta.title !== "" ? cleanTitle(meta.title, h1) : main.paragraphs[0]?.slice(0, 120)
    data.title = fallback !== undefined && fallback !== "" ? fallback : "Untitled"
    sources.title = fallback !== undefined && fallback !== "" ? "meta" : "fallback"
  }
  return { data, sources, extra }
}

/** Below this much body text (weighted characters), a page is not read as a plain article. */
const SHORT_BODY = 1500

/**
 * The article reading of the page, unless it finds little: then the markup inside large noscript
 * elements (script-rendered pages) and the listing reading (collections, fronts, product grids) are
 * tried, and a reading that finds clearly more text wins. See docs/extraction.md.
 */
function chooseMainContent(scope: Element, title: string, structuredBody: boolean, scripts: readonly string[], description: string | undefined, items: readonly JsonObject[], productPage: boolean, discussion: boolean): MainContent {
  const base = { ...(title !== "" ? { title } : {}), ...(description !== undefined ? { description } : {}), discussion }
  let best = extractMainContent(scope, base)
  let size = textSize(best)
  const withoutComments = best.commentsAside === true
  // a structured articleBody says the page is an article (it is used as the body when the reading is short)
  // a reading made of real sentences is a (short) article, not a collection or an empty shell
  if (structuredBody) return best
  if (size >= SHORT_BODY || sentenceParagraphs(best) >= 2) {
    // a page that reads as prose is still a collection when its listing reading finds several times
    // more text (fronts and category pages whose teasers carry a sentence each)
    const listing = extractMainContent(scope, { ...base, listing: true })
    if (textSize(listing) > LONG_LISTING_GAIN * size + 200) return { ...listing, listing: true }
    // a product's page shows its offer, options and specifications around a short description:
    // what it shows is its content when that is clearly more than the prose reading
    if (productPage) {
      const shown = shownText(scope, withoutComments)
      if (textSize(shown) > PRODUCT_SHOWN_GAIN * size + 200) return shown
    }
    return best
  }
  const withNoscript = extractMainContent(scope, { ...base, noscript: true })
  if (textSize(withNoscript) > 2 * size + 200) { best = withNoscript; size = textSize(withNoscript) }
  if (size >= SHORT_BODY) return best
  const listing = extractMainContent(scope, { ...base, noscript: true, listing: true })
  if (textSize(listing) > LISTING_GAIN * size + 200) { best = { ...listing, listing: true }; size = textSize(listing) }
  if (size >= SHORT_BODY) return best
  // the items a collection lists in its structured data, when the markup shows clearly less
  const cards = structuredListing(items)
  if (textSize({ paragraphs: cards, root: null }) > 2 * size + 200) { best = { paragraphs: cards, root: null, listing: true }; size = textSize(best) }
  if (size >= SHORT_BODY) return best
  // script data last: the least direct evidence, it wins only over a page that shows clearly less
  const fromScripts = readScriptData(scripts, title, description)
  if (fromScripts !== undefined && textSize({ ...fromScripts, root: null }) > 2 * size + 200) { best = { paragraphs: fromScripts.paragraphs, root: null }; size = textSize(best) }
  if (size >= (productPage ? SHORT_BODY : NEXT_TO_NOTHING)) return best
  // every reading found next to nothing (or, on a product's page, little): what the page shows, without its furniture
  // and without its title line, which is the title, not content (unless the page shows nothing else)
  const shownAll = shownText(scope, withoutComments)
  const titled = titleKey(title)
  const untitled = shownAll.paragraphs.filter((line) => titleKey(line) !== titled)
  const shown = untitled.length > 0 && title !== "" ? { ...shownAll, paragraphs: untitled } : shownAll
  // (an empty reading gives way to any text: a fragment of a few words is its own content)
  return textSize(shown) > 2 * size + 100 || (size === 0 && textSize(shown) > 0) ? shown : best
}
/** A reading shorter than this (characters) is next to nothing: a paragraph or two at most. */
const NEXT_TO_NOTHING = 500
const LISTING_GAIN = 2
/** A product page's shown text replaces a prose reading when it is this many times longer. */
const PRODUCT_SHOWN_GAIN = 3
/** The listing reading replaces a long or prose reading only when it finds this many times more text. */
const LONG_LISTING_GAIN = 3
const textSize = (m: MainContent) => m.paragraphs.reduce((a, p) => a + sizeOf(p), 0)
/** Characters, CJK ideographs and kana counted twice: a character of Japanese or Chinese carries about what two of English do. */
function sizeOf(p: string): number {
  let n = p.length
  for (let i = 0; i < p.length; i++) {
    const c = p.charCodeAt(i)
    if (c >= 0x2e80 && c <= 0x9fff) n++
  }
  return n
}
/** Paragraphs shaped like prose: long enough and ending a sentence. */
export const sentenceParagraphs = (m: MainContent) => m.paragraphs.filter((p) => sizeOf(p) >= 80 && /[.!?…。！？]["'”’)」』]?$/.test(p)).length

const titleKey = (s: string) => s.normalize("NFKC").toLowerCase().replace(/[^\p{L}\p{N}]+/gu, "")

/** Title separators: `Headline | Site`, `Headline - Site`, `Headline / Forum / Site`… */
const TITLE_SEPARATOR = /\s+[|\-–—:·»«•/]\s+/

const isHomePage = (url: string | null) => {
  try {
    return url !== null && /^\/?(?:index\.\w+)?$/.test(new URL(url).pathname)
  } catch {
    return false
  }
}

/** Keys of the names a page's site goes by: og:site_name, the part of its `<title>` that names it (the last, or a first that names the site), its host. */
function siteNameKeys(title: string | undefined, siteName: string | undefined, url: string | null): Set<string> {
  const keys = new Set<string>()
  if (siteName !== undefined) keys.add(titleKey(siteName))
  const parts = title?.split(TITLE_SEPARATOR) ?? []
  // the part that names the site: the last ("Headline | Site"), or the first when it is the one that
  // names it ("Town of Example | Bulky waste collection dates")
  if (parts.length >= 2) {
    const first = parts[0]!, last = parts[parts.length - 1]!
    keys.add(titleKey(namesSite(first, siteName, url) && !namesSite(last, siteName, url) ? first : last))
  }
  try {
    // "davidbau.com", "blog.example.org": the host with and without its top-level domain
    if (url !== null) {
      const host = new URL(url).hostname.replace(/^www\d?\./, "")
      keys.add(titleKey(host))
      keys.add(titleKey(host.split(".").slice(0, -1).join(".")))
    }
  } catch { /* no host */ }
  keys.delete("")
  return keys
}

/** A consent dialog holds less text than this (markup white space included), in words that ask for consent; an element holding more, or other words, is the page. */
const CONSENT_BOX_MAX = 5000

/**
 * The page's headline h1: the first h1 that is not the site's banner (which is returned too, as a
 * name of the site). Many sites put their own
 * name in an h1 above every page (a logo's text, a book's or a forum's name); an h1 that only
 * repeats a name the site goes by (og:site_name, the trailing part of `<title>`, the host) names
 * the site, not the page; except on the site's home page, or where `<title>` is that name alone.
 */
export function headlineH1(scope: Element, title: string | undefined, siteName: string | undefined, url: string | null, sectionH1s = false): { headline?: string; banner?: string } {
  const site = isHomePage(url) ? new Set<string>() : siteNameKeys(title, siteName, url)
  if (title !== undefined) site.delete(titleKey(title))
  const out: { headline?: string; banner?: string } = {}
  walk(scope, (el) => {
    if (out.headline !== undefined) return false
    // (a consent dialog's h1, "Votre vie privée nous importe", heads no page; a wrapper of the whole
    // page whose class says consent was given, `cookie-consent-given`, is no dialog)
    if (isConsentBox(el)) {
      const text = rawText(el, CONSENT_BOX_MAX)
      if (text.length < CONSENT_BOX_MAX && isConsentText(normalizeSpace(text))) return false
    }
    if (el.tag !== "h1") return
    const text = normalizeSpace(rawText(el))
    if (text === "") return false
    if (!site.has(titleKey(text))) out.headline = text
    else out.banner ??= text
    return false
  })
  // an article page that sets its sections in h1s (a manual page's NAME, SYNOPSIS…) is headed by its
  // <title>, unless that holds the first of them
  if (sectionH1s && out.headline !== undefined && title !== undefined && title.trim() !== "" && !titleKey(title).includes(titleKey(out.headline)) && setsSectionsInH1s(scope)) delete out.headline
  return out
}

/**
 * Whether the page sets its sections in h1s: three or more h1s with text, outside its chrome (header,
 * navigation, footer, aside), under parents of one kind (one parent, or sibling sections alike: a
 * manual page's `section.Sh`), not a logo's, a headline's and a footer's h1 in three places.
 */
function setsSectionsInH1s(scope: Element): boolean {
  const parents = new Map<string, number>()
  let found = false, seen = 0
  walk(scope, (el) => {
    if (found || seen >= 50) return false
    if (el.tag === "header" || el.tag === "nav" || el.tag === "footer" || el.tag === "aside") return false
    if (el.tag !== "h1") return
    seen++
    const p = el.parent
    if (p !== null && normalizeSpace(rawText(el, 200)) !== "") {
      const k = `${p.tag} ${p.attr("class") ?? ""}`
      const n = (parents.get(k) ?? 0) + 1
      parents.set(k, n)
      if (n >= 3) found = true
    }
    return false
  })
  return found
}

/**
 * The headline itself, without the site name that titles carry: the page's h1 when the title contains
 * it, else the title without a trailing part that names the site (og:site_name or the host).
 */
export function headlineOf(title: string, h1: string | undefined, siteName: string | undefined, url: string | null): string {
  // forum software heads a thread "Thread: …" (vBulletin) or "Topic: …"
  if (h1 !== undefined) h1 = h1.replace(THREAD_LABEL, "")
  title = title.replace(THREAD_LABEL, "")
  if (h1 !== undefined) {
    const hk = titleKey(h1)
    if (hk.length >= 3 && titleKey(title).includes(hk)) return normalizeSpace(h1)
  }
  const parts = title.split(TITLE_SEPARATOR)
  if (parts.length < 2) return title
  if (namesSite(parts[parts.length - 1]!, siteName, url)) {
    const sep = /\s+[|\-–—:·»«•/]\s+(?!.*\s+[|\-–—:·»«•/]\s+)/.exec(title)
    return sep !== null ? title.slice(0, sep.index).trim() : title
  }
  // "Town of Example | Bulky waste collection dates": the site's name may come first
  if (namesSite(parts[0]!, siteName, url)) {
    const sep = TITLE_SEPARATOR.exec(title)
    return sep !== null ? title.slice(sep.index + sep[0].length).trim() : title
  }
  return title
}

const THREAD_LABEL = /^(thread|topic|thema|sujet|tema|discussion)\s*:\s+/i

/** Whether a part of a title names the site: its og:site_name, or words holding a label of its host ("blog.tarkett.com" → blog, tarkett). */
function namesSite(part: string, siteName: string | undefined, url: string | null): boolean {
  const k = titleKey(part)
  if (siteName !== undefined && k === titleKey(siteName)) return true
  let labels: string[] = []
  try {
    if (url !== null) labels = new URL(url).hostname.split(".").slice(0, -1).filter((l) => l.length >= 3 && !/^www\d?$/.test(l))
  } catch { /* no host */ }
  return k.length >= 3 && labels.some((l) => k.includes(l) || l.includes(k))
}

/**
 * A meta tag the site named for the publication date in its own words: `og:publish_date`,
 * `article.published`, `w-published-date`, `pub_date`, `publishedAt` (not `publisher`, `published_by`,
 * `last-published-date`, `auto-publish`). Its value must hold a year or be an epoch: loose date
 * parsing reads "1" or "Section 3" as days of 2001.
 */
function metaPublished(meta: MetaTags, sources: FieldSources): string | undefined {
  const v = meta.find((key, value) => isPublishedKey(key) && /(^|\D)(19|20)\d\d(\D|$)|^\d{10}(\d{3})?$/.test(value) && toIsoDateTime(value) !== undefined)
  if (v === undefined) return undefined
  sources.publishedAt = "meta"
  return toIsoDateTime(v)
}
const isPublishedKey = (key: string) => {
  const words = key.split(/[^a-z]+/)
  return !words.some((w) => PUBLISHED_NOT.has(w)) && (words.some((w) => PUBLISHED_KEY.has(w)) ||
    ((words.includes("publish") || words.includes("pub")) && (words.includes("date") || words.includes("time"))))
}
/** Meta key words that name the publication date (keys are lower-cased: `publishedAt` is `publishedat`). */
const PUBLISHED_KEY = new Set("published pubdate publishdate publisheddate datepublished publishedat publishtime publishedtime publishedon".split(" "))
/** Words of keys that name something else: who or where it was published, another edition's date. */
const PUBLISHED_NOT = new Set("by in last next modified updated update version format status unpublish".split(" "))

function rank(n: JsonObject): number {
  const t = (n["@type"] ?? "").toString()
  if (/Article|Posting|Report/.test(t)) return 0
  if (/Recipe|HowTo|Review|Blog/.test(t)) return 1
  return 2
}

function timeElement(root: Element, sources: FieldSources, inCard: InCard): string | undefined {
  // the first <time> marked as the publication's wins; else the first that is not marked as an update
  // and does not stand in the page's chrome or its comments (a masthead's "today", a reader's reply)
  let marked: string | undefined, plain: string | undefined
  let seen = 0
  walk(root, (el) => {
    if (marked !== undefined || seen >= 100) return false
    if (el.tag !== "time") return
    seen++
    const v = toIsoDateTime(el.attr("datetime") ?? normalizeSpace(rawText(el)))
    if (v === undefined || inCard(el)) return
    const words = `${el.attr("class") ?? ""} ${el.attr("itemprop") ?? ""} ${el.attr("id") ?? ""}`.toLowerCase()
    if (/publish|pubdate|date-?created/.test(words) || el.attr("pubdate") !== undefined) { if (!inChromeOrComments(el)) marked = v; return }
    if (plain === undefined && !NOT_PUBLICATION_MARK.test(words) && !saysUpdated(el) && !inChromeOrComments(el)) plain = v
    return
  })
  const out = marked ?? plain
  if (out !== undefined) sources.publishedAt = "main-content"
  return out
}

/** Inside the site's header, top bar, navigation or footer, outside any article or `<main>` (a sidebar may hold the post's own meta). */
function inSiteBar(el: Element): boolean {
  for (let e: Element | null = el; e !== null && e.tag !== "body"; e = e.parent) {
    if (e.tag === "article" || e.tag === "main") return false
    if (e.tag === "header" || e.tag === "nav" || e.tag === "footer" || SITE_BAR.test(`${e.attr("class") ?? ""} ${e.attr("id") ?? ""}`.toLowerCase())) return true
  }
  return false
}
const SITE_BAR = /(?:^|[^a-z])(?:topbar|top-bar|masthead|site-?header|site-?footer|navbar)(?:[^a-z]|$)/

/**
 * Readers' comments anywhere, and page chrome outside the article: navigation, sidebars, footers, a
 * masthead; and an article that is a card among related stories (`<section class="related-stories">
 * <article class="card">`).
 */
function inChromeOrComments(el: Element): boolean {
  let chrome = false, inArticle = false
  for (let e = el.parent; e !== null && e.tag !== "body" && e.tag !== "html"; e = e.parent) {
    const words = `${e.attr("class") ?? ""} ${e.attr("id") ?? ""}`.toLowerCase()
    if (COMMENTS.test(words)) return true
    if (inArticle) {
      if (e.tag === "aside" || e.tag === "nav" || RELATED.test(words)) return true
      continue
    }
    // inside the article its footer and meta lines are the article's (`<footer class="entry-footer">`)
    if (e.tag === "article" || e.tag === "main") {
      if (chrome) return false
      inArticle = true
      continue
    }
    if (e.tag === "nav" || e.tag === "aside" || e.tag === "footer" || CHROME.test(words)) chrome = true
  }
  return chrome
}
const RELATED = /(?:^|[^a-z])(?:related|recommended|more-stories|read-more|also-read)(?:[^a-z]|$)/
const COMMENTS = /(?:^|[^a-z])(?:comments?|comment-?list|replies|reply|responses|disqus)(?:[^a-z]|$)/
const CHROME = /(?:^|[^a-z])(?:sidebar|related|topbar|top-bar|masthead|site-?header|site-?footer|footer|navbar|nav)(?:[^a-z]|$)/

/**
 * A discussion (a forum thread, a Q&A page) is its posts, whatever they are called: its replies are
 * often marked "comment" (Invision's `ipsComment`), and they are the content. Known by its structured
 * type or by the addresses forum software gives threads.
 */
const DISCUSSION_TYPES = new Set(["DiscussionForumPosting", "QAPage", "Question"])
/**
 * Forum software names the page itself a thread: `<main class="ThreadViewPage">`, `<body
 * class="section-viewtopic">`, `<body id="forum">`. (Blogs use "thread" inside their comments section,
 * never on the page's own `<body>` or `<main>`.)
 */
function pageNamesThread(scope: Element): boolean {
  const mains = byTag(scope, "main").slice(0, 2)
  return (scope.tag === "body" ? [scope, ...mains] : mains).some((el) => wordsOf(`${el.attrs?.class ?? ""} ${el.attrs?.id ?? ""}`).some((w) => THREAD_WORDS.has(w)))
}
const THREAD_WORDS = new Set(["thread", "threads", "threadview", "viewtopic", "showthread", "topic", "forum", "forums", "discussion"])
const FORUM_URL = /^https?:\/\/(?:forums?|community|boards|discuss|discourse)\.|\/(?:forums?|threads?|topics?|t|showthread(?:\.php)?|viewtopic(?:\.php)?|discussions?|questions)\/|^https?:\/\/[^/]+\/[^/?#]+\/[^/?#]+\/(?:-\/)?(?:issues|pulls?|merge_requests)\/\d+\/?(?:[?#]|$)/i

/**
 * Whether the page is an event's own page: structured data describes an event by the page's title, and
 * no article. The dates it shows (under its h1, in `<time>`, in its address) are then when the event
 * takes place, not when the page was published.
 */
function aboutAnEvent(page: Page, articles: ReadonlyArray<{ node: JsonObject }>, title: string): boolean {
  if (title === "" || articles.some(({ node }) => rank(node) < 2)) return false
  const key = titleKey(title)
  return [...page.structured.jsonld, ...page.structured.microdata, ...page.structured.rdfa].some((n) =>
    typesOf(n).some((t) => EVENT_TYPE.test(t)) && titleKey(str(n.name) ?? "") === key)
}
/** schema.org's Event and its subtypes (MusicEvent, SportsEvent, Festival…), not the publication kinds (BroadcastEvent). */
const EVENT_TYPE = /^(?!Publication|Broadcast|OnDemand)\w*Event$|^Festival$/

/** Types whose presence makes Review items the product's user reviews. */
const PRODUCT_TYPES = new Set(["Product", "ProductGroup", "Offer", "AggregateOffer"])

/**
 * An author name as a byline shows it, without its decoration: quotes, "By"/"Author"/"Written by"
 * (also glued: "BySummer Swann"), a trailing date or "· 5 min read". Undefined when what is left is a
 * date or not a name.
 */
export function cleanAuthor(raw: string): string | undefined {
  let t = normalizeSpace(raw).replace(/^["'“”‘’]+|["'“”‘’]+$/g, "")
  // a line that starts with a weekday or month is a date line, not a name
  if (/^(mon|tue|wed|thu|fri|sat|sun|jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?,?\s+(\d|(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+\d)/i.test(t)) return undefined
  t = t.replace(/^(written by|posted by|reviewed by|authored by|author:?|by:?|von|par|por|door)\s+/i, "")
  // the label in other languages ("Автор: Анна Сорокина", "Yazar: Ali Demir", "记者 陈嘉宁"), a Korean
  // role after the name ("김서연 기자"), a Japanese name in lenticular brackets ("【佐野遥】")
  t = t.replace(/^(?:autor|autorin|auteur|autore|autora|автор|авторы|yazar|författare|forfattar|forfatter|penulis|tác giả)\s*:\s*|^(?:作者|文|撰文|编辑|編輯)\s*[:：]\s*|^(?:本报|本報)?(?:记者|記者)(?:\s+|\s*[:：]\s*)(?=\p{Script=Han})/iu, "")
  t = t.replace(/(?<=\p{Script=Hangul})\s*(?:선임기자|객원기자|수습기자|기자|특파원)$/u, "").replace(/^【([^【】]{1,30})】$/u, "$1")
  t = t.replace(/^By(?=\p{Lu})/u, "")
  // a credit's label ("Story by", "Interview by", "Reporting by"), a role after a bar ("| Staff Writers"),
  // a place or role in parentheses ("Claire Dumas (Marseille, correspondante)")
  t = t.replace(/^\p{L}+(?: \p{L}+)? by\s+(?=\p{Lu})/u, "").replace(/\s+\|\s.*$/u, "").replace(/\s*\([^()]*\)$/u, "")
  // cut at a separator followed by a date or reading time
  t = t.replace(/\s*[-–—|·•,]\s*(\p{L}{3,9}\.? \d{1,2},? \d{4}|\d{1,2}[./ ]\p{L}*[./ ]?\d{2,4}|\d{4}-\d\d-\d\d|\d+ min(ute)?s? read).*$/u, "")
  t = t.replace(/(?<=\p{Ll})[-–—](?=\p{Lu}\p{Ll}+ \d)/u, " ").replace(/\s+(\p{Lu}\p{Ll}+ \d{1,2},? \d{4}).*$/u, "")
  t = t.trim()
  if (t.length < 2 || t.length > 100 || /^(undefined|null|none|n\/a|unknown|admin|(about )?(the )?authors?|written by|posted by):?$/i.test(t)) return undefined
  if (toIsoDateTime(t) !== undefined && /\d/.test(t)) return undefined
  if (/\d{1,2}:\d\d/.test(t)) return undefined
  return t
}

/** Whether an element stands inside one of several cards alike (see `cardsAlike`). */
type InCard = (el: Element) => boolean

/**
 * Cards alike: an element is one item's among several (a front's or a list's cards, each with its
 * byline and its date) when an ancestor, from its parent up to five levels higher, has at least two
 * siblings of its own kind that hold an element of the element's own kind and a headline (an h2–h6, or
 * a link of three words or more). A kind is a tag and its classes, modifier classes (`card--lead`)
 * aside. The ancestor that holds the page's headline (its first h1) is the page, no card. Such dates
 * and bylines are the items', not the page's; on a discussion each post is the thread's, and nothing
 * is a card. See docs/extraction.md ("Cards alike").
 */
function cardsAlike(scope: Element, discussion: boolean): InCard {
  if (discussion) return () => false
  /** The page's first h1 and its ancestors, found on the first question. */
  const headlinePath = () => {
    let headline = null as Element | null
    walk(scope, (el) => { if (headline !== null) return false; if (el.tag === "h1") { headline = el; return false } })
    const path = new Set<Element>()
    for (let e: Element | null = headline; e !== null; e = e.parent) path.add(e)
    return path
  }
  let onPath: Set<Element> | undefined
  let asked = 0
  const kind = (e: Element) => {
    const cls = e.attr("class")
    return cls === undefined ? e.tag : `${e.tag} ${cls.includes("--") ? cls.split(/\s+/).filter((c) => !c.includes("--")).join(" ") : cls.trim()}`
  }
  const headed = (card: Element) => {
    let found = false
    walk(card, (d) => {
      if (found) return false
      if (/^h[2-6]$/.test(d.tag) || (d.tag === "a" && normalizeSpace(rawText(d, 120)).split(" ").length >= 3)) { found = true; return false }
    })
    return found
  }
  return (el) => {
    // (bounded: a page of thousands of marked names asks about the first ones only)
    if (++asked > MAX_CARD_QUESTIONS) return false
    onPath ??= headlinePath()
    const own = kind(el)
    let e = el.parent
    for (let level = 0; level < 6 && e !== null; level++) {
      const p = e.parent
      if (p === null || p.tag === "body" || p.tag === "html" || onPath.has(e)) return false
      const item = kind(e)
      let alike = 0, looked = 0
      for (const s of p.children) {
        if (typeof s === "string" || s === e) continue
        if (++looked > 30) break
        if (kind(s) !== item) continue
        let holds = false
        walk(s, (d) => { if (holds) return false; if (kind(d) === own) holds = true })
        if (holds && headed(s) && ++alike >= 2) return true
      }
      e = p
    }
    return false
  }
}
/** At most this many elements are asked about per page. */
const MAX_CARD_QUESTIONS = 200

/** The structured items of the page's lists (`ItemList` elements, a `ListItem`'s `item`), breadcrumbs aside. */
function listedItems(page: Page): Set<JsonObject> {
  const out = new Set<JsonObject>()
  // (an item that is the page itself, by its address, stays the page's)
  const own = (n: JsonObject) => page.url !== null && [str(n.url), str(n["@id"])].some((u) => u !== undefined && sameAddress(u, page.url!))
  for (const list of [page.structured.jsonld, page.structured.microdata]) {
    for (const n of list) {
      const types = typesOf(n)
      if (!types.includes("ItemList") || types.includes("BreadcrumbList")) continue
      const els = n.itemListElement
      for (const e of Array.isArray(els) ? els : [els]) {
        const li = objectOf(e)
        if (li === undefined) continue
        const item = objectOf(li.item)
        if (own(li) || (item !== undefined && own(item))) continue
        out.add(li)
        if (item !== undefined) out.add(item)
      }
    }
  }
  return out
}

/** Whether two addresses name one page (scheme, `www.`, a trailing slash, the query and the fragment aside). */
function sameAddress(a: string, b: string): boolean {
  try {
    const key = (u: string) => { const x = new URL(u, b); return `${x.hostname.replace(/^www\./, "")}${x.pathname.replace(/\/+$/, "")}` }
    return key(a) === key(b)
  } catch {
    return false
  }
}

/**
 * A `<time>` that a label just before it calls an update ("Last updated <time>3 months ago</time>",
 * "Updated: <b><time>…</time></b>"; read in its parent, and in its grandparent when the parent is inline).
 */
function saysUpdated(time: Element): boolean {
  let child = time
  for (let up = 0; up < 2; up++) {
    const line = child.parent
    if (line === null) return false
    let before = ""
    for (const c of line.children) {
      if (c === child) break
      before += typeof c === "string" ? c : rawText(c, 80)
    }
    if (NOT_PUBLISHED.test(before.slice(-60))) return true
    if (!INLINE.has(line.tag)) return false
    child = line
  }
  return false
}
const INLINE = new Set(["b", "strong", "em", "i", "span", "small", "a", "font"])

/** Words of class/id/itemprop values that mark a publication date line. */
const DATE_CLASS = /(^|[^a-z])(date|published|publish|pubdate|posted|post-date|entry-date|timestamp|dateline)([^a-z]|$)/i
/** class/id words of a date element that is no publication date: a revision's, an update's, a footer's. */
const NOT_PUBLICATION_MARK = /updat|modif|revision|edited|(?:^|[^a-z])foot(?:er)?(?:[^a-z]|$)/i
/** Labels that make a visible date a modification or event date, not the publication. */
const NOT_PUBLISHED = /\b(updated|modified|last edited|revised|event|expires|ends?)\b|\b(mis|mise)e?s? à jour|\b(aktualisiert|geändert|actualizad[oa]|actualización|aggiornat[oa]|bijgewerkt|atualizad[oa]|zaktualizowano)\b/i

/** A short visible text in an element marked as a date ("Posted on March 3, 2025"), the first one. */
function dateLabel(root: Element, sources: FieldSources, inCard: InCard): string | undefined {
  let out: string | undefined
  walk(root, (el) => {
    if (out !== undefined) return false
    const mark = (el.attr("class") ?? "") + " " + (el.attr("id") ?? "") + " " + (el.attr("itemprop") ?? "")
    if (!DATE_CLASS.test(mark.replace(/([a-z])([A-Z])/g, "$1-$2"))) return
    // a revision's date (MkDocs' `git-revision-date`) or a footer's ("foot-date": a manual page's release)
    if (NOT_PUBLICATION_MARK.test(mark) || inCard(el)) return false
    // (a top bar's "Tuesday 3 February 2026" is today's date, not the article's)
    if (inSiteBar(el)) return false
    const t = normalizeSpace(rawText(el))
    if (t.length < 6 || t.length > 80 || NOT_PUBLISHED.test(t) || !/\d/.test(t)) return
    const v = toIsoDateTime(t.replace(/^(posted|published|on|am|le|el|il)\b[:\s]*/gi, "").replace(/^(on)\s+/i, "")) ?? visibleDate(t)
    if (v !== undefined) { out = v; sources.publishedAt = "main-content" }
    return false
  })
  return out
}

/**
 * The date of a line near the page's h1, where a post without date markup shows when it was written:
 * under the h1 a line that is only a date ("December 15, 2025", "Posted on 3 March 2025") or a byline
 * line with its date; above it only a byline or publication line.
 */
function dateUnderHeadline(lines: HeadlineLines, sources: FieldSources): string | undefined {
  // (a byline line's date is read before any "Updated" or "Modified": that one is no publication date)
  const bylineDate = (t: string) => t.length <= 100 && BYLINE_DATE.test(t) ? visibleDate(t.split(NOT_PUBLISHED)[0]!) : undefined
  const dateOf = (t: string) => (t.length <= 40 && ONLY_DATE.test(t)) ? visibleDate(t) : bylineDate(t)
  let out: string | undefined
  for (const [, t] of lines.after) if ((out = dateOf(t)) !== undefined) break
  if (out === undefined) for (const [, t] of lines.before) if ((out = bylineDate(t)) !== undefined) break
  if (out !== undefined) sources.publishedAt = "main-content"
  return out
}
/** A short text that is a date and nothing else (an optional "Posted on" before it, a time of day after it: "2026-11-29 09:15", "29.11.2026, 14:20 Uhr"). */
const ONLY_DATE = /^(?:(?:posted|published|written)\s+(?:on\s+)?)?(?:\d{4}-\d\d-\d\d|\p{L}{3,10}\.? \d{1,2},? \d{4}|\d{1,2}\.? (?:de )?\p{L}{3,10}\.? (?:de )?\d{4}|\d{1,2}[./]\d{1,2}[./]\d{4}|\d{4}\s*[年년]\s*\d{1,2}\s*[月월]\s*\d{1,2}\s*[日일])(?:,?\s*(?:at\s+|um\s+|à\s+|alle\s+|a las\s+|-\s+|\|\s+)?\d{1,2}[:h.]\d\d(?::\d\d)?\s*(?:[ap]\.?m\.?|uhr|h)?(?:\s+[A-Z]{2,4})?)?$/iu

/** A date in the page's address (`/2025/12/15/slug`, `/2025-12-15-slug`): the last evidence there is. */
function urlDate(url: string | null, sources: FieldSources): string | undefined {
  if (url === null) return undefined
  let path: string
  try { path = new URL(url).pathname } catch { return undefined }
  const m = /(?:^|[/_+-])((?:19|20)\d\d)([/-])(0[1-9]|1[0-2])\2(0[1-9]|[12]\d|3[01])(?=$|[/_+.-])/.exec(path)
  if (m === null) return undefined
  const v = toIsoDateTime(`${m[1]}-${m[3]}-${m[4]}`)
  if (v !== undefined) sources.publishedAt = "main-content"
  return v
}

/** A date written out somewhere in a short text ("By Ann · March 3, 2025 · 5 min read"). */
function visibleDate(t: string): string | undefined {
  const m = /\b(\d{4}-\d\d-\d\d)\b|(?<!\p{L})(\p{L}{3,10}\.? \d{1,2},? \d{4})\b|\b(\d{1,2}\.? (?:de )?\p{L}{3,10}\.? (?:de )?\d{4})\b|\b(\d{1,2}[./]\d{1,2}[./]\d{4})\b|(\d{4}\s*[年년]\s*\d{1,2}\s*[月월]\s*\d{1,2}\s*[日일])/u.exec(t)
  return m !== null ? toIsoDateTime(m[0]) : undefined
}

/** Whether an element holds blocks (then its lines are its children's); a `<br>` only breaks its line. */
/** (Old layouts center and tabulate their headlines: `center` and table cells count as the main-content reading counts them.) */
const holdsBlocks = (el: Element) => el.children.some((c) => typeof c !== "string" && c.tag !== "br" && startsLine(c.tag))

/** How many lines before and after the h1 may hold its byline and date. */
const HEADLINE_LINES = 6

/** The lines next to the page's first h1 (elements holding no blocks, with their text), nearest first. */
interface HeadlineLines {
  before: Array<[Element, string]>
  after: Array<[Element, string]>
}
/** The lines without those inside cards alike (see `cardsAlike`). */
function withoutItems(lines: HeadlineLines, inCard: InCard): HeadlineLines {
  const keep = ([el]: [Element, string]) => !inCard(el)
  return { before: lines.before.filter(keep), after: lines.after.filter(keep) }
}
function headlineLines(root: Element, title: string): HeadlineLines {
  const before: Array<[Element, string]> = [], after: Array<[Element, string]> = []
  const headline = headlineElement(root, title)
  let seenH1 = false
  walk(root, (el) => {
    if (after.length >= HEADLINE_LINES) return false
    if (el === headline && !seenH1) { seenH1 = true; return false }
    // a picture's caption and credit are neither byline nor date
    if (el.tag === "figure" || el.tag === "figcaption") return false
    if (holdsBlocks(el)) return
    // (read up to a bound: a page without an h1 has only "before" lines, and they may be long)
    const t = normalizeSpace(rawText(el, BYLINE_RAW_MAX))
    if (t === "") return false
    if (seenH1) after.push([el, t])
    else {
      before.unshift([el, t])
      if (before.length > HEADLINE_LINES) before.pop()
    }
    return false
  })
  return seenH1 ? { before, after } : { before: [], after: [] }
}
/** The page's first h1; on a page without one, the first h2 or h3 that is the title (news sites that set their headline in an h2). */
function headlineElement(root: Element, title: string): Element | undefined {
  const key = titleKey(title)
  let h1: Element | undefined, titled: Element | undefined
  walk(root, (el) => {
    if (h1 !== undefined) return false
    if (el.tag === "h1") { h1 = el; return false }
    if (titled === undefined && key.length >= 8 && (el.tag === "h2" || el.tag === "h3") && titleKey(rawText(el, 400)).includes(key)) titled = el
    return
  })
  return h1 ?? titled
}

/**
 * "By Ann Writer", "Published August 7, 2023 by Ann Writer | News": "by" (and its equivalents) followed by
 * a name of capitalized words, at the start of a line or after a separator or a date's digits; "by" in
 * the middle of a sentence ("a startup founded by …", "Photo by …") is no byline. Each name word takes
 * its whole run of letters, so a line splits into words one way only (no backtracking on long runs).
 */
const BY_WORD = "(?:[Bb]y|BY|[Vv]on|[Pp]ar|[Pp]or|[Pp]rzez|[Aa]v|[Aa]f)"
const BY_AT = "(?:^|[|·•,–—-]\\s*|\\d\\s+)"
const BY_NAME = new RegExp(`${BY_AT}${BY_WORD}\\s+((?:(?:\\p{Lu}[\\p{L}'’-]*\\.?|de|da|del|della|der|den|van|von|la|le|bin|ibn|and|und|et|&)(?![\\p{L}'’-])\\s*){1,6})(?=$|[\\s|·•,–—(-])`, "u")
const TRAILING_MONTH = /\s+(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)\.?$/
/** "By" ending a text, the name in the element after it: `By <a href="/author/ann">Ann Writer</a>`. */
const BY_BEFORE_ELEMENT = new RegExp(`${BY_AT}${BY_WORD}:?\\s*$`, "u")
/** Copyright lines ("© 2024 by Acme Corp") name an owner, not an author. */
const COPYRIGHT = /©|\bcopyright\b/i
/**
 * A byline or publication line that carries the date: "by Jon Foster - 2025-09-13", "Published August 7,
 * 2023 by Ann Writer" (its first date is read: an "Updated" date comes after the publication's).
 */
const BYLINE_DATE = new RegExp(`^(?:[Pp]ublished|[Pp]osted|[Ww]ritten|PUBLISHED|POSTED)\\b|${BY_NAME.source}`, "u")
/** A name as bylines write it: two to six words, the first capitalized. */
const isNameShape = (name: string) => {
  const words = name.split(/\s+/)
  return words.length >= 2 && words.length <= 6 && /^\p{Lu}/u.test(name) && !/\d/.test(name)
}

/** An unmarked byline on one of the lines around the page's first h1, under it first. */
function bylineNearHeadline(lines: HeadlineLines): string | undefined {
  // (a lone capitalized word after "by" is often a company or a tag: names have two words or more)
  const read = (el: Element, t: string) => {
    if (t.length > 100 || COPYRIGHT.test(t)) return undefined
    const ch = el.children
    for (let k = 0; k + 1 < ch.length; k++) {
      const c = ch[k]!, next = ch[k + 1]!
      if (typeof c !== "string" || typeof next === "string" || !BY_BEFORE_ELEMENT.test(c)) continue
      const name = normalizeSpace(rawText(next, 200))
      if (isNameShape(name)) return name
    }
    const m = BY_NAME.exec(t)
    if (m === null) return undefined
    // (a date may follow the name: "By Lena Park March 1, 2026"; "By Theresa May" is a name)
    let name = m[1]!.trim().replace(/\s+(and|&)$/, "")
    if (/^\s*\d/.test(t.slice(m.index + m[0].length))) name = name.replace(TRAILING_MONTH, "")
    return isNameShape(name) ? name : undefined
  }
  for (const [el, t] of [...lines.after, ...lines.before]) {
    const name = read(el, t)
    if (name !== undefined) return name
  }
  return undefined
}

function findByline(root: Element, inCard: InCard): string[] | undefined {
  let out: string[] | undefined
  walk(root, (el) => {
    if (out !== undefined) return false
    // customers' reviews and testimonials name their writers, not the page's
    if (isReviewOrTestimonial(el)) return false
    const mark = bylineMark(el)
    if (mark === BylineMark.None) return
    if (inCard(el)) return false
    // an author box holds the names' own elements (`rel="author"`, `author-name`): those, not the
    // box's labels ("Author:", "Senior Editor"); a marked line that holds no name (a forum post's date
    // under class "author") does not end the search. A name's marked siblings are co-authors
    // ("By <a rel=author>Jane Doe</a> and <a rel=author>John Roe</a>").
    // a microdata author item names its person in its own `itemprop="name"` (beside a reputation, a badge)
    const own = el.attr("itemprop")?.trim().toLowerCase() === "author" ? itempropName(el) : undefined
    if (own !== undefined) { out = [own]; return false }
    const line = el.parent !== null && rawText(el.parent, BYLINE_LINE_MAX).length < BYLINE_LINE_MAX ? el.parent : null
    const names = namesMarkedIn(mark === BylineMark.Name && line !== null ? line : el)
    if (names.length > 0) out = names
    else {
      const t = bylineText(el)
      if (t !== undefined) out = [t]
    }
    return false
  })
  return out
}

/**
 * An element whose class or id names a customer's review or a testimonial: `testimonials`,
 * `customer-reviews`, `review-card`, `featured-review_rating-author` ("review" with a word of a review
 * widget: an editorial review's `<article class="review">` is the page).
 */
function isReviewOrTestimonial(el: Element): boolean {
  const marks = `${el.attr("class") ?? ""} ${el.attr("id") ?? ""}`
  if (marks.length <= 5 || !/review|testimonial/i.test(marks)) return false
  const words = wordsOf(marks)
  return words.some((w) => w === "testimonial" || w === "testimonials") || (words.some((w) => w === "review" || w === "reviews") && words.some((w) => REVIEW_WIDGET.has(w)))
}
/** Words that make a "review" element a customer's review (a widget's card, list, rating, stars). */
const REVIEW_WIDGET = new Set("card cards item items list author rating ratings stars customer customers user users featured widget slider carousel".split(" "))

/** The text of the first `itemprop="name"` below an item, when it reads as a name. */
function itempropName(item: Element): string | undefined {
  let out: string | undefined
  walk(item, (e) => {
    if (out !== undefined) return false
    if (e === item) return
    if (e.attr("itemprop")?.trim().toLowerCase() === "name") { out = e.attr("content") ?? bylineText(e); return false }
    // a nested item (the author's image, employer) names itself, not the author
    return e.attr("itemscope") === undefined
  })
  return out
}

/** The elements below `box` marked as names whose texts are ones (a few at most; marks inside a name's element are that name's). */
function namesMarkedIn(box: Element): string[] {
  const out: string[] = []
  walk(box, (el) => {
    if (out.length >= 6) return false
    if (el === box || bylineMark(el) !== BylineMark.Name) return
    // (a name's container, `username_container`, may hold its menu too: the name inside it is the name)
    if (holdsMarkedName(el)) return
    const t = bylineText(el)
    if (t !== undefined && !out.includes(t)) out.push(t)
    return false
  })
  return out
}

/** Whether an element holds another element marked as a name. */
function holdsMarkedName(el: Element): boolean {
  let found = false
  walk(el, (e) => {
    if (found) return false
    if (e !== el && bylineMark(e) === BylineMark.Name) found = true
  })
  return found
}

/**
 * Names a byline joins ("Jane Doe and John Roe", "Anna Schmidt und Jonas Weber", "A, B and C", "A, B, C"),
 * split when each part is a name of two words or more ("Tom and Jerry", "Doe, Jane" stay whole).
 */
function splitAuthors(name: string): string[] {
  const isName = (p: string) => /^\p{Lu}/u.test(p) && p.split(/\s+/).length >= 2 && p.split(/\s+/).length <= 5
  // "A and B", "A, B and C", "A, B, C"; a single comma is one name with its title, outlet or place
  // ("Jane Doe, Senior Editor", "Jane Doe, The Arizona Republic", "García López, María José": words
  // cannot tell those from two names), and Spanish and Portuguese double surnames join with "y"/"e"
  const joined = /\s+(?:and|und|et|&)\s+/u.test(name)
  const commas = (name.match(/,/g) ?? []).length
  if (!joined && commas < 2) return [name]
  const parts = name.split(/\s+(?:and|und|et|&)\s+|\s*,\s*(?:(?:and|und|et|&)\s+)?/u).map((p) => p.trim()).filter((p) => p !== "")
  return parts.length > 1 && parts.every(isName) ? parts : [name]
}

/** A marked element's text when it reads as a name (read up to a bound: marks nest, and a box holding a page holds no byline). */
function bylineText(el: Element): string | undefined {
  const raw = rawText(el, BYLINE_RAW_MAX)
  const t = normalizeSpace(raw).replace(/^(by|von|par|por|di|door)\s+/i, "")
  return raw.length <= BYLINE_RAW_MAX && t.length > 1 && t.length < 80 && cleanAuthor(t) !== undefined ? t : undefined
}

/** A name's parent holding less raw text than this is its byline line, where co-authors stand. */
const BYLINE_LINE_MAX = 400
/** Raw text (markup white space included) longer than this is no byline. */
const BYLINE_RAW_MAX = 2000

const BylineMark = { None: 0, Byline: 1, Name: 2 } as const
type BylineMark = (typeof BylineMark)[keyof typeof BylineMark]

/**
 * How an element is marked: as a name (`rel="author"`, `itemprop="author"`, class words author and
 * name together, username) or as a byline (class words author or byline: a box that may hold labels).
 * Class names are split at hyphens, underscores and camelCase (`authorDateBlock_authorName__N6j3Y`).
 */
function bylineMark(el: Element): BylineMark {
  const rel = el.attr("rel")
  if (rel !== undefined && /\bauthor\b/i.test(rel)) return BylineMark.Name
  const itemprop = el.attr("itemprop")
  if (itemprop !== undefined && /^author$/i.test(itemprop.trim())) return BylineMark.Name
  const cls = el.attr("class")
  if (cls === undefined || cls.length < 4) return BylineMark.None
  const words = wordsOf(cls)
  const author = words.includes("author")
  if (words.includes("username") || (words.includes("name") && (author || words.includes("user")))) return BylineMark.Name
  return author || words.includes("byline") ? BylineMark.Byline : BylineMark.None
}
