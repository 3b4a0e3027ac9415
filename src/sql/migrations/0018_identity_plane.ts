import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * The identity plane (docs/identity.md): sessions, single-use mailed tokens, TOTP recovery codes,
 * invitations and delegations, and the audit log's "who on behalf of whom, from where".
 * Every secret (session token, mailed token, recovery code) is stored only as a keyed hash.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    ALTER TABLE audit_log
      ADD COLUMN seq bigserial,
      ADD COLUMN on_behalf_of text,
      ADD COLUMN ip text`
  yield* sql`CREATE INDEX audit_log_tenant_seq ON audit_log (tenant_id, seq)`
  yield* sql`
    ALTER TABLE identities
      ADD COLUMN requires_password_setup boolean NOT NULL DEFAULT false,
      ADD COLUMN totp_last_step bigint`
  yield* sql`
    CREATE TABLE sessions (
      id text PRIMARY KEY,
      token_hash text NOT NULL UNIQUE,
      tenant_id text NOT NULL REFERENCES tenants(id),
      identity_id text NOT NULL REFERENCES identities(id),
      ip text,
      user_agent text,
      created_at timestamptz NOT NULL DEFAULT now(),
      last_seen_at timestamptz NOT NULL DEFAULT now(),
      expires_at timestamptz NOT NULL,
      revoked_at timestamptz
    )`
  yield* sql`CREATE INDEX sessions_identity ON sessions (identity_id, created_at)`
  yield* sql`
    CREATE TABLE auth_tokens (
      id text PRIMARY KEY,
      token_hash text NOT NULL UNIQUE,
      purpose text NOT NULL,
      tenant_id text REFERENCES tenants(id),
      identity_id text REFERENCES identities(id),
      email text,
      subject_id text,
      expires_at timestamptz NOT NULL,
      used_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX auth_tokens_subject ON auth_tokens (subject_id) WHERE subject_id IS NOT NULL`
  yield* sql`
    CREATE TABLE recovery_codes (
      id text PRIMARY KEY,
      identity_id text NOT NULL REFERENCES identities(id),
      code_hash text NOT NULL,
      used_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX recovery_codes_identity ON recovery_codes (identity_id)`
  yield* sql`
    CREATE TABLE invitations (
      id text PRIMARY KEY,
      tenant_id text NOT NULL REFERENCES tenants(id),
      organization_id text NOT NULL REFERENCES organizations(id),
      email text NOT NULL,
      role_id text NOT NULL REFERENCES roles(id),
      first_name text,
      last_name text,
      status text NOT NULL DEFAULT 'pending',
      user_id text REFERENCES identities(id),
      invited_by text,
      invited_at timestamptz NOT NULL DEFAULT now(),
      invitation_expires_at timestamptz,
      responded_at timestamptz,
      updated_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX invitations_tenant ON invitations (tenant_id, invited_at)`
  yield* sql`CREATE UNIQUE INDEX invitations_one_pending ON invitations (organization_id, lower(email)) WHERE status = 'pending'`
  yield* sql`
    CREATE TABLE delegations (
      id text PRIMARY KEY,
      tenant_id text NOT NULL REFERENCES tenants(id),
      delegator_id text NOT NULL REFERENCES identities(id),
      delegate_id text REFERENCES identities(id),
      delegate_email text,
      reason text NOT NULL,
      status text NOT NULL DEFAULT 'pending',
      expires_at timestamptz NOT NULL,
      invited_at timestamptz NOT NULL DEFAULT now(),
      responded_at timestamptz,
      revoked_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX delegations_delegator ON delegations (delegator_id, created_at)`
  yield* sql`CREATE INDEX delegations_delegate ON delegations (delegate_id, created_at)`
})
