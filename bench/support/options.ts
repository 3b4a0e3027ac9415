/** Command-line options of the benches: `npm run bench:x -- --name value --flag`. */
const args = process.argv.slice(2).filter((a) => a !== "--")

export const flag = (name: string): boolean => args.includes(`--${name}`)

export const stringOption = (name: string, dflt: string): string => {
  const i = args.indexOf(`--${name}`)
  return i >= 0 ? (args[i + 1] ?? dflt) : dflt
}

export const optionalString = (name: string): string | undefined => {
  const i = args.indexOf(`--${name}`)
  return i >= 0 ? args[i + 1] : undefined
}

/** A number option; positive unless `allowZero`. A bad value stops the bench with its name. */
export const numberOption = (name: string, dflt: number, allowZero = false): number => {
  const i = args.indexOf(`--${name}`)
  const v = i >= 0 ? Number(args[i + 1]) : dflt
  if (!Number.isFinite(v) || v < 0 || (v === 0 && !allowZero)) {
    throw new Error(`--${name} must be a ${allowZero ? "non-negative" : "positive"} number`)
  }
  return v
}
