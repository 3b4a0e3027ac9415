/**
 * A tenant's job slots as its entity counts them: the jobs that hold a `scraper.jobs.concurrent`
 * slot, and the jobs created today for `scraper.jobs.daily`.
 *
 * Running jobs are counted by id, not by number: a release names its jobs, and a job is given back
 * once however the release and a reconcile from SQL interleave (a release that arrives after a
 * reconcile already left the job out changes nothing; one that arrives while the counts are read
 * is applied to them). Reserved jobs whose rows may not be written
 * yet are pending; a reservation whose request died is forgotten after `pendingTtlMs`.
 */
export type QuotaName = "daily" | "concurrent" | "credit"

/** What `admit` did: the jobs that hold their slots now (and which quota left the others out), or which quota refused them all. */
export type Admission =
  | { readonly reserved: ReadonlyArray<string>; readonly shortBy?: QuotaName }
  | { readonly refused: QuotaName }

export class TenantJobSlots {
  private active = new Set<string>()
  private readonly pending = new Map<string, number>()
  private createdToday = 0
  private day = Number.NaN
  private reconciledAt = Number.NEGATIVE_INFINITY
  // The jobs released while the counts are read from SQL: a count read before their release must
  // not make them hold their slots again.
  private releasedDuringRead: Set<string> | undefined
  private readonly options: { readonly reconcileEveryMs: number; readonly pendingTtlMs: number }

  constructor(options: { readonly reconcileEveryMs: number; readonly pendingTtlMs: number }) {
    this.options = options
  }

  get running(): number {
    return this.active.size
  }

  get today(): number {
    return this.createdToday
  }

  /** Reserved jobs whose rows may not be written yet. */
  get pendingCount(): number {
    return this.pending.size
  }

  /** Whether the counts were read from SQL less than `ms` ago (and on this UTC day). */
  reconciledWithin(now: number, day: number, ms: number): boolean {
    return now - this.reconciledAt < ms && day === this.day
  }

  /** Whether the counts are due to be read from SQL again (they are old, or a new UTC day began). */
  needsReconcile(now: number, day: number): boolean {
    return now - this.reconciledAt > this.options.reconcileEveryMs || day !== this.day
  }

  /**
   * The reservations to look up in SQL before the counts are read: those found written are left to
   * the counts. Read in that order, a row written in between is counted twice (the safe way)
   * rather than not at all.
   */
  pendingIds(now: number): ReadonlyArray<string> {
    this.releasedDuringRead = new Set()
    for (const [id, until] of this.pending) if (until <= now) this.pending.delete(id)
    return [...this.pending.keys()]
  }

  /** New counts: SQL's running jobs and today's jobs, plus the reservations not written yet. */
  reconcile(sql: { readonly runningIds: ReadonlySet<string>; readonly today: number }, written: ReadonlySet<string>, now: number, day: number): void {
    for (const id of written) this.pending.delete(id)
    this.active = new Set(sql.runningIds)
    for (const id of this.pending.keys()) this.active.add(id)
    for (const id of this.releasedDuringRead ?? []) this.active.delete(id)
    this.releasedDuringRead = undefined
    this.createdToday = sql.today + this.pending.size
    this.day = day
    this.reconciledAt = now
  }

  /** Whether the job already holds a slot (reserved or running): reserving it again takes no room. */
  holds(id: string): boolean {
    return this.active.has(id) || this.pending.has(id)
  }

  /** The jobs among `ids` (each once) that hold no slot yet: only they need room. */
  newIds(ids: ReadonlyArray<string>): ReadonlyArray<string> {
    return [...new Set(ids)].filter((id) => !this.holds(id))
  }

  /**
   * Reserves slots for `ids` within `limits`: all of them or none, or with `partial` as many of
   * the new ones as fit, in order (at least one job, or refused). Jobs that hold a slot already
   * take no room and are always admitted. `creditRoom` is how many new jobs the tenant's free
   * credit covers. Names the limit that refused or cut the request: the daily quota, then the
   * credit, before the concurrency, since waiting for a job to end does not help with those.
   */
  admit(
    ids: ReadonlyArray<string>,
    partial: boolean,
    limits: { readonly daily: number; readonly concurrent: number; readonly creditRoom: number },
    now: number
  ): Admission {
    const unique = [...new Set(ids)]
    const fresh = this.newIds(unique)
    const dailyRoom = limits.daily - this.createdToday
    const room = Math.max(0, Math.min(dailyRoom, limits.creditRoom, limits.concurrent - this.active.size))
    const binding = (need: number): QuotaName => (dailyRoom < need ? "daily" : limits.creditRoom < need ? "credit" : "concurrent")
    if (fresh.length > room && (!partial || (room === 0 && fresh.length === unique.length))) {
      return { refused: binding(partial ? 1 : fresh.length) }
    }
    const admittedNew = new Set(fresh.slice(0, room))
    const reserved = unique.filter((id) => this.holds(id) || admittedNew.has(id))
    this.reserve(reserved, now)
    return fresh.length > room ? { reserved, shortBy: binding(room + 1) } : { reserved }
  }

  reserve(ids: ReadonlyArray<string>, now: number): void {
    for (const id of ids) {
      if (!this.holds(id)) this.createdToday++
      this.pending.set(id, now + this.options.pendingTtlMs)
      this.active.add(id)
    }
  }

  /**
   * The jobs ended, or were never created: their running slots are free again. Reservations never
   * written (`unwritten`) leave the day's count too; a job that ended still counts for its day.
   */
  release(ids: ReadonlyArray<string>, unwritten = false): void {
    for (const id of ids) {
      const wasPending = this.pending.delete(id)
      if (unwritten && wasPending) this.createdToday = Math.max(0, this.createdToday - 1)
      this.active.delete(id)
      this.releasedDuringRead?.add(id)
    }
  }
}
