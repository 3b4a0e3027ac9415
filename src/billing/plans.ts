import plansFile from "../../config/plans.json" with { type: "json" }

export type QuotaKey = keyof (typeof plansFile.plans)["starter"]["quotas"]

export const defaultPlan = plansFile.defaultPlan
export const planNames = Object.keys(plansFile.plans)

/** The limit of a quota on a plan (before per-tenant overrides). */
export const planQuota = (plan: string, key: QuotaKey): number => {
  const p = (plansFile.plans as Record<string, { quotas: Record<string, number> }>)[plan] ?? plansFile.plans.starter
  return p.quotas[key] ?? plansFile.plans.starter.quotas[key]
}

export const quotaKeys = Object.keys(plansFile.plans.starter.quotas) as Array<QuotaKey>
