import { scrypt, timingSafeEqual } from "node:crypto"
import { promisify } from "node:util"
import { type Algorithm, hash, verify } from "@node-rs/argon2"
import { Effect } from "effect"
import { fail, type InvalidRequest } from "../schema/errors.ts"

/**
 * Password hashing: Argon2id with OWASP's parameters (19 MiB, 2 passes, 1 lane), computed on the
 * libuv thread pool so the event loop keeps serving (docs/identity.md, "Passwords").
 */
// Algorithm is a declared const enum, which type stripping cannot inline: its Argon2id value is 2
export const ARGON2 = { algorithm: 2 satisfies Algorithm.Argon2id, memoryCost: 19_456, timeCost: 2, parallelism: 1 } as const

/** Bounds of a new password, in characters (a long passphrase of emoji counts its emoji). */
export const PASSWORD_MIN = 12
export const PASSWORD_MAX = 1024

export const hashPassword = (password: string) => Effect.promise(() => hash(password, ARGON2))

const scryptAsync = promisify(scrypt) as (pw: string, salt: Buffer, len: number, opts: object) => Promise<Buffer>

/** Hashes written before Argon2id (scrypt) are still read, so their owners can log in and move on. */
const verifyScrypt = async (password: string, stored: string) => {
  const [, n, r, p, salt, expected] = stored.split("$")
  if (!salt || !expected) return false
  const want = Buffer.from(expected, "base64url")
  const got = await scryptAsync(password, Buffer.from(salt, "base64url"), want.length, {
    N: Number(n),
    r: Number(r),
    p: Number(p),
    maxmem: 64 * 1024 * 1024
  })
  return timingSafeEqual(got, want)
}

/**
 * A hash of a password nobody knows, verified when the account does not exist or has no
 * password, so that an unknown e-mail costs the same time as a wrong password.
 */
let dummy: Promise<string> | undefined
const dummyHash = () => (dummy ??= hash("no account has this password: it only spends the time", ARGON2))

/** Whether `password` matches `stored`; a missing hash is verified against the dummy and fails. */
export const verifyPassword = (password: string, stored: string | null) =>
  Effect.promise(async () => {
    if (stored === null) {
      await verify(await dummyHash(), password).catch(() => false)
      return false
    }
    if (stored.startsWith("scrypt$")) return verifyScrypt(password, stored)
    return verify(stored, password).catch(() => false)
  })

/** Why a new password is refused, or undefined when it is acceptable. */
export const passwordProblem = (password: string, email: string | undefined): string | undefined => {
  const length = [...password].length
  if (length < PASSWORD_MIN) return `must be at least ${PASSWORD_MIN} characters`
  if (length > PASSWORD_MAX) return `must be at most ${PASSWORD_MAX} characters`
  if (email !== undefined && password.trim().toLowerCase() === email.trim().toLowerCase()) return "must not be the e-mail address"
  return undefined
}

/** Refuses a new password that `passwordProblem` finds fault with: 400 `weak_password` at `path`, never quoting it. */
export const refuseWeakPassword = (password: string, email: string | undefined, path: string): Effect.Effect<void, InvalidRequest> => {
  const problem = passwordProblem(password, email)
  return problem === undefined
    ? Effect.void
    : fail(400, "validation_error", `the password ${problem}`, { details: [{ path, code: "weak_password", message: problem }] })
}
