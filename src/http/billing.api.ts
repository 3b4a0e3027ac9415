import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { Page, PageQuery, Success } from "../schema/envelope.ts"
import { errors, InvalidRequest, Unavailable } from "../schema/errors.ts"
import { Balance, LedgerServiceKey, PriceList, SearchTransactionsBody, Transaction, TransactionType } from "../schema/tenant.ts"
import { ANY_KEY, ApiKeyAuth, requires } from "./security.ts"
import { Operations } from "./openapi.ts"

export class BillingGroup extends HttpApiGroup.make("billing")
  .add(
    HttpApiEndpoint.get("balance", "/me/balance", {
      success: Success(Balance),
      error: errors(Unavailable)
    }).pipe(requires("billing:transactions:read")),
    HttpApiEndpoint.get("transactions", "/me/transactions", {
      query: {
        ...PageQuery,
        type: Schema.optional(TransactionType),
        serviceKey: Schema.optional(LedgerServiceKey)
      },
      success: Success(Page(Transaction)),
      error: errors(InvalidRequest)
    }).pipe(requires("billing:transactions:read")),
    HttpApiEndpoint.post("searchTransactions", "/me/transactions/search", {
      payload: SearchTransactionsBody,
      success: Success(Page(Transaction)),
      error: errors(InvalidRequest)
    }).pipe(requires("billing:transactions:read")),
    HttpApiEndpoint.get("pricing", "/pricing", {
      success: Success(PriceList)
    }).pipe(requires(ANY_KEY))
  )
  .middleware(ApiKeyAuth)
  .prefix("/v1/billing")
  .annotate(OpenApi.Description, "Credit balance, transactions and prices.")
  .annotate(Operations, {
    balance: ["My balance", "The tenant's credit balance, reserved and free."],
    transactions: ["List transactions", "Credit movements, newest first; filter by type or service."],
    searchTransactions: ["Search transactions", "Credit movements matching a filter body, sorted and paged."],
    pricing: ["Prices", "The price list: plans, add-ons and per-service prices."]
  })
{}
