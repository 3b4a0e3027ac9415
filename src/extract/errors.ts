/** Typed failures of the extraction engine; `errorClass` is the Extraction `errorClass` value. */

export type ExtractErrorClass = "parse_error" | "invalid_input" | "sanitize_fail" | "unknown"

export class ExtractError extends Error {
  override readonly name = "ExtractError"
  readonly errorClass: ExtractErrorClass
  constructor(errorClass: ExtractErrorClass, message: string) {
    super(message)
    this.errorClass = errorClass
  }
}

export const isExtractError = (u: unknown): u is ExtractError => u instanceof ExtractError
