import plansFile from "../../config/plans.json" with { type: "json" }

/** The services a plan can include or leave out (config/plans.json names them). */
export const planServices = ["scraper", "page-history", "extractor", "network"] as const
export type PlanService = (typeof planServices)[number]

/**
 * Whether a permission is for paid work, refused while the subscription is not active: creating
 * jobs and extractions (and changing what they use: configs, replays; a cancel is a stop, which the
 * gate never refuses: security.ts, StopsWork) and every IP lookup
 * (each one is billed). Reading what the tenant already has stays open, so a tenant behind on its
 * payments can still see and fetch its results.
 */
export const isPaid = (service: string, action: string) =>
  service === "network" || ((service === "scraper" || service === "extractor" || service === "page-history") && action === "write")

/**
 * The 403 codes the plan gate may answer a request needing `required` with: the same rules as the
 * gate (billing/plan-gate.ts), read by the OpenAPI document to list each operation's codes.
 * `service_disabled_on_plan` only for a service some plan of config/plans.json leaves out.
 */
export const planRefusalCodes = (required: string): ReadonlyArray<string> => {
  const [service = "", , action = ""] = required.split(":")
  if (!(planServices as ReadonlyArray<string>).includes(service)) return []
  const plans: ReadonlyArray<{ readonly services: ReadonlyArray<string> }> = Object.values(plansFile.plans)
  return [
    ...(plans.some((plan) => !plan.services.includes(service)) ? ["service_disabled_on_plan"] : []),
    ...(isPaid(service, action) ? ["no_active_plan"] : [])
  ]
}
