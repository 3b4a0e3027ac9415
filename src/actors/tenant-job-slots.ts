/**
 * A tenant's job slots as its entity counts them: the jobs that hold a `scraper.jobs.concurrent`
 * slot, and the jobs created today for `scraper.jobs.daily`.
 *
 * Running jobs are counted by id, not by number: a release names its jobs, and a job is given back
 * once however the release and a reconcile from SQL interleave (a release that arrives after a
 * reconcile already left the job out changes nothing). Reserved jobs whose rows may not be written
 * yet are pending; a reservation whose request died is forgotten after `pendingTtlMs`.
 */
export class TenantJobSlots {
  private active = new Set<string>()
  private readonly pending = new Map<string, number>()
  private createdToday = 0
  private day = Number.NaN
  private reconciledAt = Number.NEGATIVE_INFINITY
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
    for (const [id, until] of this.pending) if (until <= now) this.pending.delete(id)
    return [...this.pending.keys()]
  }

  /** New counts: SQL's running jobs and today's jobs, plus the reservations not written yet. */
  reconcile(sql: { readonly runningIds: ReadonlySet<string>; readonly today: number }, written: ReadonlySet<string>, now: number, day: number): void {
    for (const id of written) this.pending.delete(id)
    this.active = new Set(sql.runningIds)
    for (const id of this.pending.keys()) this.active.add(id)
    this.createdToday = sql.today + this.pending.size
    this.day = day
    this.reconciledAt = now
  }

  /** Whether the job already holds a slot (reserved or running): reserving it again takes no room. */
  holds(id: string): boolean {
    return this.active.has(id) || this.pending.has(id)
  }

  reserve(ids: ReadonlyArray<string>, now: number): void {
    for (const id of ids) {
      if (!this.holds(id)) this.createdToday++
      this.pending.set(id, now + this.options.pendingTtlMs)
      this.active.add(id)
    }
  }

  /** The jobs ended, or were never created: their running slots are free again. */
  release(ids: ReadonlyArray<string>): void {
    for (const id of ids) {
      this.pending.delete(id)
      this.active.delete(id)
    }
  }
}
