/**
 * Main-content extraction: finds the element that holds the article body and turns it into
 * plain text paragraphs.
 *
 * Model (written for Trawl):
 *  1. One recursive pass splits the visible text into *chunks*: the inline content between
 *     block boundaries, owned by its nearest block element. Hidden and non-content elements
 *     (scripts, forms controls, media, `hidden`, `display:none`...) are skipped.
 *  2. Every chunk gets a value: long, punctuated, link-poor text is positive; short labels and
 *     link runs are negative. Element values are sums over their subtree, where elements that
 *     look like page furniture (nav/aside/footer, roles, class/id words such as "comment",
 *     "related", "share") count their text against themselves.
 *  3. The body is the block element with the largest value (a maximum-scoring subtree), so a
 *     container grows only while what it adds is worth more than the boilerplate it brings.
 *  4. Inside it, furniture subtrees and link-heavy or boilerplate-looking chunks are dropped;
 *     the remaining chunks are the paragraphs.
 * Linear in the size of the tree.
 */
import { detectCurrency } from "../product/price.ts"
import { Element, parseHtml } from "../html/parser.ts"
import { sanitizeTree } from "../sanitize.ts"
import { shownLines } from "../html/text.ts"
import { byTag, rawText, walk } from "../html/dom.ts"
import { blockLogit, blockModel, blockObserver, classWords, DENSE_FEATURES, sigmoid, type BlockSample } from "./block-model.ts"

const SKIP = new Set([
  "script", "style", "noscript", "template", "iframe", "svg", "math", "canvas", "object", "embed", "video", "audio",
  "select", "option", "optgroup", "textarea", "button", "input", "head", "title", "link", "meta", "map", "area",
  "dialog", "source", "track", "picture", "img", "label", "datalist", "output", "progress", "meter", "base",
])
const BLOCK = new Set([
  "address", "article", "aside", "blockquote", "body", "center", "dd", "details", "dir", "div", "dl", "dt",
  "fieldset", "figcaption", "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6", "header", "hgroup",
  "hr", "li", "main", "menu", "nav", "ol", "p", "pre", "section", "summary", "table", "tbody", "thead", "tfoot",
  "tr", "caption", "ul", "html", "legend", "#document", "frameset", "frame", "listing", "plaintext", "xmp",
])
const DOMINANT = 0.4
/** Share of the page's text above which a furniture class word is site vocabulary, not furniture. */
const FRAMEWORK_SHARE = 0.5
/** ...spread over at least this many separate blocks (one big sidebar is still furniture). */
const FRAMEWORK_BLOCKS = 3
/**
 * Furniture words that sites also use for every block of a page (page builders' "widget", "hidden"
 * toggles, Adobe Experience Manager's "cmp-" components); words with one meaning (sidebar, related,
 * comment, footer...) never qualify.
 */
const STRUCTURAL_WORDS = new Set("widget widgets hidden info extra more label links actions utility tools cmp".split(" "))
const GROW = 1.5
/** Elements that may hold the body besides block elements. */
const CELL = new Set(["td", "th"])
/** Whether the element starts a line of its own: a block, or a table cell. */
export const startsLine = (tag: string) => BLOCK.has(tag) || CELL.has(tag)
const HEADING = new Set(["h1", "h2", "h3", "h4", "h5", "h6"])
/** Blocks beside a paragraph that make their parent the body: an intro and its list, table, subheading or code. */
const BODY_SIBLING = new Set(["p", "ul", "ol", "dl", "table", "pre", "blockquote", "h2", "h3", "h4", "h5", "h6"])
/** Tags that are page furniture wherever they are. */
const FURNITURE_TAG = new Set(["nav", "aside", "footer", "menu", "form", "figure", "figcaption"])
const FURNITURE_ROLE = /^(navigation|banner|contentinfo|complementary|search|menu|menubar|dialog|alertdialog|tablist|toolbar|tooltip|status)$/i

/** class/id words that mark furniture strongly enough to win over positive words. */
const STRONG_WORDS = new Set((
  "comment comments commentlist comentarios comentários commentaires kommentare commenti reacties komentarze reactions disqus related recommended recommendation recommendations recirc recirculation newsletter " +
  "subscribe subscription subscriptions cookie cookies consent gdpr social share shares sharing sharebar sharethis addthis " +
  "outbrain taboola sponsor sponsored promo promotion promotions advert adverts advertisement advertising ad ads adv adslot " +
  "adunit dfp paywall popup modal breadcrumb breadcrumbs pagination pager trending popular sidebar footer masthead nav navbar " +
  "navigation menu byline bio tags keywords print toolbar rating ratings survey skip sr visually offscreen caption captions cutline " +
  "credit credits copyright gallery slideshow carousel lightbox signup login newsletters sitemap disclaimer disclosure barrier feedback navbox reflist " +
  "widget widgets more readmore jump toc onetrust cmp didomi usercentrics cookiebot truste qc optanon " +
  // a forum post's signature and its author's panel (phpBB, vBulletin)
  "signaturecontainer postprofile userinfo usertitle notices"
).split(" "))
/**
 * Furniture words of consent managers and cookie banners: they keep their mark even on a dominant
 * element ("cmp" is not one of them: some page builders prefix every component with it).
 */
const CONSENT_MARKS = new Set("cookie cookies consent gdpr onetrust didomi usercentrics cookiebot truste optanon".split(" "))
/** Whether an element is a consent manager's box by its class or id words (`didomi-popup`, `onetrust-banner-sdk`). */
export function isConsentBox(el: Element): boolean {
  const marks = `${el.attrs?.class ?? ""} ${el.attrs?.id ?? ""}`
  return marks.length > 4 && wordsOf(marks).some((w) => CONSENT_MARKS.has(w))
}
/** Words that make a "player" element an embedded media player. */
const MEDIA_PLAYER = new Set("video videos jw jwplayer vjs brightcove youtube vimeo embed".split(" "))
/** Furniture words of readers' comments: a short post under a long discussion is still the page's text, its comments are not. */
const READERS_MARKS = new Set("comment comments commentlist disqus".split(" "))
/** This many h1s in the body are its section headings, not a headline. */
const SECTION_H1S = 3
/** Text (in chunk-value units) of a content-marked post for its comments to be aside. */
const POST_MIN = 150
/** Page-state classes on these (`<body class="cookies-not-set">`) say nothing about their content. */
const PAGE_TAGS = new Set(["html", "body", "#document"])
const STRONG_PREFIX = /^(comment|share|social|related|recommend|subscri|newsletter|sponsor|promo|advert|sidebar|footer|breadcrumb|trending|navbar|navigation|widget|caption|gallery|slideshow|carousel|popup)/
/** Words that make an "author" element the writer's profile box. */
const AUTHOR_BOX = new Set("box about card details profile description desc wrap wrapper section container panel".split(" "))
/** class/id words of furniture that a positive word can outweigh. */
const WEAK_WORDS = new Set((
  "header meta date time dateline info tools actions utility teaser label badge kicker headline title author authors profile " +
  "avatar follow cta button btn icon logo search form rail secondary extra extras links hidden aside banner topbar"
).split(" "))
const POSITIVE_WORDS = new Set("article content entry post body story text main blog prose richtext paragraph single copy articlebody storybody".split(" "))
const POSITIVE_PREFIX = /^(article|content|story|entry)/

export const Hint = { None: 0, Positive: 1, Weak: 2, Strong: 3 } as const
export type Hint = (typeof Hint)[keyof typeof Hint]

/** The class/id word that decided the last `hintOf` result ("" for roles, tags and positive words). */
let hintWord = ""

export function hintOf(el: Element): Hint {
  hintWord = ""
  const a = el.attrs
  if (a === null) return Hint.None
  const cls = a.class
  const id = a.id
  const role = a.role
  if (role !== undefined && FURNITURE_ROLE.test(role.trim())) return Hint.Strong
  if (cls === undefined && id === undefined && !COMPONENT_ATTRS.some((k) => a[k] !== undefined)) return Hint.None
  // An id made of its own heading's words ("more-on-lists" on the section headed "More on Lists") is
  // an anchor for that heading, not layout vocabulary.
  const idWords = id === undefined ? [] : wordsOf(id)
  const words = wordsOf(roleClasses(cls)).concat(idWords.some(isHintWord) && isHeadingAnchor(el, idWords) ? [] : idWords, componentWords(a))
  // an author box ("author-box", "about-author", "author-bio"): the writer's profile, not the article
  // (a list's "authorName__container" holds a name, not a profile)
  if (words.includes("author") && !words.includes("name") && words.some((w) => AUTHOR_BOX.has(w))) {
    hintWord = "author"
    return Hint.Strong
  }
  // an embedded media player ("video-player", "jw-player"), its title and controls: not a podcast
  // page's transcript under "podcast-player", nor a sports page's "player-stats"
  if (words.includes("player") && words.some((w) => MEDIA_PLAYER.has(w))) {
    hintWord = "player"
    return Hint.Strong
  }
  let pos = false
  let weak = false
  for (const w of words) {
    // "more" that continues the article ("content--detail-more", "article-more"), not more stories
    if (w === "more" && CONTINUED.test(cls ?? "")) continue
    if (STRONG_WORDS.has(w) || STRONG_PREFIX.test(w)) {
      hintWord = w
      return Hint.Strong
    }
    if (WEAK_WORDS.has(w)) {
      weak = true
      hintWord = w
    }
    else if (POSITIVE_WORDS.has(w) || POSITIVE_PREFIX.test(w)) pos = true
  }
  if (weak) {
    if (pos) hintWord = ""
    return pos ? Hint.None : Hint.Weak
  }
  return pos ? Hint.Positive : Hint.None
}

/**
 * Whether a `<header>` holds a subheading of the text (h2 to h6 among its children, not the page's title)
 * and no links: the header of one post among several (a live blog's update), not an entry's kicker and date.
 */
function headsText(el: Element, linkLen: number, titleKey: string): boolean {
  if (el.tag !== "header" || linkLen > 0) return false
  for (const c of el.children) {
    if (typeof c === "string" || !/^h[2-6]$/.test(c.tag)) continue
    const k = rawText(c, 300).normalize("NFKC").toLowerCase().replace(/[^\p{L}\p{N}]+/gu, "")
    if (k.length >= 12 && k !== titleKey) return true
  }
  return false
}

/** A class name that ends the article's own name with "more": the rest of its text (NHK's `content--detail-more`). */
const CONTINUED = /(?:^|\s)(?:article|content|story|entry|post|body|text)(?:[-_]+[a-z]+)?[-_]+more(?:\s|$)/i

/**
 * A class that states what an element has or allows, not what it is: `has-sidebar`, `no-comments`,
 * `with-newsletter`, `subscription-eligible` (a shop's card for a product sold by subscription).
 */
const STATE_CLASS = /^(?:has|no|with|without)[-_]|^(?:has|no|with|without)(?=[A-Z])|[-_](?:eligible|enabled|disabled|allowed|available)$/
/** The classes of `cls` that name a role, without those that state a property. */
const roleClasses = (cls: string | undefined): string =>
  cls === undefined ? "" : !MAYBE_STATE.test(cls) && !MAYBE_UTILITY.test(cls) ? cls : cls.split(/\s+/).filter((c) => !STATE_CLASS.test(c) && !MAYBE_UTILITY.test(c)).join(" ")
/**
 * A utility class with a variant or an arbitrary value (Tailwind's `print:break-inside-avoid`,
 * `page-api-block:ml-0`, `[&>*+*]:mt-5`): styling for a medium or a state, no word about the content
 * (GitBook sets `print:…` on every paragraph).
 */
const MAYBE_UTILITY = /[:[]/
/** A cheap first look for `STATE_CLASS` (most class lists have none). */
const MAYBE_STATE = /has|no|with|eligible|enabled|disabled|allowed|available/i

/** A class/id word that says something (furniture or content), alone or by its prefix. */
const isHintWord = (w: string): boolean =>
  STRONG_WORDS.has(w) || STRONG_PREFIX.test(w) || WEAK_WORDS.has(w) || POSITIVE_WORDS.has(w) || POSITIVE_PREFIX.test(w)

/**
 * The words of a class or id: split at non-alphanumerics and camelCase humps. In a camelCase name, what
 * follows a preposition qualifies it: Docusaurus's heading anchor `anchorWithStickyNavbar_LWe7` is an
 * anchor, not a navbar.
 */
export const wordsOf = (s: string): Array<string> => {
  // (most class names have no camelCase: one split)
  if (!/[a-z][A-Z]/.test(s)) return s.toLowerCase().split(/[^a-z0-9]+/).filter((w) => w.length > 0)
  const out: string[] = []
  for (const token of s.split(/[^A-Za-z0-9]+/)) {
    const words = token.replace(/([a-z])([A-Z])/g, "$1 $2").toLowerCase().split(" ")
    for (let i = 0; i < words.length; i++) {
      const w = words[i]!
      if (w === "") continue
      // ("inArticleAd" opens with its preposition: all its words count)
      if (i > 0 && QUALIFIER.has(w)) break
      out.push(w)
    }
  }
  return out
}
const QUALIFIER = new Set(["with", "without", "for", "when", "on", "in"])

/**
 * Attributes in which component frameworks name what an element is (`data-testid="related-stories"`,
 * `data-area="author_bio"`). Their strong and positive words count; their weak ones do not: such names
 * call every teaser's heading a "title" (`data-testid="illinois-title"`); nor do comment words: a Q&A
 * or an issue tracker names each answer a "comment" component, and its posts are the page.
 */
const COMPONENT_ATTRS = ["data-testid", "data-component", "data-area", "data-module", "data-qa"] as const
function componentWords(a: Readonly<Record<string, string>>): Array<string> {
  let out: Array<string> | undefined
  for (const k of COMPONENT_ATTRS) {
    const v = a[k]
    if (v !== undefined && v.length > 0 && v.length <= 60) for (const w of wordsOf(v)) if (!WEAK_WORDS.has(w) && !READERS_MARKS.has(w)) (out ??= []).push(w)
  }
  return out ?? []
}

/** Whether `idWords` are all words of the element's own heading (itself, or the first heading among its first children). */
function isHeadingAnchor(el: Element, idWords: ReadonlyArray<string>): boolean {
  const heading = HEADING.has(el.tag) ? el : firstHeading(el, 2)
  if (heading === undefined) return false
  const text = new Set(wordsOf(rawText(heading)))
  return idWords.every((w) => text.has(w))
}

/** The first heading among the first few element children of `el`, `depth` levels down at most. */
function firstHeading(el: Element, depth: number): Element | undefined {
  let seen = 0
  for (const c of el.children) {
    if (typeof c === "string") continue
    if (HEADING.has(c.tag)) return c
    if (depth > 1) {
      const h = firstHeading(c, depth - 1)
      if (h !== undefined) return h
    }
    if (++seen >= 3) return undefined
  }
  return undefined
}

function isHidden(el: Element): boolean {
  const a = el.attrs
  if (a === null) return false
  if (a.hidden !== undefined) return true
  if (a["aria-hidden"] === "true") return true
  // a modal (a policy, a quick view, a consent prompt) opens over the page on demand, like a `<dialog>`
  if (a["aria-modal"] === "true") return true
  const st = a.style
  if (st !== undefined && /display\s*:\s*none|visibility\s*:\s*hidden/i.test(st)) return !revealedByScript(el)
  if (a.type === "hidden") return true
  const c = a.class
  return c !== undefined && (c.includes("hidden") || c.includes("Hidden") || c.includes("sr-only") || c.includes("screen") || c.includes("offscreen")) && SCREEN_READER_ONLY.test(c)
}
/** Text kept for screen readers only (`visually-hidden`, `sr-only`, `screen-reader-text`): a visitor does not see it. */
const SCREEN_READER_ONLY = /(?:^|\s)(?:[a-z]+-)?(?:visually-?hidden|sr-only|screen-?reader-?(?:text|only)|offscreen)(?:\s|$)/i

/**
 * A `<main>`, or the child holding most of its text, hidden by its inline style is shown by a script
 * once the page runs (a storefront's access app, an anti-flicker wrapper): a visitor reads it. A drawer
 * or a modal deeper in the page, or beside the main text, stays hidden. See docs/extraction.md.
 */
function revealedByScript(el: Element): boolean {
  if (el.tag === "main") return true
  const p = el.parent
  if (p === null || p.tag !== "main") return false
  const own = weight(rawText(el))
  if (own < 200) return false
  let all = mainWeight.get(p)
  if (all === undefined) mainWeight.set(p, all = weight(rawText(p)))
  return own >= 0.5 * all
}
/** The text weight of each `<main>` asked about (a page may hide many of its children). */
const mainWeight = new WeakMap<Element, number>()

/** Weighted count of non-space characters (CJK ideographs count double: they carry more per character). */
function weight(s: string): number {
  let n = 0
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c <= 32 || c === 0xa0 || c === 0x200b) continue
    n += c >= 0x2e80 && c <= 0x9fff ? 2 : 1
  }
  return n
}

function punctuation(s: string): number {
  let n = 0
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    // . , ; ! ? and their CJK forms
    if (c === 46 || c === 44 || c === 59 || c === 33 || c === 63 || c === 0x3002 || c === 0xff0c || c === 0x3001 || c === 0xff01 || c === 0xff1f) n++
  }
  return n
}

interface Chunk {
  owner: number
  text: string
  len: number
  linkLen: number
  punct: number
  /** Weight of the link text the chunk starts with (a headline link of a teaser). */
  leadLink: number
  /** Inside a blockquote (quoted posts keep their links and signature lines). */
  quoted: boolean
}

/** Short texts that are page furniture when they make up a whole chunk. */
const BOILER_TEXT = /^(advert|advertisement|advertising|anzeige|publicité|publicidad|pubblicità|sponsored|read more|read more (posts|articles|blogs|stories)|read next|read also|more:?|see also|related:?|related (articles|posts|stories|reading):?|share( this)?( article| story| post| page| report)?|share this on:?|tweet|email|print|text size|font size|don.?t miss|tell us what you think.*|comments?|\d+ comments?|\d+ (?:likes?|reactions?|upvotes?|votes?|points?|views?|replies|reply)|viewed ?[\d.,]+k? times|who is online\??|wer ist online\??|qui est en ligne ?\??|click here.*|sign up.*|subscribe.*|follow us.*|image:?|photo:?|video:?|getty images|loading\.*|skip to .*|関連記事|関連リンク)$/i
/**
 * The site's own notices: an unsupported browser, a failed widget, a sharing form's confirmation, a Q&A
 * site's "Not the answer you're looking for?", a forum's list of who browses it.
 */
const UI_NOTICE = /detected you are (on|using)|(does not|doesn't|no longer) support internet explorer|(outdated|unsupported|old|older) (web )?browser|(update|upgrade) (to )?(a modern|a newer|your) browser|(an error (has )?occurred|something went wrong)[^.!]{0,40}[.!]?\s*(please )?try again|^this article has been sent to|^not the answer you'?re looking for\?|^(?:users browsing this forum|mitglieder in diesem forum|utilisateurs parcourant ce forum|utenti che stanno guardando questo forum|usuarios navegando por este foro)\s*:/i
/**
 * A breadcrumb trail set as text, its links between "›" or "»" ("News › City News › Bengaluru News › …"):
 * every part before the last is a link ("Go to <a>Admin</a> › Settings › Integrations" is an instruction).
 */
const BREADCRUMB_LINE = /^[^›»\n]{1,60}(?:\s[›»]\s[^›»\n]{1,160}){2,}$/
/** Calls to subscribe, buy or give put between paragraphs: a code to use, a trial to start, a newsletter to sign up for, journalism to support. */
const PROMO = /\buse (the )?(promo |discount )?code\b|\bsubscribe (now|today)\b|\b(get|start) your free trial\b|\bdelivered (through|to) your (letterbox|door|inbox)\b|\bsign up (now|today|for (our|the) (free )?(daily |weekly )?newsletter)\b|^(?:will you |would you |can you |please |help us )?support (?:[\w’']+ ){0,3}journalism\b|\b(?:rely|relies|depend|depends|count|counts) on (?:readers|people|supporters|members) like you\b|^(?:please )?make a (?:one-time |monthly |recurring )?(?:contribution|donation|gift)\b/i
/**
 * A picture's caption as text: a short line that ends with the picture's credit, "(Image: GETTY)",
 * "(Photo: Jane Doe/Reuters)", "(Picture credit: ...)".
 */
const CAPTION_CREDIT = /\((image|photo|photograph|picture|pic|credit|foto|bild)s?( credit)?\s*:[^()]{1,80}\)$/i
/**
 * A credit that ends a line without brackets: "— Foto: Divulgação/Governo de SP", "Фото: пресс-служба",
 * "Fot. Jakub Kamiński / Agencja Wyborcza", "潮声新闻记者 王晓峰 图". Only a caption beside its picture
 * is dropped for it (`besideImage`, or a block holding the picture and its caption): a body sentence
 * may name a photo too, and a line that is only a credit ("Main image credit: Getty") stays: annotators
 * keep it as the article's own line.
 */
const TRAILING_CREDIT = /(?:^|[\s—–|(（-])(?:(?:foto|fotos|фото|photo|photos|photograph|bild|image|imagen|immagine|kuva|credit|crédit|crédito|credito|zdjęcie|图片来源|圖片來源|图源|圖源)\s*[:：]|fot\.)\s*[^.!?:]{1,80}[)）]?$|\s(?:图|圖|摄|攝|写真)$/iu

/** A forum post's signature (phpBB `signature`, XenForo `message-signature`, vBulletin `signature restore`). */
const SIGNATURE = /(?:^|[\s_-])signature(?:$|[\s_-])/i
/** A forum quote's attribution: "X wrote:", "X hat geschrieben:", "X a écrit :". */
const QUOTE_HEADER = /(?:wrote|said|writes|schrieb|hat geschrieben|a écrit|ha scritto|escribió|escreveu|napisał|написал|schreef|skrev)\s*:/i
/** A reply's subject prefix: "Re: ", "AW: ", "Sv: ". */
const REPLY_PREFIX = /^\s*(re|aw|sv|vs|odp)\s*:\s*/i
/** The words a byline opens with: "By", "Von", "Par", "Por", "Di", "Door", "Av", "Af". */
const BYLINE_WORD = String.raw`(?:[Bb]y|BY|[Vv]on|[Pp]ar|[Pp]or|[Dd]i|[Dd]oor|[Aa]v|[Aa]f)`
/** A line that opens with a byline: "By", "Von", "Par", "Por", "Di", "Door", "Av" and a capitalised name. */
const BYLINE_LINE = new RegExp(String.raw`^${BYLINE_WORD}\s+\p{Lu}[\p{L}'’.-]+(\s+\p{Lu}[\p{L}'’.-]+){0,3}(\s*[—–|,·•-]\s*|\s+\d)`, "u")
/**
 * A byline run into its publication line, its spans set side by side with no space between ("Par
 * Claire VasseurPublié le 12 novembre 2025 à 06h00"): the byline's word, a capitalised name, then at
 * once a publication word with its date ("By Friday, the agency had updated 14 …" is a sentence).
 */
const BYLINE_PUBLISHED = new RegExp(String.raw`^${BYLINE_WORD}\s+\p{Lu}[\p{L}'’.-]*?(?:\s+\p{Lu}[\p{L}'’.-]*?){0,3}\s*(?:[—–|,·•-]\s*)?(?:[Pp]ubliée?|[Mm]is à jour|[Mm]odifié|[Vv]eröffentlicht|[Aa]ktualisiert|[Pp]ublicado|[Aa]ctualizado|[Aa]tualizado|[Pp]ubblicato|[Aa]ggiornato|[Gg]epubliceerd|[Bb]ijgewerkt|[Pp]ublished|[Uu]pdated|[Pp]osted)\s*:?\s*(?:(?:le|am|el|em|il|op|on)\s+)?\d`, "u")
/** How a publication line starts ("Updated ...", "Published ..."). */
const PUBLICATION_LINE = /^(updated|published|posted|originally published|last updated|original)\b/i
/**
 * The same in other languages, its date or age right after the word ("Publié il y a 2 heures",
 * "Veröffentlicht am 3. Dezember", "Aktualisiert: 03.12.2026", "Pubblicato il 3 dicembre"): a sentence
 * ("Veröffentlicht wurde die Studie 2021 im Fachjournal Nature.", "Publié en 2019, le rapport …") is text.
 */
const PUBLICATION_LINE_INTL = /^(?:publié|publiée|mis à jour|modifié|veröffentlicht|aktualisiert|publicado|actualizado|atualizado|pubblicato|aggiornato|opublikowano|aktualizacja|zaktualizowano|gepubliceerd|bijgewerkt|geplaatst|опубликовано|обновлено|yayınlanma(?: tarihi)?|güncelleme|güncellendi)\s*:?\s*(?:(?:le|am|el|em|il|op|dnia|on|the)\s+)?(?:\d|il y a |vor |hace |há )/iu
/**
 * A post's age in other languages than English ("il y a 2 heures", "vor 3 Stunden", "hace 5 minutos",
 * "2 ore fa", "3 godziny temu", "2 часа назад", "5 uur geleden", "3 saat önce"), seconds to weeks: "Il y
 * a 20 ans, la chute du mur" is a heading. With `DATE_LINE` (whose English ages the block model reads
 * as a feature, so it stays as it was trained) it makes a date line.
 */
const AGE_LINE = /\bil y a \d+\s?(?:s|sec\w*|min\w*|h|heures?|jours?|semaines?)\b|\bvor \d+\s?(?:sek\w*|min\w*|std\.?|stunden?|tag(?:en)?|wochen?)(?![\p{L}])|\b(?:hace|há) \d+\s?(?:seg\w*|min\w*|h|horas?|días?|dias?|semanas?)(?![\p{L}])|\b\d+\s?(?:minut[oi]|ore|ora|giorn[oi]|settiman[ae]) fa\b|\b\d+\s?(?:minut[ay]?|godzin[ay]?|godz\.|dni|dzień|tygodni[e]?) temu\b|\b\d+\s?(?:минут[уы]?|час(?:а|ов)?|дн(?:я|ей)|день|недел[юиь]) назад|\b\d+\s?(?:minuten|minuut|uur|dagen|dag|weken|week) geleden\b|\b\d+\s?(?:saniye|dakika|saat|gün|hafta) önce(?![\p{L}])/iu
/** A reading time alone on its line ("5 min read", "Temps de lecture 5 min.", "Lesezeit: 4 Min."). */
const READING_TIME = /^(?:(?:reading time|read time|lesezeit|lesedauer|temps de lecture|tiempo de lectura|tempo de leitura|tempo di lettura|czas czytania|leestijd|время чтения|okuma süresi)\s*:?\s*(?:ca\.\s*|~\s*)?\d+\s?(?:min\w*|минут\w*|мин\.?|dakika|dk)\.?|\d+\s?(?:min|mins|minutes?|minuten|minutos|minuti|minut|минут\w*|мин\.?|dakika|dk)\.?\s+(?:read|reading|lesezeit|lesedauer|de lectura|de leitura|di lettura|de lecture|leestijd|czytania|чтения|okuma(?: süresi)?))$/iu
/** A notice that the article goes on past an advertisement or a video, in several languages: the whole line ("Continúa tras la reunión el debate …" is a sentence). */
const CONTINUES = /^(?:(?:the )?(?:article|story|text|content) continues (?:below|after)|continue reading (?:below|after)|weiter nach (?:der|dem) (?:anzeige|werbung|video)|(?:der )?artikel (?:wird )?(?:unter|nach) .{0,30}fortgesetzt|(?:lire )?la suite (?:après|ci-dessous|sous)|l['’]article continue|(?:el )?artículo continúa|continúa (?:después|tras|debajo)|(?:o )?texto continua|continua (?:após|depois|dopo|sotto)|l['’]articolo continua|dalsza część (?:artykułu|tekstu)|czytaj dalej pod|продолжение (?:ниже|после)|статья продолжается|haberin devamı|het artikel gaat verder|lees verder (?:onder|na))(?:\s+[^\s.]+){0,4}\s*[.:…]?$/i
/** Words of a date line besides the date: its labels, a place, an agency, a name ("WASHINGTON, March 3, 2025 (Reuters)", "Published March 3 by Jane Doe"). */
const DATE_WORDS = new RegExp(String.raw`^(?:\d.*|jan\p{L}*|feb\p{L}*|mar\p{L}*|apr\p{L}*|may|jun\p{L}*|jul\p{L}*|aug\p{L}*|sep\p{L}*|oct\p{L}*|nov\p{L}*|dec\p{L}*|mon\p{L}*|tue\p{L}*|wed\p{L}*|thu\p{L}*|fri\p{L}*|sat\p{L}*|sun\p{L}*|am|pm|[ap]\.m|et|est|edt|ct|cst|cdt|mt|mst|mdt|pt|pst|pdt|cet|gmt|utc|cest|bst|ist|jst|kst|aest|aedt|updated|published|posted|originally|last|original|on|at|by|and|ago|s|secs?|seconds?|m|mins?|minutes?|h|hrs?|hours?|d|days?|w|wks?|weeks?|mo|mos|months?|y|yrs?|years?|read|min|today|yesterday|el|de|del|a|las|la|le|les|à|às|em|um|am|op|il|lo|alle|ore|uhr|publicado|actualizado|atualizado|publié|mis|jour|modifié|aktualisiert|veröffentlicht|pubblicato|aggiornato|gepubliceerd|bijgewerkt|aangepast|` +
  // Dutch and German months that the English ones above do not start (not all of Europe's: "Arrigo
  // Boito (Padova, 24 febbraio 1842 – Milano, 10 giugno 1918)" would read as a date line)
  String.raw`okt|oktober|mrt|maart|mei|mai|märz|mär|dez|dezember)$`, "iu")
/** Two-letter weekdays (Dutch, German) and French three-letter ones: a date's only right before its day ("do 16 okt"). */
const WEEKDAY_SHORT = /^(?:ma|di|wo|do|vr|za|zo|mo|mi|fr|sa|so|lun|mar|mer|jeu|ven|sam|dim)$/i
/**
 * Whether a line is mostly its date: at most four other words ("Phase 1 (2026): Canal Park to 14th
 * Avenue East" is a list item that names a year, not a date line).
 */
function mostlyDate(text: string): boolean {
  let other = 0
  const words = text.split(/[^\p{L}\p{N}.:]+/u)
  for (let i = 0; i < words.length; i++) {
    const w = words[i]!
    if (w === "" || (WEEKDAY_SHORT.test(w) && /^\d/.test(words[i + 1] ?? ""))) continue
    // Chinese and Japanese set no spaces between words: every four of their letters that are no date's
    // count as a word ("2025年産の収穫量増加により、…" is a sentence; "2025年11月20日" a date; a byline's
    // long firm name, "ライトハウス国際特許事務所", a few words)
    // (a word of date characters and digits alone, "午前10時30分", is the date's)
    const cjk = HAS_CJK.test(w) ? w.replace(CJK_DATE_CHARS, "").match(CJK_LETTER)?.length ?? 0 : -1
    if (cjk >= 0) other += Math.ceil(cjk / 4)
    else if (!DATE_WORDS.test(w.replace(/[.:]+$/, ""))) other++
    if (other > 4) return false
  }
  return true
}
const CJK_LETTER = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}]/gu
const HAS_CJK = new RegExp(CJK_LETTER.source, "u")
/** The characters of a date or time in Chinese, Japanese and Korean (年 月 日, 時 分, 午前, 星期, 曜日, 년 월 일…). */
const CJK_DATE_CHARS = /[年月日时時分秒号號午前后後周週星期曜火水木金土년월일시분초오전후요]/gu
/** A time that starts a line, bracketed or followed by a separator: `(00:00)`, `[1:02:15]`, `14:40 –` (not a bar: "14:40 | Reuters" is a dateline). */
const LEADING_TIME = /^[([]?\d{1,2}:\d\d(?::\d\d)?[)\]]?\s*[-–—:]?\s*/
/**
 * A line labelled by a time and nothing else of a date: a chapter of an episode ("(00:00) Intro"),
 * an agenda's slot ("09:30 Registration"). Its first word after the time is no date word (not "10:42
 * am ET", "19:45 Uhr").
 */
function isTimestampLabel(text: string): boolean {
  const time = LEADING_TIME.exec(text)
  if (time === null) return false
  const rest = text.slice(time[0].length)
  const first = /^\p{L}[\p{L}'’-]*/u.exec(rest)?.[0]
  return first !== undefined && !DATE_WORDS.test(first) && !DATE_LINE.test(rest)
}
/**
 * A line that carries a date or time (publication lines, datelines of teasers), or an age ("3 hours
 * ago", "6 years, 9 months ago": the time stamps of posts, answers and comments).
 */
const DATE_LINE = /\b(19|20)\d\d\b|\b\d{1,2}:\d\d\b|\b(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.? \d{1,2}\b|\b\d{1,2}\.? (jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)|\b\d+\s?(s|secs?|seconds?|m|mins?|minutes?|h|hrs?|hours?|d|days?|w|wks?|weeks?|mo|mos|months?|y|yrs?|years?)\b[,\s\d\p{L}]{0,24}\bago\b/iu

export interface MainContent {
  /** Paragraphs of the article body. */
  paragraphs: string[]
  /** The chosen container. */
  root: Element | null
  /** The page is a post with readers' comments aside (see `READERS_MARKS`): other readings leave them out too. */
  commentsAside?: boolean
  /** The reading is of a collection (listing mode, or the items of structured data): its dates and bylines are its items'. */
  listing?: boolean
}

export interface MainContentOptions {
  /** Title of the page: a chunk equal to it is not part of the body. */
  title?: string
  /**
   * Listing mode, for pages whose content is a collection (product grids, news fronts, link lists):
   * teasers and headline links count as content instead of furniture. See docs/extraction.md.
   */
  listing?: boolean
  /** Parse the markup inside large `<noscript>` elements as content (pages that render their body by script). */
  noscript?: boolean
  /**
   * The page's description (meta or structured): a standfirst that repeats it, marked as one, is the
   * description shown above the body, not the body's first paragraph.
   */
  description?: string
  /** The page is a discussion (a forum thread, a Q&A): comments are its posts, not aside. */
  discussion?: boolean
  /** Receives a description of the chosen container and its ancestors (for tuning). */
  debug?: (line: string) => void
}

/** Extracts the main content below `scope` (usually the body). */
export function extractMainContent(scope: Element, opts: MainContentOptions = {}): MainContent {
  const discussion = opts.discussion === true
  const els: Element[] = []
  const parent: number[] = []
  const hint: Hint[] = []
  /** The class/id word behind each element's furniture hint. */
  const hintBy: string[] = []
  const chunkStart: number[] = []
  const chunkEnd: number[] = []
  const chunks: Chunk[] = []

  let buf = ""
  let bufLink = 0
  let lead = 0
  let leadOpen = true
  let quoteDepth = 0
  const flush = (owner: number) => {
    if (buf.length === 0) return
    const len = weight(buf)
    if (len > 0) chunks.push({ owner, text: buf, len, linkLen: bufLink, punct: punctuation(buf), leadLink: lead, quoted: quoteDepth > 0 })
    buf = ""
    bufLink = 0
    lead = 0
    leadOpen = true
  }

  const register = (el: Element, p: number): number => {
    const i = els.length
    els.push(el)
    parent.push(p)
    if (FURNITURE_TAG.has(el.tag) && !(el.tag === "figure" && presentsData(el))) {
      hint.push(Hint.Strong)
      hintBy.push("")
    } else {
      const h = hintOf(el)
      // on a discussion a "signature" is a post's signature line (elsewhere: a restaurant's signature dishes)
      if (discussion && h !== Hint.Strong && el.attrs?.class !== undefined && SIGNATURE.test(el.attrs.class)) {
        hint.push(Hint.Strong)
        hintBy.push("signature")
      } else {
        hint.push(h)
        hintBy.push(hintWord)
      }
    }
    chunkStart.push(chunks.length)
    chunkEnd.push(chunks.length)
    return i
  }

  const listing = opts.listing === true
  const visit = (el: Element, idx: number, blockIdx: number, inLink: boolean) => {
    const ch = noscriptChildren(el, opts.noscript === true) ?? el.children
    for (let k = 0; k < ch.length; k++) {
      const c = ch[k]!
      if (typeof c === "string") {
        buf += c
        if (inLink) {
          const w = weight(c)
          bufLink += w
          if (leadOpen) lead += w
        } else if (leadOpen && weight(c) > 0) leadOpen = false
        continue
      }
      const tag = c.tag
      if ((SKIP.has(tag) && !(tag === "noscript" && opts.noscript === true)) || isHidden(c)) continue
      // a quoted post's attribution ("Bernd_K hat geschrieben: ↑ Mo 30. Nov 2026"): not the quoted words
      if (tag === "cite" && quoteDepth > 0 && QUOTE_HEADER.test(rawText(c, 200))) continue
      if (tag === "br") {
        buf += "\n"
        continue
      }
      if (tag === "hr") {
        flush(blockIdx)
        continue
      }
      const ci = register(c, idx)
      if (BLOCK.has(tag) || tag.indexOf("-") > 0 || tag === "noscript") {
        flush(blockIdx)
        if (tag === "blockquote") quoteDepth++
        visit(c, ci, ci, inLink)
        flush(ci)
        if (tag === "blockquote") quoteDepth--
      } else {
        if (tag === "td" || tag === "th") buf += " "
        // a heading's link to its own anchor (`<h2 id="syntax"><a href="#syntax">Syntax</a></h2>`, MDN) is its text, not a link away
        visit(c, ci, blockIdx, inLink || (tag === "a" && !isOwnAnchor(c, els[blockIdx]!)))
        buf += tag === "td" || tag === "th" ? " " : ""
      }
      chunkEnd[ci] = chunks.length
    }
  }

  const rootIdx = register(scope, -1)
  visit(scope, rootIdx, rootIdx, false)
  flush(rootIdx)
  chunkEnd[rootIdx] = chunks.length

  const n = els.length
  const own = new Float64Array(n)
  const ownPos = new Float64Array(n)
  const allPos = new Float64Array(n)
  const titleKey = opts.title ? key(opts.title) : ""
  const descriptionKey = opts.description ? key(opts.description) : ""
  for (let c = 0; c < chunks.length; c++) {
    const ck = chunks[c]!
    const v = chunkValue(ck, els[ck.owner]!.tag, titleKey, listing)
    own[ck.owner]! += v
    if (v > 0) {
      allPos[ck.owner]! += v
      if (!isTeaser(ck)) ownPos[ck.owner]! += v
    }
  }
  // teaser lists: several children that each start with a headline link and hold little text
  const txt = new Float64Array(n)
  for (let c = 0; c < chunks.length; c++) txt[chunks[c]!.owner]! += chunks[c]!.len
  for (let i = n - 1; i > 0; i--) txt[parent[i]!]! += txt[i]!
  /** A teaser card may open with a label or a date before its headline: a linked heading among its first chunks. */
  const linkedHeadline = (i: number) => {
    for (let c = chunkStart[i]!; c < Math.min(chunkEnd[i]!, chunkStart[i]! + 3); c++) {
      const ck = chunks[c]!
      if (HEADING.has(els[ck.owner]!.tag) && ck.linkLen >= 15 && ck.linkLen >= 0.6 * ck.len) return true
    }
    return false
  }
  const headed = new Uint16Array(n)
  const withText = new Uint16Array(n)
  for (let i = 1; i < n; i++) {
    if (txt[i]! === 0) continue
    const p = parent[i]!
    withText[p]!++
    const first = chunks[chunkStart[i]!]
    if (first !== undefined && chunkStart[i]! < chunkEnd[i]! && txt[i]! <= 600 &&
        ((first.leadLink >= 15 && first.leadLink >= 0.2 * first.len) || first.linkLen >= 0.6 * first.len || linkedHeadline(i))) headed[p]!++
  }
  for (let i = 0; i < n; i++) {
    if (!listing && headed[i]! >= 3 && headed[i]! >= 0.5 * withText[i]!) hint[i] = Hint.Strong
  }

  // pure positive text per subtree, to overrule furniture hints on the element holding most of the text
  const pos = new Float64Array(n)
  for (let i = n - 1; i >= 0; i--) {
    pos[i]! += allPos[i]!
    const p = parent[i]!
    if (p >= 0) pos[p]! += pos[i]!
  }
  const total = pos[0]!
  // Framework vocabulary: a furniture word whose (outermost) elements hold a large share of the page's
  // text, on several elements with text (nested ones count: builders nest their containers), is how
  // this site names all its blocks, not furniture.
  const wordShare = new Map<string, number>()
  const wordBlocks = new Map<string, number>()
  for (let i = 0; i < n; i++) {
    const w = hintBy[i]!
    if (!STRUCTURAL_WORDS.has(w) || pos[i]! <= 0) continue
    wordBlocks.set(w, (wordBlocks.get(w) ?? 0) + 1)
    let outer = true
    for (let p = parent[i]!; p >= 0; p = parent[p]!) if (hintBy[p] === w) { outer = false; break }
    if (outer) wordShare.set(w, (wordShare.get(w) ?? 0) + pos[i]!)
  }
  for (let i = 0; i < n; i++) {
    const w = hintBy[i]!
    if (w !== "" && (wordShare.get(w) ?? 0) >= FRAMEWORK_SHARE * total && (wordBlocks.get(w) ?? 0) >= FRAMEWORK_BLOCKS) hint[i] = Hint.None
  }
  // Readers' comments under a post that the page marks as its content (`entry-content`, `post-body`)
  // are never the body, however much more they say than a short post; on a page that is a discussion
  // (a forum thread, a Q&A; or no such content, a thread of "comment" elements) they are.
  // On a discussion each reply may be its own "comment" (an issue tracker's timeline): each is a post;
  // not inside a comments section (`comments-area` with its reply form), which stays furniture unless it dominates.
  const inReaders = new Uint8Array(n)
  const inSection = new Uint8Array(n)
  let postText = 0
  for (let i = 0; i < n; i++) {
    const p = parent[i]!
    const strongReaders = hint[i] === Hint.Strong && READERS_MARKS.has(hintBy[i]!)
    inReaders[i] = (p >= 0 && inReaders[p]) || strongReaders ? 1 : 0
    if (hint[i] === Hint.Positive && !inReaders[i] && !PAGE_TAGS.has(els[i]!.tag)) postText = Math.max(postText, pos[i]!)
    if (opts.discussion !== true) continue
    inSection[i] = (p >= 0 && inSection[p]) || (strongReaders && hintBy[i] !== "comment") ? 1 : 0
    if (!inSection[i] && strongReaders && hintBy[i] === "comment" && !PAGE_TAGS.has(els[i]!.tag) && els[i]!.tag !== "form") hint[i] = Hint.None
  }
  const commentsAside = opts.discussion !== true && postText >= POST_MIN
  for (let i = 0; i < n; i++) {
    const h = hint[i]!
    // a consent manager's dialog is never the page, however much of its text it holds (script-rendered
    // pages ship little else)
    if ((h === Hint.Strong || h === Hint.Weak) && pos[i]! >= DOMINANT * total && ((!CONSENT_MARKS.has(hintBy[i]!) && !(commentsAside && READERS_MARKS.has(hintBy[i]!))) || PAGE_TAGS.has(els[i]!.tag))) hint[i] = Hint.None
  }

  // bottom-up sums; furniture turns its positive text into a cost
  const agg = new Float64Array(n)
  const good = new Float64Array(n)
  for (let i = n - 1; i >= 0; i--) {
    let v = agg[i]! + own[i]!
    const h = hint[i]!
    if (h === Hint.Strong) v = -Math.abs(v) * 0.5 - 5
    else if (h === Hint.Weak) v = v > 0 ? v * 0.3 : v
    else if (h === Hint.Positive && v > 0) v *= 1.1
    const ip = els[i]!.attrs?.itemprop
    if (ip !== undefined && /articlebody|text/i.test(ip) && v > 0) v *= 1.5
    agg[i] = v
    const g = h === Hint.Strong || h === Hint.Weak ? 0 : good[i]! + ownPos[i]!
    good[i] = g
    const p = parent[i]!
    if (p >= 0) {
      agg[p]! += v
      good[p]! += g
    }
  }

  // nothing inside a consent manager's dialog is the body
  const inConsent = new Uint8Array(n)
  for (let i = 0; i < n; i++) {
    const p = parent[i]!
    inConsent[i] = (p >= 0 && inConsent[p]) || (hint[i] === Hint.Strong && CONSENT_MARKS.has(hintBy[i]!) && !PAGE_TAGS.has(els[i]!.tag)) ? 1 : 0
  }
  let best = -1
  let bestV = 0
  for (let i = 0; i < n; i++) {
    const t = els[i]!.tag
    if (!(BLOCK.has(t) || CELL.has(t) || t.indexOf("-") > 0) || inConsent[i] || (commentsAside && inReaders[i])) continue
    if (agg[i]! > bestV) {
      bestV = agg[i]!
      best = i
    }
  }
  if (best < 0) return { paragraphs: [], root: null }
  // grow to an ancestor when it adds clearly more content than it costs
  for (let p = parent[best]!; p >= 0; p = parent[p]!) {
    const gain = good[p]! - good[best]!
    const loss = agg[best]! - agg[p]!
    if (agg[p]! > 0 && gain > GROW * Math.max(loss, 0) && gain > 0.15 * good[best]!) best = p
    else if (agg[p]! < 0.5 * agg[best]!) break
  }
  // A paragraph is not a container: when the best is one paragraph among plain (link-free) siblings of
  // the body's kinds, paragraphs, lists, tables, subheadings, code (a short page whose other blocks are
  // too short to score), the body is their parent, as it would be had they scored; its link lists and
  // furniture are still pruned below.
  if (els[best]!.tag === "p" && parent[best]! >= 0) {
    const p = parent[best]!
    let sibling = false
    for (let i = p + 1; i < n && !sibling; i++) {
      if (i === best || parent[i] !== p || !BODY_SIBLING.has(els[i]!.tag) || txt[i]! === 0 || hint[i] !== Hint.None) continue
      let links = 0
      for (let c = chunkStart[i]!; c < chunkEnd[i]!; c++) links += chunks[c]!.linkLen
      sibling = links === 0
    }
    if (sibling) best = p
  }
  if (opts.debug) {
    for (let i = best; i >= 0; i = parent[i]!) {
      opts.debug(`${els[i]!.tag} ${JSON.stringify({ c: els[i]!.attrs?.class, id: els[i]!.attrs?.id })} hint=${hint[i]} agg=${agg[i]!.toFixed(0)} good=${good[i]!.toFixed(0)}`)
    }
  }

  // output: chunks inside best that are not in pruned subtrees
  const pruned = new Uint8Array(n)
  const repeats = repeatFinder(chunks, chunkStart[best]!, chunkEnd[best]!)
  for (let i = best + 1; i < n; i++) {
    const p = parent[i]!
    if (pruned[p]) {
      pruned[i] = 1
      continue
    }
    const h = hint[i]!
    if (h === Hint.Strong) pruned[i] = 1
    else if (!discussion && headedByCommentCount(chunks, chunkStart, chunkEnd, parent, i)) pruned[i] = 1
    else if (txt[i]! >= REPEAT_MIN && chunkEnd[i]! - chunkStart[i]! >= REPEAT_CHUNKS && repeats(chunkStart[i]!, chunkEnd[i]!)) pruned[i] = 1
    else if (agg[i]! < 0 && BLOCK.has(els[i]!.tag) && !(chunkEnd[i]! > 0 && chunks[chunkEnd[i]! - 1]!.owner === i && teaserHeadline(chunks, chunkEnd[i]! - 1, chunkEnd[best]!, els))) {
      // a block worth less than nothing: link lists, labels, share bars
      const s = chunkStart[i]!, e = chunkEnd[i]!
      let len = 0, link = 0
      for (let c = s; c < e; c++) { len += chunks[c]!.len; link += chunks[c]!.linkLen }
      // (a weak block that heads a part of the text, a live blog's `<header class="block-header">` with the
      // update's h3, keeps its heading)
      if (len === 0 || (!listing && link / len > 0.3 && !(h === Hint.None && linkedSentence(chunks, s, e, link, len))) || (h === Hint.Weak && !headsText(els[i]!, link, titleKey))) pruned[i] = 1
    }
  }
  const paragraphs: string[] = []
  const model = blockModel()
  const observer = blockObserver()
  const sampleOf = model !== null || observer !== null ? blockSampler(els, parent, hint, chunks, best, chunkStart[best]!, chunkEnd[best]!, listing, titleKey) : null
  // with a block model every chunk of the page is a candidate: the body's unless the model doubts it,
  // one outside the body when the model is confident (see docs/extraction.md, "Block model")
  const from = sampleOf !== null ? 0 : chunkStart[best]!
  const to = sampleOf !== null ? chunks.length : chunkEnd[best]!
  // an h1 is the headline, shown as the title; a body that sets its sections in h1s (a manual page's
  // NAME, SYNOPSIS, DESCRIPTION) keeps them (the one that repeats the title still goes)
  let h1s = 0
  let firstH1 = -1
  for (let c = chunkStart[best]!; c < chunkEnd[best]! && h1s < SECTION_H1S; c++) if (els[chunks[c]!.owner]!.tag === "h1") { if (h1s++ === 0) firstH1 = c }
  // (a paragraph before the h1 makes it a heading inside the text, not the page's headline)
  let topBar = h1s === 1 && !listing
  for (let c = chunkStart[best]!; topBar && c < firstH1; c++) if (chunks[c]!.len >= 100 && endsSentence(chunks[c]!.text)) topBar = false
  for (let c = from; c < to; c++) {
    const ck = chunks[c]!
    const inBody = c >= chunkStart[best]! && c < chunkEnd[best]! && !pruned[ck.owner]
    if (!inBody && sampleOf === null) continue
    if (ck.linkLen / ck.len > 0.6 && !ck.quoted && !(listing && (ck.len >= LISTING_LINK_MIN || isCardName(chunks, c))) && !teaserHeadline(chunks, c, chunkEnd[best]!, els)) continue
    const text = cleanChunk(ck.text)
    if (text.length === 0) continue
    // above the headline: a top bar's short lines (rates, dates, a kicker), not the body
    if (topBar && c >= chunkStart[best]! && c < firstH1 && text.length < 100) continue
    if (isConsentText(text)) continue
    if (text.length < 60 && BOILER_TEXT.test(text)) continue
    if (text.length < 300 && (CAPTION_CREDIT.test(text) || UI_NOTICE.test(text))) continue
    if (text.length < 250 && captionWithCredit(text) && (besideImage(els[ck.owner]!) || holdsImage(els[ck.owner]!, 2))) continue
    // (a credit alone on its line, in the block that holds its picture: "<p><img><br><i>Фото: …</i></p>")
    if (text.length < 120 && TRAILING_CREDIT.exec(text)?.index === 0 && holdsImage(els[ck.owner]!, 2)) continue
    if (text.length < 500 && PROMO.test(text)) continue
    if (text.length < 250 && ck.linkLen > 0 && BREADCRUMB_LINE.test(text) && !endsSentence(text) && !text.includes("«") && linksIn(els[ck.owner]!, 8) >= (text.match(/\s[›»]\s/g)?.length ?? 0)) continue
    // A date line; one that says it is the publication's ("Updated Nov. 19, 2019 8:21 am ET / Original ...") however many words;
    // not a table row (release histories, schedules and fixtures date their rows)
    if (text.length < 90 && !listing && (READING_TIME.test(text) || CONTINUES.test(text))) continue
    if (!ck.quoted && text.length < 100 && !isDataRow(els[ck.owner]!) && (DATE_LINE.test(text) || AGE_LINE.test(text)) && !isTimestampLabel(text) && ((!endsSentence(text) && text.split(" ").length <= 14 && mostlyDate(text)) || PUBLICATION_LINE.test(text) || PUBLICATION_LINE_INTL.test(text))) continue
    // (a forum reply's heading is the title after "Re:")
    if (HEADING.has(els[ck.owner]!.tag) && titleKey !== "" && key(text.replace(REPLY_PREFIX, "")) === titleKey) continue
    // a byline with its date ("Par Julien Marchetti — Publié le 2 février 2026", "Von Katrin Wolff 22.10.2025, 19:45 Uhr")
    // (a teaser's byline in a listing is part of its card)
    if (!listing && !ck.quoted && text.length < 160 && ((BYLINE_LINE.test(text) && DATE_LINE.test(text)) || BYLINE_PUBLISHED.test(text))) continue
    if (els[ck.owner]!.tag === "h1" && h1s < SECTION_H1S) continue
    // (a standfirst may open with its dateline's place: VnExpress's "Hà Nội" before the description)
    // (a lede opens with its dateline: "DRESDEN, 3 March 2025 – Acme GmbH today opened …")
    if (paragraphs.length === 0 && descriptionKey !== "" && repeatsDescription(key(text), descriptionKey) && !DATELINE_START.test(text) && isStandfirst(els, parent, ck.owner)) continue
    if (sampleOf !== null) {
      const sample = sampleOf(c, text, inBody)
      observer?.(text, sample)
      if (model === null) { if (inBody) paragraphs.push(text); continue }
      const p = sigmoid(blockLogit(model, sample))
      if (inBody ? p < model.dropBelow : p < model.addAbove) continue
    }
    paragraphs.push(text)
  }
  return commentsAside ? { paragraphs, root: els[best]!, commentsAside } : { paragraphs, root: els[best]! }
}

/**
 * What a subtree needs before it counts as a repeat of an earlier one: this much text (weighted
 * characters) in at least this many chunks. One paragraph said twice (a song's chorus, a lead that a
 * standfirst repeats, a table row) is the page's own text, not a second copy of the page.
 */
const REPEAT_MIN = 200
const REPEAT_CHUNKS = 2

/**
 * Whether the chunks `from`..`to` repeat, word for word, a run of chunks seen before and not
 * containing them. Builders of responsive pages ship the same article once per breakpoint and hide
 * all but one with media queries, which are not evaluated here; the first copy is kept. Runs are
 * compared by a polynomial hash of their chunks' texts (two moduli under 2^26, so every product
 * stays exact in a double), computed once for the body: each query is constant time.
 */
function repeatFinder(chunks: readonly Chunk[], start: number, end: number): (from: number, to: number) => boolean {
  const M1 = 67108859, M2 = 67108837, B = 1000003
  const n = end - start
  const h1 = new Float64Array(n + 1), h2 = new Float64Array(n + 1)
  const p1 = new Float64Array(n + 1), p2 = new Float64Array(n + 1)
  p1[0] = 1
  p2[0] = 1
  const ids = new Map<string, number>()
  for (let c = 0; c < n; c++) {
    const t = chunks[start + c]!.text.replace(/\s+/g, " ").trim()
    let id = ids.get(t)
    if (id === undefined) ids.set(t, (id = ids.size + 1))
    h1[c + 1] = (h1[c]! * B + id) % M1
    h2[c + 1] = (h2[c]! * B + id) % M2
    p1[c + 1] = (p1[c]! * B) % M1
    p2[c + 1] = (p2[c]! * B) % M2
  }
  const range = (h: Float64Array, p: Float64Array, m: number, s: number, e: number) => (((h[e]! - ((h[s]! * p[e - s]!) % m)) % m) + m) % m
  /** The end of the first run seen with each hash. */
  const seen = new Map<string, number>()
  return (from, to) => {
    if (to <= from || from < start || to > end) return false
    const s = from - start, e = to - start
    const k = `${range(h1, p1, M1, s, e)},${range(h2, p2, M2, s, e)},${e - s}`
    const before = seen.get(k)
    if (before === undefined) {
      seen.set(k, to)
      return false
    }
    return before <= from
  }
}

/**
 * A heading that counts readers' comments ("Comments (3)", "Комментарии (3)", "12 Kommentare"): the
 * block it opens is the comments section, whatever its classes say (`reviews-block`, `a_cmt`). A count
 * is required: a manual's section on code comments is headed "Comments" alone; and a number after the
 * word numbers one comment ("Comment 1" and its "Response" in a rulemaking's answers), it counts none.
 */
const COMMENTS_WORD = "(?:comments?|kommentare?|commentaires?|commenti|comentarios|comentários|reacties|komentarz[ey]?|комментари[ийя]|коментар[іів]{1,2}|yorumlar?|kommentarer|kommentit|hozzászólások?|σχόλια|評論|评论|コメント|댓글)"
/** The same words in the plural, which a bare number may follow ("Comments 42", "Kommentare: 5"). */
const COMMENTS_PLURAL = "(?:comments|kommentare|commentaires|commenti|comentarios|comentários|reacties|komentarze|комментарии|коментарі|yorumlar|kommentarer|kommentit|hozzászólások|σχόλια)"
const COMMENT_COUNT = new RegExp(`^(?:${COMMENTS_WORD}\\s*\\(\\d+\\)|${COMMENTS_PLURAL}\\s*:?\\s*\\d+|\\d+\\s*${COMMENTS_WORD})$`, "iu")

/** Whether element `i` is the outermost element whose first chunk is a comment count and that holds more than it. */
function headedByCommentCount(chunks: ReadonlyArray<Chunk>, chunkStart: ArrayLike<number>, chunkEnd: ArrayLike<number>, parent: ArrayLike<number>, i: number): boolean {
  const first = chunkStart[i]!
  if (first >= chunkEnd[i]! - 1 || chunks[first]!.len > 40) return false
  const p = parent[i]!
  if (p >= 0 && chunkStart[p] === first) return false
  return COMMENT_COUNT.test(chunks[first]!.text.trim())
}

/** A news dateline opening a line: a place in capitals, a comma, its date and a dash ("DRESDEN, 3 March 2025 – "). */
const DATELINE_START = /^\p{Lu}[\p{Lu}\s.'’]{2,30},[^–—\n]{1,40}\s[–—-]\s/u
/** Whether a line's key is the description's, or the description's after a short prefix (a place). */
const repeatsDescription = (k: string, description: string) => k === description || (k.length - description.length <= 40 && k.endsWith(description))

/** class/id words of a standfirst (the summary under a headline): "dek", "standfirst", "excerpt", "chapo"… */
const STANDFIRST_WORDS = new Set("dek deck standfirst subhead subheading strapline excerpt abstract teaser summary description desc chapo chapeau sapo".split(" "))

/**
 * Whether the element holding a chunk, or one of its three nearest ancestors, is marked as a standfirst:
 * by its class/id words, or by standing in a `<header>` (the headline's, where a lede does not go).
 */
function isStandfirst(els: readonly Element[], parent: readonly number[], i: number): boolean {
  for (let k = 0; k < 4 && i >= 0; k++, i = parent[i]!) {
    if (els[i]!.tag === "header") return true
    const a = els[i]!.attrs
    if (a !== null && wordsOf(`${a.class ?? ""} ${a.id ?? ""}`).some((w) => STANDFIRST_WORDS.has(w))) return true
  }
  return false
}

/**
 * A figure that holds a table or a code listing presents data or code, which is content (sites wrap
 * tables in `<figure class="wp-block-table">`, books their listings in a figure); a figure of a
 * picture is furniture. Its figcaption stays furniture either way.
 */
function presentsData(figure: Element): boolean {
  let found = false
  walk(figure, (el) => {
    if (found) return false
    if (el.tag === "table" || el.tag === "pre") found = true
    return !found
  })
  return found
}

function key(s: string): string {
  return s.toLowerCase().replace(/[^\p{L}\p{N}]+/gu, "")
}

/** In listing mode, a link chunk at least this long is a headline or product name, shorter ones are labels. */
const LISTING_LINK_MIN = 20
const isPriceLabel = (ck: Chunk) => ck.len <= 30 && PRICE_LABEL.test(ck.text) && detectCurrency(ck.text) !== undefined
/**
 * A linked heading over a sentence of its own in the body (a result's or a teaser's headline above
 * its standfirst): the item's name, kept with its text in any reading.
 */
function teaserHeadline(chunks: readonly Chunk[], c: number, end: number, els: readonly Element[]): boolean {
  const ck = chunks[c]!
  const tag = els[ck.owner]!.tag
  if ((tag !== "h2" && tag !== "h3" && tag !== "h4") || ck.linkLen <= 0.6 * ck.len || c + 1 >= end) return false
  const next = chunks[c + 1]!
  return next.len >= 80 && next.linkLen < 0.2 * next.len && next.punct > 0 && !HEADING.has(els[next.owner]!.tag)
}
/** In listing mode, a short link beside a price is a card's product name, not a label. */
const isCardName = (chunks: readonly Chunk[], c: number) => {
  const prev = chunks[c - 1], next = chunks[c + 1]
  return (prev !== undefined && isPriceLabel(prev)) || (next !== undefined && isPriceLabel(next))
}
/** What a price on a card is worth in listing mode: about what a short name link costs. */
const PRICE_WORTH = 10
/** A price as cards show it: "$ 99 +", "From £12.50", "1.299,00 €", "USD 40" (a sign or a code beside the number; the code must be a currency's, not "5 MIN"). */
const PRICE_LABEL = /^\s*([Ff]rom\s+)?([$€£¥₹₩]|[A-Z]{3}\s)\s?\d[\d.,\s]*\+?\s*$|^\s*([Ff]rom\s+)?\d[\d.,\s]*\s?([$€£¥₹₩]|[A-Z]{3}|kr|zł)\s*$/
/** Only noscript elements with this much markup are parsed (tracking pixels and "enable JavaScript" notes are smaller). */
const NOSCRIPT_MIN = 500

/** Children of a large `<noscript>`, parsed from its raw text (the parser keeps noscript content as text). */
function noscriptChildren(el: Element, enabled: boolean): Element["children"] | undefined {
  if (!enabled || el.tag !== "noscript") return undefined
  const raw = el.children.length === 1 && typeof el.children[0] === "string" ? el.children[0] : undefined
  if (raw === undefined || raw.length < NOSCRIPT_MIN || !/<(p|div|article|li|h[1-6])\b/i.test(raw)) return []
  const body = parseHtml(raw).body
  // the fragment did not go through the page's sanitizer (images of the chosen root are read later)
  sanitizeTree(body)
  return body.children
}

/**
 * Cookie and consent banners: text about cookies in consent, privacy or tracking words that asks the
 * visitor for something ("By continuing you agree to our use of cookies"). An article's sentence about
 * cookies ("the script sets no cookies, so there is no consent banner to add") asks nothing.
 */
const CONSENT_PHRASE = /\bwe use cookies\b|\bcookie (policy|settings|preferences|notice|consent|banner)\b/i
const CONSENT_WORDS = /\b(consent|privacy|third[- ]part(y|ies)|browsers?|websites?|analytics|tracking|advertising)\b/i
const ASKS_VISITOR = /\b(we|us|our|you|your)\b/i
export function isConsentText(text: string): boolean {
  return text.length < 1500 && (CONSENT_PHRASE.test(text) || (/\bcookies\b/i.test(text) && ((CONSENT_WORDS.test(text) && ASKS_VISITOR.test(text)) || CONSENT_ASKED.test(text))))
}
/** Consent asked for in other languages (German, French, Spanish, Italian, Dutch, Portuguese, Polish), beside "cookies". */
const CONSENT_ASKED = /\b(zustimmung|einwilligung|zustimmen|akzeptieren|consentement|accepter|acceptez|consentimiento|aceptar|acepta|consenso|accetta|accettare|toestemming|accepteren|consentimento|aceitar|zgod[aęy]|akceptuj)/i

/** Elements that are page furniture wherever they stand: left out of the page's shown text. */
const SHOWN_FURNITURE = new Set(["nav", "header", "footer", "aside", "menu", "form", "dialog", "button", "select"])

/**
 * The reading of last resort: all the text the page shows in its `<main>` (or `scope`), without its
 * furniture (navigation, header, footer, forms, dialogs, furniture roles) and cookie notices. For
 * pages whose content has no shape the other readings recognize (app shells, bare listings); it is
 * used only when they find next to nothing. See docs/extraction.md.
 */
export function shownText(scope: Element, withoutComments = false): MainContent {
  const root = byTag(scope, "main")[0] ?? scope
  const skip = (el: Element) => SHOWN_FURNITURE.has(el.tag) || isHidden(el) || (el.attrs?.role !== undefined && FURNITURE_ROLE.test(el.attrs.role.trim())) ||
    (withoutComments && isReadersComments(el))
  return { paragraphs: shownLines(root, skip).filter((line) => !isConsentText(line)), root }
}

/** Whether `link` inside `heading` points at the heading itself (its id, the link's own id or name). */
function isOwnAnchor(link: Element, heading: Element): boolean {
  // (a definition term too: a manual's option `<dt id="k"><a href="#k">-k</a></dt>`)
  if (!HEADING.has(heading.tag) && heading.tag !== "dt") return false
  const href = link.attrs?.href
  if (href === undefined || !href.startsWith("#") || href.length < 2) return false
  const target = href.slice(1)
  return target === heading.attrs?.id || target === link.attrs?.id || target === link.attrs?.name
}

/**
 * A block that is one sentence with links in it ("Use a boar's hair brush or a comb to shape your
 * beard."), not a list of links: at least eight words, ending a sentence, mostly plain text.
 */
function linkedSentence(chunks: readonly Chunk[], from: number, to: number, link: number, len: number): boolean {
  if (to - from !== 1 || link > 0.5 * len) return false
  const text = chunks[from]!.text.trim()
  return endsSentence(text) && text.split(/\s+/).length >= 8
}
/** Whether a text ends a sentence (a full stop, question or exclamation mark, an ellipsis; a closing quote or bracket after it). */
const endsSentence = (text: string) => /[.!?…。！？]["'”’)]?$/.test(text.trimEnd())

/** A caption that ends with its picture's credit: some words of caption, then the credit. */
function captionWithCredit(text: string): boolean {
  const m = TRAILING_CREDIT.exec(text)
  return m !== null && m.index >= 12
}

/**
 * Whether an element sits beside a picture: it, its parent or grandparent follows an element that is
 * or holds an `<img>`/`<picture>` (a caption under its image, in one wrapper).
 */
function besideImage(el: Element): boolean {
  let e: Element | null = el
  for (let up = 0; up < 3 && e !== null && e.parent !== null; up++, e = e.parent) {
    const sib = e.parent.children
    // (a parent of many children is a body, not a figure: finding the place would cost a pass each)
    if (sib.length > 64) continue
    for (let k = sib.indexOf(e) - 1; k >= 0; k--) {
      const c = sib[k]!
      if (typeof c === "string") { if (c.trim() === "") continue; break }
      if (holdsImage(c, 3)) return true
      break
    }
  }
  return false
}
/** The links inside an element, counted up to `max`. */
function linksIn(el: Element, max: number): number {
  let n = 0
  walk(el, (e) => { if (n >= max) return false; if (e.tag === "a") n++ })
  return n
}
function holdsImage(el: Element, depth: number): boolean {
  if (el.tag === "img" || el.tag === "picture") return true
  if (depth === 0) return false
  for (const c of el.children) if (typeof c !== "string" && holdsImage(c, depth - 1)) return true
  return false
}

/** A table row of two cells or more (a release, a fixture, a schedule), not a one-cell line that is a layout table's. */
function isDataRow(el: Element): boolean {
  if (el.tag !== "tr") return false
  let cells = 0
  for (const c of el.children) if (typeof c !== "string" && (c.tag === "td" || c.tag === "th") && ++cells >= 2) return true
  return false
}

/** An element whose class or id names readers' comments (`comments-area`, `comment-list`, `disqus_thread`). */
function isReadersComments(el: Element): boolean {
  const a = el.attrs
  if (a === null || (a.class === undefined && a.id === undefined)) return false
  return wordsOf(`${a.class ?? ""} ${a.id ?? ""}`).some((w) => READERS_MARKS.has(w))
}

function isTeaser(ck: Chunk): boolean {
  return ck.leadLink >= 20 && ck.leadLink >= 0.15 * ck.len
}

function chunkValue(ck: Chunk, tag: string, titleKey: string, listing: boolean): number {
  const { len, punct } = ck
  if (isConsentText(ck.text)) return -(8 + 0.5 * len)
  if (listing) {
    // collections: headline links and short product cards are the content; tiny labels are not
    // a card's price is part of the card, however short, and vouches for the card's name beside it
    // (names are short links, worth little on their own)
    if (isPriceLabel(ck)) return PRICE_WORTH
    if (ck.linkLen / len > 0.5) return len >= LISTING_LINK_MIN ? len * 0.5 - 5 : -(4 + 0.2 * len)
    return (punct === 0 && len < 40 ? 0.5 : 1) * len - 8
  }
  const linkLen = ck.quoted ? ck.linkLen * 0.3 : ck.linkLen
  const ld = linkLen / len
  if (ld > 0.5) return -(8 + 0.2 * len)
  if (HEADING.has(tag)) {
    if (titleKey !== "" && key(ck.text) === titleKey) return 0
    return ld > 0.2 ? -5 : 0
  }
  let v = len - 2 * linkLen
  if (punct === 0 && len < 100) v *= 0.3
  if (tag === "p") v *= 1.3
  else if (tag === "li" || tag === "dd" || tag === "dt") v *= 0.7
  if (isTeaser(ck)) v *= 0.5
  return v - 20
}

function cleanChunk(s: string): string {
  return s
    .split("\n")
    .map((l) => l.replace(/[\s\u00a0\u200b\u200c\u200d\ufeff]+/g, " ").trim())
    .filter((l) => l.length > 0)
    .join("\n")
}

/**
 * The features of the candidate paragraphs inside the body `best` (chunks `from` to `to`), for the block
 * model (`block-model.ts` lists them). Computed only when a model or an observer is set.
 */
function blockSampler(els: Element[], parent: number[], hint: Hint[], chunks: Chunk[], best: number, from: number, to: number, listing: boolean, titleKey: string) {
  const n = els.length
  const depth = new Uint16Array(n)
  for (let i = 1; i < n; i++) depth[i] = depth[parent[i]!]! + 1
  // the same text more than once on the page: navigation, repeated teasers, share bars
  const seen = new Map<string, number>()
  const norm = (t: string) => t.replace(/\s+/g, " ").trim().toLowerCase()
  for (const ck of chunks) { const k = norm(ck.text); seen.set(k, (seen.get(k) ?? 0) + 1) }
  let bodyLen = 0
  for (let c = from; c < to; c++) bodyLen += chunks[c]!.len
  const wordsOf = new Map<number, string[]>()
  const elWords = (i: number) => {
    let w = wordsOf.get(i)
    if (w === undefined) { w = classWords(els[i]!.attrs?.class, els[i]!.attrs?.id); wordsOf.set(i, w) }
    return w
  }
  const span = Math.max(1, to - from - 1)
  let strong = new Uint8Array(0)
  return (c: number, text: string, inBody: boolean): BlockSample => {
    if (strong.length === 0) {
      // inside page furniture (a strong furniture hint on the element or an ancestor)
      strong = new Uint8Array(n)
      for (let i = 0; i < n; i++) strong[i] = hint[i] === Hint.Strong || (i > 0 && strong[parent[i]!] === 1) ? 1 : 0
    }
    const ck = chunks[c]!
    const tag = els[ck.owner]!.tag
    const words = text.split(/\s+/).length
    const pos = (c - from) / span
    const v = chunkValue(ck, tag, titleKey, listing)
    const h = hint[ck.owner]!
    const d = new Float64Array(DENSE_FEATURES.length)
    let k = 0
    d[k++] = Math.log1p(ck.len) / 6
    d[k++] = ck.linkLen / ck.len
    d[k++] = ck.leadLink / ck.len
    d[k++] = Math.min(1, (ck.punct * 30) / ck.len)
    d[k++] = /[.!?…。！？]["'”’)]?$/.test(text) ? 1 : 0
    d[k++] = Math.log1p(words) / 5
    d[k++] = Math.min(15, ck.len / words) / 10
    d[k++] = /^\p{Lu}/u.test(text) ? 1 : 0
    d[k++] = (text.match(/\d/g)?.length ?? 0) / text.length
    d[k++] = Math.max(-10, Math.min(20, depth[ck.owner]! - depth[best]!)) / 10
    d[k++] = Math.max(-1, Math.min(2, pos))
    d[k++] = pos >= 0 && pos <= 1 ? 4 * pos * (1 - pos) : 0
    d[k++] = c / Math.max(1, chunks.length - 1)
    d[k++] = tag === "p" ? 1 : 0
    d[k++] = tag === "li" || tag === "dd" || tag === "dt" ? 1 : 0
    d[k++] = HEADING.has(tag) ? 1 : 0
    d[k++] = tag === "td" || tag === "th" || tag === "tr" ? 1 : 0
    d[k++] = tag === "div" || tag === "section" || tag === "article" || tag === "main" ? 1 : 0
    d[k++] = tag === "blockquote" || tag === "pre" ? 1 : 0
    d[k++] = d[13]! + d[14]! + d[15]! + d[16]! + d[17]! + d[18]! === 0 ? 1 : 0
    d[k++] = (seen.get(norm(ck.text)) ?? 0) > 1 ? 1 : 0
    d[k++] = ck.quoted ? 1 : 0
    d[k++] = isTeaser(ck) ? 1 : 0
    d[k++] = text.length < 100 && DATE_LINE.test(text) ? 1 : 0
    d[k++] = listing ? 1 : 0
    d[k++] = v > 0 ? 1 : 0
    d[k++] = Math.max(-1.5, Math.min(1.5, v / ck.len))
    d[k++] = h === Hint.Positive ? 1 : 0
    d[k++] = h === Hint.Weak ? 1 : 0
    d[k++] = bodyLen > 0 ? ck.len / bodyLen : 0
    d[k++] = Math.min(1, (text.split("\n").length - 1) / 5)
    d[k++] = inBody ? 1 : 0
    d[k++] = strong[ck.owner]!
    const vocab: string[] = []
    for (const w of elWords(ck.owner)) vocab.push("o:" + w)
    for (let p = parent[ck.owner]!, up = 0; p >= 0 && up < 3; p = parent[p]!, up++) {
      for (const w of elWords(p)) if (!vocab.includes("a:" + w)) vocab.push("a:" + w)
    }
    return { dense: d, words: vocab }
  }
}
