import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/** Tenants, identities, roles, API keys, credits and the mail outbox. */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE tenants (
      id text PRIMARY KEY,
      name text NOT NULL,
      is_internal boolean NOT NULL DEFAULT false,
      plan text NOT NULL,
      add_ons jsonb NOT NULL DEFAULT '[]',
      status text NOT NULL DEFAULT 'active',
      balance numeric(18,4) NOT NULL DEFAULT 0 CHECK (balance >= 0),
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE UNIQUE INDEX tenants_one_internal ON tenants (is_internal) WHERE is_internal`
  yield* sql`
    CREATE TABLE roles (
      id text PRIMARY KEY,
      tenant_id text NOT NULL REFERENCES tenants(id),
      name text NOT NULL,
      description text,
      permissions jsonb NOT NULL,
      is_system boolean NOT NULL DEFAULT false,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      UNIQUE (tenant_id, name)
    )`
  yield* sql`
    CREATE TABLE identities (
      id text PRIMARY KEY,
      tenant_id text NOT NULL REFERENCES tenants(id),
      type text NOT NULL,
      display_name text NOT NULL,
      first_name text,
      last_name text,
      avatar_url text,
      status text NOT NULL DEFAULT 'active',
      password_hash text,
      password_changed_at timestamptz,
      totp_secret_enc text,
      totp_enabled_at timestamptz,
      default_role_id text REFERENCES roles(id),
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX identities_tenant ON identities (tenant_id)`
  yield* sql`
    CREATE TABLE identity_emails (
      id text PRIMARY KEY,
      identity_id text NOT NULL REFERENCES identities(id),
      tenant_id text NOT NULL REFERENCES tenants(id),
      email text NOT NULL,
      is_primary boolean NOT NULL DEFAULT false,
      verified_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE UNIQUE INDEX identity_emails_email ON identity_emails (lower(email))`
  yield* sql`
    CREATE TABLE organizations (
      id text PRIMARY KEY,
      tenant_id text NOT NULL REFERENCES tenants(id),
      identity_id text NOT NULL REFERENCES identities(id),
      name text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`
    CREATE TABLE identity_accesses (
      id text PRIMARY KEY,
      tenant_id text NOT NULL REFERENCES tenants(id),
      organization_id text NOT NULL REFERENCES organizations(id),
      identity_id text NOT NULL REFERENCES identities(id),
      role_id text NOT NULL REFERENCES roles(id),
      status text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      UNIQUE (organization_id, identity_id)
    )`
  yield* sql`
    CREATE TABLE api_keys (
      id text PRIMARY KEY,
      tenant_id text NOT NULL REFERENCES tenants(id),
      identity_id text NOT NULL REFERENCES identities(id),
      role_id text NOT NULL REFERENCES roles(id),
      name text NOT NULL,
      description text,
      key_prefix text NOT NULL,
      key_hash text NOT NULL UNIQUE,
      rate_limit_per_minute integer NOT NULL CHECK (rate_limit_per_minute BETWEEN 1 AND 5000),
      last_used_at timestamptz,
      expires_at timestamptz,
      revoked_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX api_keys_identity ON api_keys (identity_id)`
  yield* sql`
    CREATE TABLE credit_transactions (
      id text PRIMARY KEY,
      seq bigserial NOT NULL,
      tenant_id text NOT NULL REFERENCES tenants(id),
      type text NOT NULL,
      amount numeric(18,4) NOT NULL,
      balance_after numeric(18,4) NOT NULL CHECK (balance_after >= 0),
      service_key text,
      resource_id text,
      resource_type text,
      note text,
      created_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX credit_transactions_tenant ON credit_transactions (tenant_id, seq)`
  yield* sql`
    CREATE TABLE quota_overrides (
      tenant_id text NOT NULL REFERENCES tenants(id),
      quota_key text NOT NULL,
      quota_limit integer NOT NULL CHECK (quota_limit >= 0),
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (tenant_id, quota_key)
    )`
  yield* sql`
    CREATE TABLE mail_outbox (
      id text PRIMARY KEY,
      to_email text NOT NULL,
      subject text NOT NULL,
      body text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX mail_outbox_to ON mail_outbox (lower(to_email), id)`
  yield* sql`
    CREATE TABLE audit_log (
      id text PRIMARY KEY,
      tenant_id text,
      actor_id text,
      action text NOT NULL,
      target_id text,
      data jsonb NOT NULL DEFAULT '{}',
      created_at timestamptz NOT NULL DEFAULT now()
    )`
})
