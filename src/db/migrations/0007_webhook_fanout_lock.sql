-- Up Migration
-- The fan-out reads each endpoint FOR SHARE, so it serialises with a pause or delete (which lock
-- the endpoint row FOR UPDATE first): an event written while the endpoint is being paused either
-- waits for the pause and then sees enabled = false (no delivery), or makes its delivery first and
-- the pause, waiting for it, then drops it. Unlocked, a delivery made concurrently with the pause
-- stayed pending and was sent after a resume, though the run finished while paused.
CREATE OR REPLACE FUNCTION webhook_fanout() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO webhook_deliveries (id, event_id, endpoint_id, team_id, status)
  SELECT gen_random_uuid(), NEW.id, e.id, e.team_id, 'pending'
    FROM webhook_endpoints e
   WHERE e.team_id = NEW.team_id AND e.enabled AND e.deleted_at IS NULL AND NEW.type = ANY (e.events)
     FOR SHARE OF e;
  IF FOUND THEN
    PERFORM pg_notify('toolrun_webhooks', NEW.id::text);
  END IF;
  RETURN NEW;
END $$;

-- Down Migration
CREATE OR REPLACE FUNCTION webhook_fanout() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO webhook_deliveries (id, event_id, endpoint_id, team_id, status)
  SELECT gen_random_uuid(), NEW.id, e.id, e.team_id, 'pending'
    FROM webhook_endpoints e
   WHERE e.team_id = NEW.team_id AND e.enabled AND e.deleted_at IS NULL AND NEW.type = ANY (e.events);
  IF FOUND THEN
    PERFORM pg_notify('toolrun_webhooks', NEW.id::text);
  END IF;
  RETURN NEW;
END $$;
