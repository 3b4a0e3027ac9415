import { Effect } from "effect"
import { ResponseHeaders } from "../schema/errors.ts"
import { SESSION_COOKIE } from "./security.ts"

/**
 * Sets (or, with no session, clears) the browser's session cookie on the response: HttpOnly,
 * SameSite=Lax, Path=/, Secure when `PUBLIC_BASE_URL` is https (docs/identity.md, "Sessions").
 */
export const sessionCookieSetter = (publicBaseUrl: string) => {
  const secure = publicBaseUrl.startsWith("https:") ? "; Secure" : ""
  return (session: { readonly sessionId: string; readonly expiresAt: string } | undefined) =>
    Effect.map(ResponseHeaders, (bag) => {
      if (!bag) return
      bag["set-cookie"] = session
        ? `${SESSION_COOKIE}=${session.sessionId}; Path=/; HttpOnly; SameSite=Lax; Expires=${new Date(session.expiresAt).toUTCString()}${secure}`
        : `${SESSION_COOKIE}=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0${secure}`
    })
}
