import { planRefusalCodes } from "../billing/plan-rules.ts"
import { crawlTerminalStatuses } from "../schema/crawl.ts"
import { ExtractionStatus, terminalExtractionStatuses } from "../schema/extraction.ts"
import { JobStatus, terminalStatuses } from "../schema/job.ts"

/** Error codes by HTTP status. */
export type CodesByStatus = Readonly<Partial<Record<number, ReadonlyArray<string>>>>

/**
 * The codes any operation may answer with, by status, whatever it is: a malformed request (bad
 * parameter, header or body), a path naming nothing, a body too large or not JSON, and the
 * global middleware's statuses. An operation lists those of its statuses only.
 */
const everyOperation: CodesByStatus = {
  400: ["validation_error"],
  404: ["not_found"],
  413: ["payload_too_large"],
  408: ["request_timeout"],
  415: ["unsupported_media_type"],
  431: ["headers_too_large"],
  500: ["internal_error"],
  503: ["dependency_unavailable"]
}

/** What `ApiKeyAuth` answers (security.live.ts): no or a bad credential, no permission, the key's rate limit. */
const apiKeyAuth: CodesByStatus = {
  401: ["unauthorized"],
  403: ["forbidden"],
  429: ["rate_limited"]
}
/** `x-on-behalf-of` naming no active delegation, where acting for someone is allowed at all. */
const onBehalf: CodesByStatus = { 403: ["delegation_required"] }
/** A session cookie on an unsafe method needs the CSRF header. */
const unsafeMethod: CodesByStatus = { 403: ["csrf_failed"] }

/** An `Idempotency-Key` (idempotency.ts): a malformed key, or a key used otherwise or still running. */
const idempotent: CodesByStatus = {
  400: ["invalid_idempotency_key"],
  409: ["idempotency_mismatch", "idempotency_conflict", "idempotency_in_progress"]
}

const list: CodesByStatus = { 400: ["invalid_filter"] }
const sortedList: CodesByStatus = { 400: ["invalid_filter", "invalid_sort_field"] }
const reauthenticated: CodesByStatus = { 403: ["reauthentication_required", "reauthentication_failed"], 429: ["too_many_attempts"] }
const mailedToken: CodesByStatus = { 400: ["invalid_token", "token_expired"] }

/** The 409 codes of a replay or cancel refused in a status (`cannot_replay_queued`, ...). */
const inStatus = (verb: string, statuses: ReadonlyArray<string>): CodesByStatus => ({ 409: statuses.map((s) => `cannot_${verb}_${s}`) })
const notIn = (all: ReadonlyArray<string>, except: ReadonlyArray<string>) => all.filter((s) => !except.includes(s))

/** A new job or extraction: free credit, the daily quota and the running jobs, a safe URL. */
const creation: CodesByStatus = {
  402: ["insufficient_credit"],
  422: ["unsafe_url"],
  429: ["quota_exceeded", "concurrent_limit_exceeded"]
}

/**
 * The codes of each operation beyond what its middleware, plan gate and `Idempotency-Key` give
 * (`operationId` → status → codes): the handler's and its services' own failures. The document
 * lists, per operation and status, exactly these with the derived ones (docs/api.md "The OpenAPI
 * document"); the response replay of every e2e test fails on a code an operation answered that
 * its list lacks (test/support/openapi-conformance.ts).
 */
export const operationCodes: Readonly<Record<string, ReadonlyArray<CodesByStatus>>> = {
  "auth.login": [{ 401: ["unauthorized", "totp_required"], 429: ["too_many_attempts"] }],
  "auth.csrf": [{ 400: ["session_required"] }],
  "auth.refresh": [{ 400: ["session_required"] }],
  "auth.logout": [{ 400: ["session_required"] }],
  "auth.changePassword": [reauthenticated],
  "auth.setupPassword": [{ 409: ["password_already_set"] }],
  "auth.enableTotp": [{ 409: ["totp_already_enabled"] }],
  "auth.verifyTotp": [{ 400: ["invalid_totp_code"], 409: ["totp_already_enabled", "totp_not_started"], 429: ["too_many_attempts"] }],
  "auth.disableTotp": [reauthenticated, { 409: ["totp_not_enabled"] }],
  "auth.regenerateRecoveryCodes": [reauthenticated, { 409: ["totp_not_enabled"] }],
  "auth.resetPassword": [mailedToken],
  "auth.verifyEmail": [mailedToken],
  // rate_limited here is also the mails' own limit (3 per address per 15 minutes).
  "auth.sendEmailVerification": [{ 409: ["email_already_verified"] }],
  "auth.verifyMagicLink": [mailedToken, { 401: ["unauthorized", "totp_required"], 429: ["too_many_attempts"] }],
  "registration.register": [{ 403: ["registration_disabled"], 409: ["email_in_use"], 429: ["quota_exceeded"] }],
  "delegations.create": [reauthenticated, { 409: ["delegation_exists"], 422: ["cannot_delegate_to_self"] }],
  "delegations.granted": [list],
  "delegations.received": [list],
  "delegations.accept": [{ 409: ["invalid_delegation_state"] }],
  "delegations.decline": [{ 409: ["invalid_delegation_state"] }],
  "delegations.renounce": [{ 409: ["invalid_delegation_state"] }],
  "delegations.revoke": [{ 409: ["invalid_delegation_state"] }],
  "iam.createApiKey": [reauthenticated, { 422: ["invalid_role"], 429: ["quota_exceeded"] }],
  "iam.updateApiKey": [reauthenticated, { 429: ["quota_exceeded"] }],
  "roles.create": [{ 409: ["role_name_taken"] }],
  "roles.update": [reauthenticated, { 409: ["role_name_taken", "system_role_immutable"] }],
  "roles.remove": [{ 409: ["role_in_use", "system_role_immutable"] }],
  "quotaRequests.list": [list],
  "quotaRequests.create": [{ 403: ["service_disabled_on_plan"], 409: ["quota_request_pending"], 422: ["requested_limit_not_higher"] }],
  "quotaRequests.withdraw": [{ 409: ["quota_request_not_pending"] }],
  "invitations.create": [reauthenticated, { 409: ["invitation_pending", "already_member"], 422: ["invalid_role"] }],
  "invitations.list": [list],
  "invitations.revoke": [{ 409: ["invalid_invitation_state"] }],
  "invitations.accept": [mailedToken, { 409: ["invalid_invitation_state", "invitation_other_tenant"] }],
  "invitations.decline": [mailedToken, { 409: ["invalid_invitation_state", "invitation_other_tenant"] }],
  "audit.list": [list],
  "jobs.create": [creation],
  // A bulk body with no jobs or over 100 (schema/job.ts); the jobs that do not fit fail one by one in a 207.
  "jobs.bulk": [creation, { 422: ["invalid_bulk_body"] }],
  "jobs.list": [sortedList],
  "jobs.search": [sortedList],
  "jobs.replay": [creation, inStatus("replay", notIn(JobStatus.literals, terminalStatuses))],
  "jobs.cancel": [inStatus("cancel", terminalStatuses)],
  "map.map": [{ 402: ["insufficient_credit"], 422: ["unsafe_url"] }],
  // A crawl's own credit check covers its first page; its webhook endpoint counts against the endpoint limit.
  "crawls.create": [{ 402: ["insufficient_credit"], 422: ["unsafe_url"], 429: ["quota_exceeded"] }],
  "crawls.list": [sortedList],
  "crawls.pages": [list],
  "crawls.cancel": [inStatus("cancel", crawlTerminalStatuses)],
  "page-history.timeline": [list],
  "extractions.create": [creation, { 422: ["invalid_config", "invalid_job"] }],
  "extractions.list": [sortedList],
  "extractions.search": [sortedList],
  "extractions.replay": [creation, { 422: ["invalid_config", "invalid_job"] }, inStatus("replay", notIn(ExtractionStatus.literals, terminalExtractionStatuses))],
  "extractor-configs.create": [{ 422: ["invalid_tenant"], 429: ["quota_exceeded"] }],
  "extractor-configs.list": [sortedList],
  "network.lookup": [{ 402: ["insufficient_credit"] }],
  "network.me": [{ 402: ["insufficient_credit"] }],
  // The ledger's list takes filters but no sort: its order is its chain's.
  "billing.transactions": [list],
  "billing.searchTransactions": [sortedList]
}

/** What the document knows of an operation when it lists its codes. */
export interface OperationFacts {
  readonly operationId: string
  readonly method: string
  /** Runs under `ApiKeyAuth` (a key or a session). */
  readonly apiKey: boolean
  /** May be sent on behalf of a delegator (`x-on-behalf-of`). */
  readonly onBehalf: boolean
  /** The permission its policy requires (`requires(...)`), if any. */
  readonly requires: string | undefined
  /** The tenant's plan may refuse it (all but stops, `requiresToStop`). */
  readonly planGated: boolean
  /** Takes an `Idempotency-Key` header. */
  readonly idempotent: boolean
}

/**
 * The codes an operation may answer with, by status: what every operation may answer, its
 * middleware's, its plan gate's, its `Idempotency-Key`'s, and its own (`operationCodes`).
 */
export const codesOf = (op: OperationFacts): Map<number, ReadonlyArray<string>> => {
  const parts: Array<CodesByStatus> = [everyOperation]
  if (op.apiKey) parts.push(apiKeyAuth)
  if (op.apiKey && op.onBehalf) parts.push(onBehalf)
  if (op.apiKey && !["GET", "HEAD", "OPTIONS"].includes(op.method.toUpperCase())) parts.push(unsafeMethod)
  if (op.requires !== undefined && op.planGated) parts.push({ 403: planRefusalCodes(op.requires) })
  if (op.idempotent) parts.push(idempotent)
  parts.push(...(operationCodes[op.operationId] ?? []))
  const out = new Map<number, Array<string>>()
  for (const part of parts) {
    for (const [status, codes] of Object.entries(part)) {
      const into = out.get(Number(status)) ?? []
      for (const code of codes ?? []) if (!into.includes(code)) into.push(code)
      out.set(Number(status), into)
    }
  }
  return out
}
