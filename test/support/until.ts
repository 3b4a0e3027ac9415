/**
 * Polls `f` every 100 ms until it gives a value (anything but `undefined` or `false`), and fails
 * naming `what` once `timeoutMs` has passed without one.
 */
export const until = async <A>(what: string, f: () => A | undefined | false | Promise<A | undefined | false>, timeoutMs = 30_000): Promise<A> => {
  const end = Date.now() + timeoutMs
  for (;;) {
    const v = await f()
    if (v !== undefined && v !== false) return v as A
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 100))
  }
}
