-- Up Migration
-- Cancel-After (issue 18): a run not final by cancel_at is canceled by the workers' sweep.
ALTER TABLE runs ADD COLUMN cancel_at timestamptz;
CREATE INDEX runs_deadlines ON runs (cancel_at) WHERE cancel_at IS NOT NULL AND status IN ('queued', 'running');

-- Down Migration
DROP INDEX runs_deadlines;
ALTER TABLE runs DROP COLUMN cancel_at;
