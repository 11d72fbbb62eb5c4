-- Up Migration
-- The team console (issue 14). Members sign in with a password set through a one-time invite link;
-- sessions, invites and passwords keep only hashes of their secrets.

-- One password per member (a member row is one person in one team). The hash text records its
-- algorithm and parameters (scrypt:N:r:p:salt:hash), so parameters can change without a migration.
CREATE TABLE member_passwords (
  member_id uuid PRIMARY KEY REFERENCES members(id),
  hash text NOT NULL,
  set_at timestamptz NOT NULL DEFAULT now()
);

-- Sign-in looks an email up across teams.
CREATE INDEX members_active_email_any_team ON members (lower(email)) WHERE removed_at IS NULL;

-- A link that sets a member's password. Only the SHA-256 of its token is kept; a newer invite for
-- the member deletes the older ones, and accepting marks it used.
CREATE TABLE member_invites (
  token_hash bytea PRIMARY KEY,
  member_id uuid NOT NULL REFERENCES members(id),
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL,
  used_at timestamptz
);
CREATE INDEX member_invites_member ON member_invites (member_id);

-- Console sessions: any API process serves any session. Only the SHA-256 of the cookie's token is
-- kept. A session ends at expires_at (absolute) or after the idle lifetime past last_seen_at.
CREATE TABLE console_sessions (
  token_hash bytea PRIMARY KEY,
  member_id uuid NOT NULL REFERENCES members(id),
  created_at timestamptz NOT NULL DEFAULT now(),
  last_seen_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL
);
CREATE INDEX console_sessions_member ON console_sessions (member_id);
CREATE INDEX console_sessions_expires ON console_sessions (expires_at);

-- Sign-in attempts per account (lower-cased email) and per client address, in fixed windows,
-- shared by every API process. A successful sign-in takes its attempt back.
CREATE TABLE console_signin_attempts (
  bucket text PRIMARY KEY,
  attempts integer NOT NULL,
  window_started_at timestamptz NOT NULL
);
CREATE INDEX console_signin_attempts_window ON console_signin_attempts (window_started_at);

-- When a key last authenticated a request: written at most once a minute per key, off the
-- request path (see src/auth/key-usage.ts).
ALTER TABLE api_keys ADD COLUMN last_used_at timestamptz;

-- The console's delivery log: an endpoint's deliveries newest first, each with its attempts.
CREATE INDEX webhook_deliveries_endpoint_created ON webhook_deliveries (endpoint_id, created_at DESC);
CREATE INDEX webhook_attempts_delivery ON webhook_attempts (delivery_id);

-- Down Migration
DROP INDEX webhook_attempts_delivery;
DROP INDEX webhook_deliveries_endpoint_created;
ALTER TABLE api_keys DROP COLUMN last_used_at;
DROP TABLE console_signin_attempts;
DROP TABLE console_sessions;
DROP TABLE member_invites;
DROP TABLE member_passwords;
DROP INDEX members_active_email_any_team;
