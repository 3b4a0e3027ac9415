/** Assertions on the error envelope (docs/api.md) shared by the end-to-end tests. */
import { expect } from "vitest"

/** `res` is an error envelope with this status and code, and carries its request id. */
export const expectError = (res: { status: number; json: any }, status: number, code: string) => {
  expect(res.status, JSON.stringify(res.json)).toBe(status)
  expect(res.json.status).toBe("error")
  expect(res.json.code).toBe(code)
  expect(typeof res.json.error.requestId).toBe("string")
}

/** The `path` of every entry of an error's `details`, sorted. */
export const errorPaths = (res: { json: any }) => (res.json.error.details as Array<{ path: string }>).map((d) => d.path).sort()
