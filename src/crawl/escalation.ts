/**
 * Escalation: run a plan of engine steps until one gives content, with per-classification rules.
 *
 * | classification                          | rule                                              |
 * |-----------------------------------------|---------------------------------------------------|
 * | ok, not_found                           | done — the job ends `done` with this attempt      |
 * | timeout, server_error, connection_error | retry the same step (up to `attempts`), then next |
 * | blocked, empty, engine_unavailable,     | next step at once (same engine will not do better)|
 * |   tls_error                             |                                                   |
 * | unsafe_url, dns_error, too_large        | fail — the job ends `failed` at once              |
 * | cancelled                               | stop — outcome `cancelled` (the job ends `dead`)  |
 *
 * When the steps run out, or the job budget (`jobTimeoutMs`) is spent, the outcome is `failed`
 * with the classification of the last attempt that said something about the target (attempts
 * that only say `engine_unavailable` are skipped when there is another one).
 */
import { type Attempt, type Classification, type Engine, type EngineName, type FetchRequest, emptyAttempt } from "./engines/types.ts"

export interface PlanEntry {
  engine: EngineName
  /** 1..5 */
  attempts: number
  /** 1000..180000 */
  timeoutMs: number
}

export type Rule = "done" | "retry" | "escalate" | "fail" | "cancel"

export const ESCALATION_RULES: Readonly<Record<Classification, Rule>> = {
  ok: "done",
  not_found: "done",
  timeout: "retry",
  server_error: "retry",
  connection_error: "retry",
  blocked: "escalate",
  empty: "escalate",
  engine_unavailable: "escalate",
  tls_error: "escalate",
  unsafe_url: "fail",
  dns_error: "fail",
  too_large: "fail",
  cancelled: "cancel"
}

export type EscalationOutcome = "done" | "failed" | "cancelled"

export interface EscalationResult {
  outcome: EscalationOutcome
  /** Classification of the job: the winning attempt's, or the deciding failure's. */
  classification: Classification
  /** The attempt whose content the job keeps (outcome `done`). */
  winning?: Attempt
  /** The attempt that decided the outcome (same as `winning` when done). */
  final?: Attempt
  attempts: Attempt[]
  durationMs: number
}

export interface EscalationOptions {
  /** Whole-job budget across all steps and retries. */
  jobTimeoutMs: number
  signal?: AbortSignal
  /** Called after every attempt (persist progress, emit events). Errors thrown here are ignored. */
  onAttempt?: (attempt: Attempt, position: { step: number; attempt: number }) => void | Promise<void>
  /** Pause before retrying the same step: `retryDelayMs * retryNumber`. Default 500. */
  retryDelayMs?: number
}

export type EscalationRequest = Omit<FetchRequest, "timeoutMs" | "signal">

/** Waits `ms`, or less when `signal` aborts. */
export const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (ms <= 0 || signal?.aborted) return resolve()
    const t = setTimeout(done, ms)
    function done() {
      clearTimeout(t)
      signal?.removeEventListener("abort", done)
      resolve()
    }
    signal?.addEventListener("abort", done, { once: true })
  })

/** An attempt that never reached the target (engine missing, cancelled before it started). */
const synthetic = (engine: EngineName, classification: Classification, error: string): Attempt =>
  ({ ...emptyAttempt(engine, classification, performance.now(), { error }), durationMs: 0 })

export const runEscalation = async (
  plan: readonly PlanEntry[],
  req: EscalationRequest,
  engines: Partial<Record<EngineName, Engine>>,
  opts: EscalationOptions
): Promise<EscalationResult> => {
  const t0 = performance.now()
  const attempts: Attempt[] = []
  const retryDelay = opts.retryDelayMs ?? 500
  const elapsed = () => performance.now() - t0
  const finish = (outcome: EscalationOutcome, final: Attempt | undefined, classification?: Classification): EscalationResult => ({
    outcome,
    classification: classification ?? final?.classification ?? "engine_unavailable",
    ...(outcome === "done" && final ? { winning: final } : {}),
    ...(final ? { final } : {}),
    attempts,
    durationMs: Math.round(elapsed())
  })
  const record = async (a: Attempt, step: number, attempt: number) => {
    attempts.push(a)
    try {
      await opts.onAttempt?.(a, { step, attempt })
    } catch {
      /* observers must not break the job */
    }
  }
  const cancelled = () => {
    const a = synthetic(plan[0]?.engine ?? "http", "cancelled", "cancelled")
    attempts.push(a)
    return finish("cancelled", a)
  }

  for (let step = 0; step < plan.length; step++) {
    const entry = plan[step]!
    const engine = engines[entry.engine]
    if (!engine) {
      if (opts.signal?.aborted) return cancelled()
      await record(synthetic(entry.engine, "engine_unavailable", `engine ${entry.engine} is not configured on this node`), step, 0)
      continue
    }
    for (let n = 0; n < Math.max(1, entry.attempts); n++) {
      if (opts.signal?.aborted) return cancelled()
      const budget = opts.jobTimeoutMs - elapsed()
      if (budget < 1) return finish("failed", lastMeaningful(attempts), "timeout")
      const fetched = await engine.fetch({
        ...req,
        timeoutMs: Math.max(1, Math.min(entry.timeoutMs, Math.floor(budget))),
        ...(opts.signal ? { signal: opts.signal } : {})
      })
      // An abort that nobody here asked for (a navigation the browser dropped, say) is a failed
      // fetch, not a cancel: only the caller's signal cancels.
      const attempt: Attempt = fetched.classification === "cancelled" && !opts.signal?.aborted
        ? { ...fetched, classification: "connection_error" }
        : fetched
      await record(attempt, step, n)
      const rule = ESCALATION_RULES[attempt.classification]
      if (rule === "done") return finish("done", attempt)
      if (rule === "fail") return finish("failed", attempt)
      if (rule === "cancel" || opts.signal?.aborted) return finish("cancelled", attempt, "cancelled")
      if (rule === "escalate") break
      if (n + 1 < entry.attempts) await sleep(Math.min(retryDelay * (n + 1), Math.max(0, opts.jobTimeoutMs - elapsed())), opts.signal)
    }
  }
  if (opts.signal?.aborted) return cancelled()
  const final = lastMeaningful(attempts)
  return finish("failed", final)
}

const lastMeaningful = (attempts: Attempt[]): Attempt | undefined => {
  for (let i = attempts.length - 1; i >= 0; i--) if (attempts[i]!.classification !== "engine_unavailable") return attempts[i]
  return attempts[attempts.length - 1]
}

// ---------------------------------------------------------------------------------------------
// Per-domain learning
// ---------------------------------------------------------------------------------------------

/** The engines that render pages, and so can take screenshots. */
export const RENDERING_ENGINES: ReadonlySet<EngineName> = new Set(["brave", "camoufox"])

/**
 * A plan for a job that asks for a screenshot: from its first step whose engine renders pages,
 * since a cheaper engine's success would end the job without one. A plan with no such step is
 * kept as it is (the job's result then says why there is no screenshot).
 */
export const planForScreenshot = (plan: ReadonlyArray<PlanEntry>): ReadonlyArray<PlanEntry> => {
  const first = plan.findIndex((step) => RENDERING_ENGINES.has(step.engine))
  return first <= 0 ? plan : plan.slice(first)
}

/** Relative cost of the engines (cheapest first). */
export const ENGINE_COST: Readonly<Record<EngineName, number>> = { http: 0, alternate: 1, brave: 2, camoufox: 3 }

export interface HistoryEntry {
  engine: EngineName
  ok: boolean
  at: Date | string | number
}

export interface PlanChoice {
  plan: PlanEntry[]
  /** Machine-readable reason code followed by a human explanation. */
  reason: string
  /** Steps of the default plan that were skipped. */
  skipped: EngineName[]
}

/**
 * Picks where to start the default plan for a domain from its recent attempts.
 * Finds the cheapest engine of the plan whose latest attempt within `windowMs` succeeded, then
 * skips the leading steps whose latest attempt within the window failed (steps with no recent
 * record are kept, so an engine is probed again once its failures age out of the window).
 * Pure; `recent` may be in any order.
 */
export const planFromHistory = (
  defaultPlan: readonly PlanEntry[],
  recent: readonly HistoryEntry[],
  opts: { now?: number; windowMs?: number } = {}
): PlanChoice => {
  const now = opts.now ?? Date.now()
  const windowMs = opts.windowMs ?? 24 * 60 * 60 * 1000
  const latest = new Map<EngineName, { ok: boolean; at: number }>()
  for (const r of recent) {
    const at = r.at instanceof Date ? r.at.getTime() : typeof r.at === "number" ? r.at : Date.parse(r.at)
    if (!Number.isFinite(at) || now - at > windowMs || at - now > 60_000) continue
    const prev = latest.get(r.engine)
    if (!prev || at >= prev.at) latest.set(r.engine, { ok: r.ok, at })
  }
  const plan = [...defaultPlan]
  let cheapest = -1
  for (let i = 0; i < plan.length; i++) {
    if (latest.get(plan[i]!.engine)?.ok !== true) continue
    if (cheapest < 0 || ENGINE_COST[plan[i]!.engine] < ENGINE_COST[plan[cheapest]!.engine]) cheapest = i
  }
  if (cheapest < 0) return { plan, reason: "default: no recent success on this domain", skipped: [] }
  let start = 0
  while (start < cheapest && latest.get(plan[start]!.engine)?.ok === false) start++
  const winner = plan[cheapest]!.engine
  // The history is the domain's, from every tenant's jobs: the reason says what it learned, not
  // when another tenant's job crawled there.
  const window = windowMs >= 3_600_000 ? `within ${Math.round(windowMs / 3_600_000)} h` : `within ${Math.max(1, Math.round(windowMs / 60_000))} min`
  if (start === 0) return { plan, reason: `default: ${winner} worked recently (${window})`, skipped: [] }
  const skipped = plan.slice(0, start).map((e) => e.engine)
  return {
    plan: plan.slice(start),
    reason: `learned: start at ${plan[start]!.engine}; ${skipped.join(", ")} failed and ${winner} worked recently (${window})`,
    skipped
  }
}
