import plansFile from "../../config/plans.json" with { type: "json" }
import { type PlanService, planServices } from "./plan-rules.ts"
import { fromUnits, toUnits } from "./pricing.ts"

/**
 * The plan catalogue (config/plans.json, docs/api.md "Plans and subscriptions"): each plan's
 * monthly price, the services it includes, its quota values and the add-ons it may take; each
 * add-on's monthly price per unit and the quota one unit raises.
 */
export type QuotaKey = keyof (typeof plansFile.plans)["starter"]["quotas"]

/** The services a plan can include: the first part of an endpoint's permission (plan-rules.ts). */
export { type PlanService, planServices }

export interface Plan {
  readonly name: string
  readonly public: boolean
  readonly monthlyPrice: string
  readonly description: string
  readonly services: ReadonlyArray<string>
  readonly quotas: Readonly<Record<QuotaKey, number>>
  readonly addOns: ReadonlyArray<string>
}

export interface AddOn {
  readonly key: string
  readonly monthlyPrice: string
  readonly description: string
  readonly quota: QuotaKey
  readonly perUnit: number
  readonly maxQuantity: number
}

export interface AddOnQuantity {
  readonly key: string
  readonly quantity: number
}

const plans: ReadonlyMap<string, Plan> = new Map(
  Object.entries(plansFile.plans).map(([name, p]) => [name, { name, ...p } as Plan])
)
const addOns: ReadonlyMap<string, AddOn> = new Map(
  Object.entries(plansFile.addOns).map(([key, a]) => [key, { key, ...a } as AddOn])
)

export const defaultPlan = plansFile.defaultPlan
export const INTERNAL_PLAN = "internal"
export const planNames = [...plans.keys()]
/** The plans a tenant may be given (all but `internal`). */
export const publicPlanNames = planNames.filter((name) => plans.get(name)!.public)
export const addOnKeys = [...addOns.keys()]
export const quotaKeys = Object.keys(plansFile.plans.starter.quotas) as Array<QuotaKey>

export const findPlan = (name: string): Plan | undefined => plans.get(name)
export const findAddOn = (key: string): AddOn | undefined => addOns.get(key)

/** A plan no longer in the catalogue reads as the default one, never as no limits at all. */
const planOrDefault = (name: string): Plan => plans.get(name) ?? plans.get(defaultPlan)!

/** The limit of a quota on a plan with its add-ons (before per-tenant overrides). */
export const planQuota = (plan: string, key: QuotaKey, withAddOns: ReadonlyArray<AddOnQuantity> = []): number => {
  let limit = planOrDefault(plan).quotas[key]
  for (const a of withAddOns) {
    const addOn = addOns.get(a.key)
    if (addOn?.quota === key) limit += addOn.perUnit * a.quantity
  }
  return limit
}

export const planIncludes = (plan: string, service: string): boolean => planOrDefault(plan).services.includes(service)

/** What a month of `plan` with `withAddOns` costs, in units of 1/10000 EUR. */
export const monthlyUnits = (plan: string, withAddOns: ReadonlyArray<AddOnQuantity>): number =>
  toUnits(planOrDefault(plan).monthlyPrice) +
  withAddOns.reduce((sum, a) => sum + toUnits(addOns.get(a.key)?.monthlyPrice ?? 0) * a.quantity, 0)

/**
 * What is wrong with a subscription of `plan` with `withAddOns` (one detail per fault, at its
 * path): an unknown or internal plan, an unknown add-on, one the plan does not take, one named
 * twice, a quantity out of bounds.
 */
export const subscriptionFaults = (plan: string, withAddOns: ReadonlyArray<AddOnQuantity>) => {
  const faults: Array<{ path: string; code: string; message: string }> = []
  const p = plans.get(plan)
  if (!p || !p.public) faults.push({ path: "plan", code: "invalid_value", message: `unknown plan "${plan}"; plans are ${publicPlanNames.join(", ")}` })
  const seen = new Set<string>()
  withAddOns.forEach((a, i) => {
    const addOn = addOns.get(a.key)
    if (!addOn) {
      faults.push({ path: `addOns.${i}.key`, code: "invalid_value", message: `unknown add-on "${a.key}"; add-ons are ${addOnKeys.join(", ")}` })
      return
    }
    if (seen.has(a.key)) faults.push({ path: `addOns.${i}.key`, code: "invalid_value", message: `add-on "${a.key}" is named twice` })
    seen.add(a.key)
    if (p && !p.addOns.includes(a.key)) {
      faults.push({ path: `addOns.${i}.key`, code: "invalid_value", message: `plan "${plan}" does not take add-on "${a.key}"${p.addOns.length > 0 ? `; it takes ${p.addOns.join(", ")}` : ""}` })
    }
    if (a.quantity < 1 || a.quantity > addOn.maxQuantity) {
      faults.push({ path: `addOns.${i}.quantity`, code: "invalid_value", message: `quantity of "${a.key}" must be from 1 to ${addOn.maxQuantity}` })
    }
  })
  return faults
}

/** The public plans and the add-ons, as `GET /v1/billing/pricing` shows them. */
export const planCatalogue = () => ({
  plans: publicPlanNames.map((name) => {
    const p = plans.get(name)!
    return {
      name,
      monthlyPrice: fromUnits(toUnits(p.monthlyPrice)),
      description: p.description,
      services: [...p.services],
      quotas: { ...p.quotas },
      addOns: [...p.addOns]
    }
  }),
  addOns: addOnKeys.map((key) => {
    const a = addOns.get(key)!
    return {
      key,
      monthlyPrice: fromUnits(toUnits(a.monthlyPrice)),
      description: a.description,
      quota: a.quota as string,
      perUnit: a.perUnit,
      maxQuantity: a.maxQuantity
    }
  })
})
