import { describe, expect, it } from "vitest"
import { parseIsoDateTime } from "../../src/schema/common.ts"

describe("parseIsoDateTime", () => {
  it("reads dates and date-times, with or without seconds, fraction and offset", () => {
    expect(parseIsoDateTime("2026-01-31")).toBe(Date.UTC(2026, 0, 31))
    expect(parseIsoDateTime("2026-01-31T12:30")).toBe(Date.UTC(2026, 0, 31, 12, 30))
    expect(parseIsoDateTime("2026-01-31T12:30:15Z")).toBe(Date.UTC(2026, 0, 31, 12, 30, 15))
    expect(parseIsoDateTime("2026-01-31T12:30:15.123456789Z")).toBe(Date.UTC(2026, 0, 31, 12, 30, 15, 123))
    expect(parseIsoDateTime("2026-01-31T12:30:15+02:00")).toBe(Date.UTC(2026, 0, 31, 10, 30, 15))
    expect(parseIsoDateTime("2026-01-31T00:30:00-14:00")).toBe(Date.UTC(2026, 0, 31, 14, 30))
    expect(parseIsoDateTime("2024-02-29T00:00:00Z")).toBe(Date.UTC(2024, 1, 29))
    expect(parseIsoDateTime("2000-02-29")).toBe(Date.UTC(2000, 1, 29))
    expect(new Date(parseIsoDateTime("0001-01-01T00:00:00Z")!).toISOString()).toBe("0001-01-01T00:00:00.000Z")
    expect(new Date(parseIsoDateTime("9999-12-31T23:59:59.999Z")!).toISOString()).toBe("9999-12-31T23:59:59.999Z")
  })

  it("refuses what is not a real instant between the years 1 and 9999", () => {
    for (const s of [
      "", "2026", "2026-01", "20260131", "2026-1-31", "2026-13-01", "2026-00-10", "2026-01-00", "2026-04-31",
      "2023-02-29", "1900-02-29", "2026-01-31T24:00", "2026-01-31T23:60", "2026-01-31T23:59:60Z",
      "2026-01-31 12:00:00Z", "2026-01-31T12:00:00+14:30", "2026-01-31T12:00:00+02", "2026-01-31T12:00:00.Z",
      "0000-01-01T00:00:00Z", "+275760-09-13T00:00:00.000Z", "-000001-01-01T00:00:00Z", "0001-01-01T00:00:00+00:01",
      "9999-12-31T23:59:59-00:01", "12/31/2019 10:00", "Tue, 01 Jan 2030 00:00:00 GMT", " 2026-01-31", "2026-01-31\n"
    ]) expect(parseIsoDateTime(s), s).toBeUndefined()
  })
})
