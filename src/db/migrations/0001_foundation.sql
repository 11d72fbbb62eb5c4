-- Up Migration
CREATE TABLE teams (
  id uuid PRIMARY KEY,
  name text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  plan text NOT NULL CHECK (plan IN ('free', 'plus', 'pro', 'team')),
  -- Kept beside the ledger and changed only in the same transaction as a ledger row.
  sparks_available bigint NOT NULL DEFAULT 0 CHECK (sparks_available >= 0),
  runs_per_hour integer NOT NULL DEFAULT 1000 CHECK (runs_per_hour > 0),
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE members (
  id uuid PRIMARY KEY,
  team_id uuid NOT NULL REFERENCES teams(id),
  email text NOT NULL,
  role text NOT NULL CHECK (role IN ('owner', 'admin', 'member')),
  created_at timestamptz NOT NULL DEFAULT now(),
  -- Removal is a tombstone: the member's keys die for good, and a re-added email is a new member.
  removed_at timestamptz
);
CREATE UNIQUE INDEX members_active_email ON members (team_id, lower(email)) WHERE removed_at IS NULL;

CREATE TABLE api_keys (
  id uuid PRIMARY KEY,
  team_id uuid NOT NULL REFERENCES teams(id),
  member_id uuid NOT NULL REFERENCES members(id),
  name text NOT NULL,
  prefix text NOT NULL CHECK (length(prefix) = 8),
  key_hash bytea NOT NULL UNIQUE,
  scopes text[] NOT NULL,
  rate_limit_per_minute integer NOT NULL CHECK (rate_limit_per_minute IN (30, 60, 120, 300)),
  created_at timestamptz NOT NULL DEFAULT now(),
  revoked_at timestamptz
);
CREATE INDEX api_keys_team ON api_keys (team_id) WHERE revoked_at IS NULL;

-- One token bucket per key, shared by every API process. Written through a connection with
-- synchronous_commit off: a crash may give back the last moment's tokens, never more.
CREATE TABLE rate_buckets (
  key_id uuid PRIMARY KEY REFERENCES api_keys(id) ON DELETE CASCADE,
  capacity double precision NOT NULL,
  tokens double precision NOT NULL,
  refilled_at timestamptz NOT NULL,
  -- Tokens the last statement took (0: the bucket was empty).
  last_take integer NOT NULL DEFAULT 0
);

CREATE TABLE ledger_entries (
  id bigserial PRIMARY KEY,
  team_id uuid NOT NULL REFERENCES teams(id),
  kind text NOT NULL CHECK (kind IN ('grant', 'hold', 'charge', 'release')),
  amount bigint NOT NULL,
  run_id uuid,
  note text,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX ledger_entries_team ON ledger_entries (team_id, id);

-- Down Migration
DROP TABLE ledger_entries;
DROP TABLE rate_buckets;
DROP TABLE api_keys;
DROP TABLE members;
DROP TABLE teams;
