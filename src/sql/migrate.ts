import { Effect, Layer } from "effect"
import { Migrator, SqlClient } from "effect/sql"
import accounts from "./migrations/0001_accounts.ts"
import clusterProbe from "./migrations/0002_cluster_probe.ts"
import jobs from "./migrations/0003_jobs.ts"
import webhooks from "./migrations/0004_webhooks.ts"
import extractions from "./migrations/0005_extractions.ts"
import storedBytes from "./migrations/0006_stored_bytes.ts"
import pageEncoding from "./migrations/0007_page_encoding.ts"
import idempotencyText from "./migrations/0008_idempotency_text.ts"
import webhookEndpoints from "./migrations/0009_webhook_endpoints.ts"
import deliveryEventSeq from "./migrations/0010_delivery_event_seq.ts"
import idempotencySeed from "./migrations/0011_idempotency_seed.ts"
import pageVersionChangedDerived from "./migrations/0012_page_version_changed_derived.ts"
import extractionOwnJob from "./migrations/0013_extraction_own_job.ts"
import jobCharges from "./migrations/0014_job_charges.ts"
import extractionCharges from "./migrations/0015_extraction_charges.ts"
import domainLeases from "./migrations/0016_domain_leases.ts"
import pageKeysKeepQueryBytes from "./migrations/0017_page_keys_keep_query_bytes.ts"
import identityPlane from "./migrations/0018_identity_plane.ts"
import roleDeletion from "./migrations/0019_role_deletion.ts"
import quotaRequests from "./migrations/0022_quota_requests.ts"
import subscriptions from "./migrations/0023_subscriptions.ts"
import siteCrawls from "./migrations/0024_site_crawls.ts"
import subscriptionPeriodPaid from "./migrations/0025_subscription_period_paid.ts"
import quotaOverrideRaise from "./migrations/0026_quota_override_raise.ts"
import peopleNamedFromTheStart from "./migrations/0027_people_named_from_the_start.ts"
import configPayloadKeepsOrder from "./migrations/0028_config_payload_keeps_order.ts"
import webhookEndpointsInUse from "./migrations/0029_webhook_endpoints_in_use.ts"
import crawlFetchUrl from "./migrations/0030_crawl_fetch_url.ts"
import idempotencyClaimNode from "./migrations/0031_idempotency_claim_node.ts"
import roleNamesAnyCase from "./migrations/0032_role_names_any_case.ts"

/** Versioned migrations, applied at start. */
export const migrations = {
  "0001_accounts": accounts,
  "0002_cluster_probe": clusterProbe,
  "0003_jobs": jobs,
  "0004_webhooks": webhooks,
  "0005_extractions": extractions,
  "0006_stored_bytes": storedBytes,
  "0007_page_encoding": pageEncoding,
  "0008_idempotency_text": idempotencyText,
  "0009_webhook_endpoints": webhookEndpoints,
  "0010_delivery_event_seq": deliveryEventSeq,
  "0011_idempotency_seed": idempotencySeed,
  "0012_page_version_changed_derived": pageVersionChangedDerived,
  "0013_extraction_own_job": extractionOwnJob,
  "0014_job_charges": jobCharges,
  "0015_extraction_charges": extractionCharges,
  "0016_domain_leases": domainLeases,
  "0017_page_keys_keep_query_bytes": pageKeysKeepQueryBytes,
  "0018_identity_plane": identityPlane,
  "0019_role_deletion": roleDeletion,
  "0022_quota_requests": quotaRequests,
  "0023_subscriptions": subscriptions,
  "0024_site_crawls": siteCrawls,
  "0025_subscription_period_paid": subscriptionPeriodPaid,
  "0026_quota_override_raise": quotaOverrideRaise,
  "0027_people_named_from_the_start": peopleNamedFromTheStart,
  "0028_config_payload_keeps_order": configPayloadKeepsOrder,
  "0029_webhook_endpoints_in_use": webhookEndpointsInUse,
  "0030_crawl_fetch_url": crawlFetchUrl,
  "0031_idempotency_claim_node": idempotencyClaimNode,
  "0032_role_names_any_case": roleNamesAnyCase
}

const migrate = Migrator.make({})({ loader: Migrator.fromRecord(migrations) })

/** Serialized across nodes by a transaction-scoped advisory lock, so racing starts apply each migration once. */
export const runMigrations = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  return yield* sql.withTransaction(sql`SELECT pg_advisory_xact_lock(7270501)`.pipe(Effect.andThen(migrate)))
})

export const MigrationsLive = Layer.effectDiscard(Effect.orDie(runMigrations))
