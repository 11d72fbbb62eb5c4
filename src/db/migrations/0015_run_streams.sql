-- Up Migration
-- Streams (issue 18): GET /v1/runs/{id}/events and GET /v1/events are woken by notifications,
-- never by polling. Final runs already notify toolrun_run_events (src/runs/transitions.ts); the
-- rest is told here, by triggers, so that no code path that moves a run (the worker's claim, a
-- lease taken back, the executor's progress updates) can forget it.
--
-- event_seq numbers a run's visible changes (status or progress): 1 when queued, one more for
-- each change. It is the `id:` of the run stream's events, so Last-Event-ID resumes after what a
-- client saw, across processes and retries of the run.
ALTER TABLE runs ADD COLUMN event_seq integer NOT NULL DEFAULT 1;

CREATE FUNCTION runs_stream_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.event_seq := OLD.event_seq + 1;
  -- Final statuses notify toolrun_run_events from their own transaction already.
  IF NEW.status IN ('queued', 'running') THEN
    PERFORM pg_notify('toolrun_run_changes', NEW.id::text);
  END IF;
  RETURN NEW;
END $$;
-- Lease renewals write neither column, so they fire nothing.
CREATE TRIGGER runs_stream_change BEFORE UPDATE OF status, progress ON runs
  FOR EACH ROW WHEN (NEW.status IS DISTINCT FROM OLD.status OR NEW.progress IS DISTINCT FROM OLD.progress)
  EXECUTE FUNCTION runs_stream_change();

-- A final run's event, for the team's event stream: the payload is the team only (streams read
-- what is new themselves). App runs' events are not on /v1, so they wake nobody.
CREATE FUNCTION run_events_stream_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM runs r WHERE r.id = NEW.run_id AND r.source = 'api') THEN
    PERFORM pg_notify('toolrun_team_events', NEW.team_id::text);
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER run_events_stream_notify AFTER INSERT ON run_events
  FOR EACH ROW EXECUTE FUNCTION run_events_stream_notify();

-- The team stream reads a team's recent events in time order.
CREATE INDEX run_events_team_created ON run_events (team_id, created_at, id);

-- Down Migration
DROP INDEX run_events_team_created;
DROP TRIGGER run_events_stream_notify ON run_events;
DROP FUNCTION run_events_stream_notify();
DROP TRIGGER runs_stream_change ON runs;
DROP FUNCTION runs_stream_change();
ALTER TABLE runs DROP COLUMN event_seq;
