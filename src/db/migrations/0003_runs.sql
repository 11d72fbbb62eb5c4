-- Up Migration
-- Identity elements (voices, faces) whose use needs the person's active consent.
CREATE TABLE elements (
  id uuid PRIMARY KEY,
  team_id uuid NOT NULL REFERENCES teams(id),
  kind text NOT NULL CHECK (kind IN ('voice', 'face')),
  name text NOT NULL,
  consent_active boolean NOT NULL DEFAULT false,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX elements_team ON elements (team_id);

CREATE TABLE runs (
  id uuid PRIMARY KEY,
  team_id uuid NOT NULL REFERENCES teams(id),
  api_key_id uuid NOT NULL REFERENCES api_keys(id),
  member_id uuid NOT NULL REFERENCES members(id),
  tool_id text NOT NULL,
  product_id text NOT NULL,
  -- Inputs as validated: defaults applied, media slots as lists of file ids.
  inputs jsonb NOT NULL,
  status text NOT NULL CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'canceled')),
  progress double precision NOT NULL DEFAULT 0 CHECK (progress BETWEEN 0 AND 1),
  -- The estimate's price (charged on success) and the hold taken at start.
  price_sparks bigint NOT NULL CHECK (price_sparks >= 0),
  hold_sparks bigint NOT NULL CHECK (hold_sparks >= price_sparks),
  -- The hold while in flight; the amount charged once final.
  cost_sparks bigint NOT NULL CHECK (cost_sparks >= 0),
  error text,
  attempts integer NOT NULL DEFAULT 0,
  max_attempts integer NOT NULL DEFAULT 3,
  lease_owner text,
  lease_expires_at timestamptz,
  idempotency_key text,
  request_hash text,
  created_at timestamptz NOT NULL DEFAULT now(),
  started_at timestamptz,
  finished_at timestamptz
);
CREATE UNIQUE INDEX runs_idempotency ON runs (team_id, idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX runs_team_created ON runs (team_id, created_at);
CREATE INDEX runs_queued ON runs (created_at) WHERE status = 'queued';
CREATE INDEX runs_leases ON runs (lease_expires_at) WHERE status = 'running';

CREATE TABLE run_outputs (
  id uuid PRIMARY KEY,
  run_id uuid NOT NULL REFERENCES runs(id),
  position integer NOT NULL,
  storage_key text NOT NULL,
  file_name text NOT NULL,
  mime_type text,
  width integer,
  height integer,
  duration_seconds double precision,
  size_bytes bigint NOT NULL,
  sha256 text NOT NULL,
  -- checking: stored, its stored bytes not yet verified; ready: downloadable; failed: the check
  -- failed; expired: deleted after the retention period.
  status text NOT NULL CHECK (status IN ('checking', 'ready', 'failed', 'expired')),
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL,
  UNIQUE (run_id, position)
);
CREATE INDEX run_outputs_checking ON run_outputs (created_at) WHERE status = 'checking';
CREATE INDEX run_outputs_retention ON run_outputs (expires_at) WHERE status IN ('checking', 'ready', 'failed');

-- The outbox: one row per final transition, written in the transition's transaction.
CREATE TABLE run_events (
  id uuid PRIMARY KEY,
  run_id uuid NOT NULL REFERENCES runs(id),
  team_id uuid NOT NULL REFERENCES teams(id),
  type text NOT NULL CHECK (type IN ('run.succeeded', 'run.failed', 'run.canceled')),
  -- The run exactly as GET /v1/runs/{id} showed it at that moment.
  payload jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (run_id)
);
CREATE INDEX run_events_created ON run_events (created_at);

ALTER TABLE ledger_entries ADD CONSTRAINT ledger_entries_run FOREIGN KEY (run_id) REFERENCES runs(id);
CREATE UNIQUE INDEX ledger_entries_once ON ledger_entries (run_id, kind) WHERE run_id IS NOT NULL;

-- Down Migration
DROP INDEX ledger_entries_once;
ALTER TABLE ledger_entries DROP CONSTRAINT ledger_entries_run;
DROP TABLE run_events;
DROP TABLE run_outputs;
DROP TABLE runs;
DROP TABLE elements;
