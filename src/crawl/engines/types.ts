/**
 * Engine contract shared by every fetch engine (http, alternate, brave, camoufox).
 */

import type { fetchClassifications } from "../../schema/job.ts"

export type EngineName = "http" | "alternate" | "brave" | "camoufox"

export const ENGINE_NAMES: readonly EngineName[] = ["http", "alternate", "brave", "camoufox"]

export type Classification = (typeof fetchClassifications)[number]

export interface ScreenshotOptions {
  format: "png" | "jpeg"
  /** JPEG quality 0-100 (ignored for PNG). */
  quality?: number
  fullPage?: boolean
  /** False: the page is rendered without images, media and fonts (a lighter, faster capture). Default true. */
  loadResources?: boolean
}

export interface FetchRequest {
  url: string
  /** Budget for this attempt, including redirects, body and screenshot. */
  timeoutMs: number
  screenshot?: false | ScreenshotOptions
  signal?: AbortSignal
  /** ALLOW_PRIVATE_TARGETS (development/tests only). */
  allowPrivate: boolean
}

export interface Attempt {
  engine: EngineName
  classification: Classification
  /** Status of the final response, or null when no response was received. */
  httpStatus: number | null
  finalUrl: string | null
  contentType: string | null
  /** The HTML (for browser engines: the rendered DOM). */
  body: Buffer | null
  bytes: number
  screenshot: Buffer | null
  /** Why a requested screenshot is missing (e.g. the http engine cannot take one). */
  screenshotUnavailable?: string
  durationMs: number
  error?: string
  /** Every URL that answered with a redirect, in order (the final URL is `finalUrl`). */
  redirects: string[]
}

export interface Engine {
  readonly name: EngineName
  available(): Promise<boolean>
  fetch(req: FetchRequest): Promise<Attempt>
  /** Releases long-lived resources (agents, browser). Optional for callers; idempotent. */
  close?(): Promise<void>
}

export const emptyAttempt = (
  engine: EngineName,
  classification: Classification,
  startedAt: number,
  extra: Partial<Attempt> = {}
): Attempt => ({
  engine,
  classification,
  httpStatus: null,
  finalUrl: null,
  contentType: null,
  body: null,
  bytes: 0,
  screenshot: null,
  durationMs: Math.max(0, Math.round(performance.now() - startedAt)),
  redirects: [],
  ...extra
})
