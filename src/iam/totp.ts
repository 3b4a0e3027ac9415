import { randomBytes } from "node:crypto"
import { generateSecret, generateURI, verifySync } from "otplib"

/** RFC 6238 defaults, which every authenticator app reads: SHA-1, 6 digits, 30 s steps. */
const PERIOD_S = 30
export const RECOVERY_CODE_COUNT = 10

export const newTotpSecret = () => generateSecret()

export const otpauthUrl = (secret: string, account: string) => generateURI({ issuer: "Trawl", label: account, secret })

/**
 * The time step a six-digit code belongs to, accepting one step of clock drift either way;
 * undefined when it matches none. Replays are refused by the caller, which keeps the last step used.
 */
export const totpStep = (secret: string, code: string): number | undefined => {
  if (!/^\d{6}$/.test(code)) return undefined
  try {
    const epoch = Math.floor(Date.now() / 1000)
    const result = verifySync({ secret, token: code, epoch, epochTolerance: PERIOD_S })
    return result.valid ? Math.floor(epoch / PERIOD_S) + result.delta : undefined
  } catch {
    return undefined
  }
}

/** 32 letters and digits (no i, l, o, u), so a byte modulo 32 picks each equally often. */
const alphabet = "0123456789abcdefghjkmnpqrstvwxyz"

/** Ten codes like `k7m2q-x9dfp` (50 bits each), shown once; only their keyed hashes are stored. */
export const newRecoveryCodes = (): ReadonlyArray<string> =>
  Array.from({ length: RECOVERY_CODE_COUNT }, () => {
    const bytes = randomBytes(10)
    const chars = [...bytes].map((b) => alphabet[b % alphabet.length]!).join("")
    return `${chars.slice(0, 5)}-${chars.slice(5)}`
  })

/** The form a recovery code is hashed in: case, spaces and dashes as the user typed them do not matter. */
export const normalizeRecoveryCode = (code: string) => code.toLowerCase().replace(/[\s-]/g, "")
