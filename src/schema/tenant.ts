import { Schema } from "effect"
import { NewPassword } from "./auth.ts"
import { Amount, CreatedRange, DateTime, Email, NonNegativeAmount, Name, Text, WrittenWithin } from "./common.ts"
import { SearchPagination, SortTerms } from "./envelope.ts"
import { AddOnOffer, PlanOffer } from "./subscription.ts"

/** The most a balance may hold: a billion euros, far past any prepaid balance and well within its column. */
export const MAX_BALANCE = 1_000_000_000

/** A new tenant's first credits: zero or more, and no more than a balance may hold. */
const InitialCredits = NonNegativeAmount.check(
  Schema.makeFilter((s: string) => Number(s) <= MAX_BALANCE, {
    expected: `at most ${MAX_BALANCE} (the most a balance may hold)`,
    toJsonSchema: () => ({ description: `A decimal amount of EUR from 0 to ${MAX_BALANCE}, the most a balance may hold.` })
  })
)

export const CreateTenantBody = Schema.Struct({
  name: Name(1, 200),
  ownerEmail: Email,
  ownerPassword: Schema.optionalKey(NewPassword),
  plan: Schema.optional(Text(1, 60)),
  credits: Schema.optional(InitialCredits)
})

export const CreatedTenant = Schema.Struct({
  tenantId: Schema.String,
  organizationId: Schema.String,
  ownerIdentityId: Schema.String,
  roleId: Schema.String,
  apiKeyId: Schema.String,
  apiKey: Schema.String
})

export const CreateInternalAdminBody = Schema.Struct({
  email: Email,
  password: Schema.optionalKey(NewPassword)
})

export const CreatedInternalAdmin = Schema.Struct({
  identityId: Schema.String,
  apiKeyId: Schema.String,
  apiKey: Schema.String
})

export const Tenant = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  plan: Schema.String,
  status: Schema.String,
  balance: Schema.String,
  isInternal: Schema.Boolean,
  createdAt: DateTime
}).annotate({ identifier: "Tenant" })
export type Tenant = typeof Tenant.Type

export const Balance = Schema.Struct({
  tenantId: Schema.String,
  balance: Schema.String,
  currency: Schema.Literal("EUR")
})

export const PriceItem = Schema.Struct({
  serviceKey: Schema.String,
  item: Schema.String,
  unit: Schema.String,
  price: Schema.String,
  description: Schema.String
}).annotate({ identifier: "PriceItem" })

export const PriceList = Schema.Struct({
  currency: Schema.Literal("EUR"),
  items: Schema.Array(PriceItem),
  /** The public plans (monthly prices) and the add-ons they may take, beside the per-call prices. */
  plans: Schema.Array(PlanOffer),
  addOns: Schema.Array(AddOnOffer)
}).annotate({ identifier: "PriceList" })

export const CreditAdjustmentBody = Schema.Struct({
  amount: Amount.check(Schema.makeFilter((s) => Number(s) !== 0, { expected: "a non-zero amount" })),
  note: Text(1, 500)
})

export const Transaction = Schema.Struct({
  id: Schema.String,
  type: WrittenWithin(Schema.String, { enum: ["topup", "correction", "debit", "credit"] }),
  amount: Schema.String,
  balanceAfter: Schema.String,
  serviceKey: Schema.NullOr(Schema.String),
  resourceId: Schema.NullOr(Schema.String),
  resourceType: Schema.NullOr(Schema.String),
  note: Schema.NullOr(Schema.String),
  createdAt: DateTime
}).annotate({ identifier: "Transaction" })
export type Transaction = typeof Transaction.Type

export const TransactionType = Schema.Literals(["topup", "correction", "debit", "credit"])
/**
 * The services ledger entries name (the price list's and the subscription's; src/billing keeps
 * them in step): a filter that names another has no entries, a misspelling, so it is refused.
 */
export const LEDGER_SERVICE_KEYS = ["scraper.jobs", "scraper.map", "extractor.extractions", "network.ip", "billing.subscription"] as const
export const LedgerServiceKey = Schema.Literals(LEDGER_SERVICE_KEYS)
export const transactionSortFields = ["createdAt", "amount"] as const

/** What ledger entries a list or search asks for (all optional, combined with AND). */
export const TransactionFilter = Schema.Struct({
  type: Schema.optional(Schema.Array(TransactionType).check(Schema.isBetweenLength(1, 4))),
  serviceKey: Schema.optional(LedgerServiceKey),
  resourceType: Schema.optional(Text(1, 50)),
  resourceId: Schema.optional(Text(1, 100)),
  createdAt: Schema.optional(CreatedRange),
  amount: Schema.optional(Schema.Struct({ gte: Schema.optional(Amount), lte: Schema.optional(Amount) }))
})
export type TransactionFilter = typeof TransactionFilter.Type

export const SearchTransactionsBody = Schema.Struct({
  where: Schema.optional(TransactionFilter),
  sort: Schema.optional(SortTerms(transactionSortFields)),
  pagination: Schema.optional(SearchPagination)
})

export const ClusterState = Schema.Struct({
  runners: Schema.Array(Schema.Struct({ address: Schema.String, healthy: Schema.Boolean, lastHeartbeat: Schema.NullOr(DateTime) })),
  shards: Schema.Array(Schema.Struct({ group: Schema.String, runner: Schema.NullOr(Schema.String), count: Schema.Int })),
  entities: Schema.Record(Schema.String, Schema.Int),
  mode: Schema.Literals(["single", "cluster"])
})

/** What a cluster probe reports (`POST /internal/v1/cluster/probe`, the ClusterProbe entity). */
export const ProbeResult = Schema.Struct({
  probeId: Schema.String,
  entityId: Schema.String,
  runner: Schema.String,
  startedAt: Schema.String,
  finishedAt: Schema.String
})

export const OutboxMail = Schema.Struct({
  id: Schema.String,
  to: Schema.String,
  subject: Schema.String,
  body: Schema.String,
  createdAt: DateTime
})
