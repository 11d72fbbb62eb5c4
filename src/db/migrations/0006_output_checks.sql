-- Up Migration
-- An output whose stored copy cannot be read (storage away, object missing) is checked again
-- later, with a growing delay, instead of being picked first by every sweep forever; after the
-- last attempt it fails for good. check_attempts counts the attempts that did not pass;
-- last_checked_at and check_problem say when the last attempt was made and why it did not pass.
ALTER TABLE run_outputs
  ADD COLUMN check_attempts integer NOT NULL DEFAULT 0 CHECK (check_attempts >= 0),
  ADD COLUMN next_check_at timestamptz NOT NULL DEFAULT now(),
  ADD COLUMN last_checked_at timestamptz,
  ADD COLUMN check_problem text;
DROP INDEX run_outputs_checking;
CREATE INDEX run_outputs_checking ON run_outputs (next_check_at) WHERE status = 'checking';

-- A succeeded run whose output failed its check for good gets its charge back: one 'refund' row
-- per run (the unique index on (run_id, kind) keeps it to one), its note saying why.
ALTER TABLE ledger_entries DROP CONSTRAINT ledger_entries_kind_check;
ALTER TABLE ledger_entries ADD CONSTRAINT ledger_entries_kind_check
  CHECK (kind IN ('grant', 'hold', 'charge', 'release', 'refund'));

-- Down Migration
ALTER TABLE ledger_entries DROP CONSTRAINT ledger_entries_kind_check;
ALTER TABLE ledger_entries ADD CONSTRAINT ledger_entries_kind_check CHECK (kind IN ('grant', 'hold', 'charge', 'release'));
DROP INDEX run_outputs_checking;
CREATE INDEX run_outputs_checking ON run_outputs (created_at) WHERE status = 'checking';
ALTER TABLE run_outputs DROP COLUMN check_problem, DROP COLUMN last_checked_at, DROP COLUMN next_check_at, DROP COLUMN check_attempts;
