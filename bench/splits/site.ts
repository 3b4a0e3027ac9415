/** The site of a benchmark page: its host without a leading `www.` (the id when the URL is missing). */
export function siteOf(url: string | undefined, id: string): string {
  try {
    return new URL(url ?? "").hostname.toLowerCase().replace(/^www\d?\./, "")
  } catch {
    return `id:${id}`
  }
}
