import { Schema } from "effect"

/** An ISO 8601 date-time on the wire. */
export const DateTime = Schema.String.annotate({ format: "date-time", description: "ISO 8601 date-time" })
export const NullableDateTime = Schema.NullOr(DateTime)

/** An input date-time: must parse. */
export const DateTimeInput = Schema.String.check(
  Schema.makeFilter((s) => !Number.isNaN(Date.parse(s)) && /^\d{4}-\d{2}-\d{2}T/.test(s), {
    expected: "an ISO 8601 date-time such as 2026-01-31T12:00:00Z"
  })
).annotate({ format: "date-time" })

export const Email = Schema.String.check(
  Schema.isMaxLength(255),
  Schema.isPattern(/^[^\s@]+@[^\s@]+\.[^\s@]+$/, { expected: "an e-mail address" })
)

/** A decimal amount in euros, as a string: up to 4 decimals. */
export const Amount = Schema.String.check(
  Schema.isPattern(/^-?\d{1,12}(\.\d{1,4})?$/, { expected: "a decimal amount such as \"10.00\"" })
)

export const iso = (d: Date | string | null | undefined): string | null =>
  d === null || d === undefined ? null : new Date(d).toISOString()

/** Formats a numeric column as a euro string with at least two decimals. */
export const money = (v: string | number): string => {
  const fixed = Number(v).toFixed(4)
  return fixed.replace(/(\.\d\d\d*?)0+$/, "$1")
}
