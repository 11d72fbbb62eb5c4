-- Up Migration
-- App runs (issue 15): runs started from the console's playground. They share the runs table,
-- the engine, the price, the balance and the hourly ceiling with API runs, but carry no key:
-- source says which kind a run is, and /v1 reads only source = 'api'. Their final events are
-- written like any run's (the console and the ledger read them) but fan out to no webhook.
ALTER TABLE runs ALTER COLUMN api_key_id DROP NOT NULL;
ALTER TABLE runs ADD COLUMN source text NOT NULL DEFAULT 'api' CHECK (source IN ('api', 'app'));
ALTER TABLE runs ADD CONSTRAINT runs_source_key CHECK ((source = 'api') = (api_key_id IS NOT NULL));
-- The console's runs page: a team's runs newest first, with a stable order for the cursor.
CREATE INDEX runs_team_newest ON runs (team_id, created_at DESC, id DESC);

CREATE OR REPLACE FUNCTION webhook_fanout() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM runs r WHERE r.id = NEW.run_id AND r.source = 'app') THEN
    RETURN NEW;
  END IF;
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
   WHERE e.team_id = NEW.team_id AND e.enabled AND e.deleted_at IS NULL AND NEW.type = ANY (e.events)
     FOR SHARE OF e;
  IF FOUND THEN
    PERFORM pg_notify('toolrun_webhooks', NEW.id::text);
  END IF;
  RETURN NEW;
END $$;
DROP INDEX runs_team_newest;
ALTER TABLE runs DROP CONSTRAINT runs_source_key;
DELETE FROM runs WHERE source = 'app';
ALTER TABLE runs DROP COLUMN source;
ALTER TABLE runs ALTER COLUMN api_key_id SET NOT NULL;
