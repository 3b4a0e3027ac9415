import { extractionMinimumUnits, jobMinimumUnits } from "./pricing.ts"

/**
 * A tenant's credit as its entity counts it, in units of 1/10000 EUR: the balance, and the jobs and
 * extractions not charged yet, each of which costs at least its minimum once it ends. New work is
 * admitted only while the free credit (the balance less those minimums) covers its own minimum, so
 * concurrent requests cannot together promise more than the balance holds.
 *
 * Counts come from SQL at each reconcile; in between, the entity's own reservations and charges
 * move them. Extractions reserved whose rows may not be written yet are pending, by id, and
 * forgotten after `pendingTtlMs` (their request died); pending jobs are counted by TenantJobSlots.
 */
export class TenantCredit {
  balance = 0
  /** Counts up with each reconcile: a charge that a reconcile overtook is already in its counts. */
  generation = 0
  private unchargedJobs = 0
  private unchargedExtractions = 0
  /** What calls priced when made (IP lookups) hold while their debits are written. */
  private callsInFlight = 0
  private readonly pendingExtractions = new Map<string, number>()
  private readonly pendingTtlMs: number

  constructor(options: { readonly pendingTtlMs: number }) {
    this.pendingTtlMs = options.pendingTtlMs
  }

  /** The balance less the least that the work not charged yet may cost. */
  get free(): number {
    return this.balance - this.callsInFlight - this.unchargedJobs * jobMinimumUnits - this.unchargedExtractions * extractionMinimumUnits
  }

  /** Takes `units` for a call whose debit is about to be written; false when the free credit cannot cover it. */
  callReserved(units: number): boolean {
    if (this.free < units) return false
    this.callsInFlight += units
    return true
  }

  /**
   * The debit of a call reserved with `units` was written (or refused), leaving `balance` when it
   * is known. Its reservation may be let go only with the new balance known, or it would be free
   * twice over; a refused one just gives its units back.
   */
  callDone(units: number, balance: number | undefined): void {
    this.callsInFlight = Math.max(0, this.callsInFlight - units)
    if (balance !== undefined) this.balance = balance
  }

  /** The balance that new work of minimum `units` needs: what the uncharged work holds, and those units. */
  needed(units: number): number {
    return this.balance - this.free + units
  }

  /** How many more new jobs the free credit covers. */
  jobRoom(): number {
    return jobMinimumUnits <= 0 ? Infinity : Math.max(0, Math.floor(this.free / jobMinimumUnits))
  }

  /** Whether extraction `id` is reserved already (by a try of the same request). */
  holdsExtraction(id: string): boolean {
    return this.pendingExtractions.has(id)
  }

  /**
   * Whether a new extraction fits, with the job it makes (`withJob`) when it makes one; one
   * reserved already, by a try of the same request, always does.
   */
  extractionFits(id: string, withJob: boolean): boolean {
    return this.holdsExtraction(id) || this.free >= extractionMinimumUnits + (withJob ? jobMinimumUnits : 0)
  }

  /** Gives back the credit of extraction `id`, reserved and not written; true when it held any. */
  extractionReleased(id: string): boolean {
    if (!this.pendingExtractions.delete(id)) return false
    this.unchargedExtractions = Math.max(0, this.unchargedExtractions - 1)
    return true
  }

  /** Extractions reserved whose rows may not be written yet. */
  get pendingExtractionCount(): number {
    return this.pendingExtractions.size
  }

  /** The extraction reservations to look up in SQL before the counts are read (expired ones dropped). */
  pendingExtractionIds(now: number): ReadonlyArray<string> {
    for (const [id, until] of this.pendingExtractions) if (until <= now) this.pendingExtractions.delete(id)
    return [...this.pendingExtractions.keys()]
  }

  /**
   * New counts from SQL, plus the reservations not written yet: `pendingJobs` (from the job slots)
   * and the pending extractions not among `writtenExtractions`. Read in that order, a row written
   * in between is counted twice (the safe way) rather than not at all.
   */
  reconcile(sql: { readonly balance: number; readonly jobs: number; readonly extractions: number }, pendingJobs: number, writtenExtractions: ReadonlySet<string>): void {
    for (const id of writtenExtractions) this.pendingExtractions.delete(id)
    this.generation++
    this.balance = sql.balance
    this.unchargedJobs = sql.jobs + pendingJobs
    this.unchargedExtractions = sql.extractions + this.pendingExtractions.size
  }

  jobsReserved(count: number): void {
    this.unchargedJobs += count
  }

  /** Takes the credit of extraction `id`; true when it is new (not a try of a request reserved already). */
  extractionReserved(id: string, now: number): boolean {
    const fresh = !this.pendingExtractions.has(id)
    if (fresh) this.unchargedExtractions++
    this.pendingExtractions.set(id, now + this.pendingTtlMs)
    return fresh
  }

  /**
   * `count` ended jobs or extractions were charged, leaving `balance`, by a charge that began at
   * `generation`. If a reconcile came in between, it may have counted them charged already: they
   * are not taken off again (at worst they stay counted until the next reconcile, the safe way).
   */
  charged(source: "jobs" | "extractions", count: number, balance: number, generation: number): void {
    this.balance = balance
    if (generation !== this.generation) return
    if (source === "jobs") this.unchargedJobs = Math.max(0, this.unchargedJobs - count)
    else this.unchargedExtractions = Math.max(0, this.unchargedExtractions - count)
  }
}
