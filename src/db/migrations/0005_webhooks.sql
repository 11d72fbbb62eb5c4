-- Up Migration
CREATE TABLE webhook_endpoints (
  id uuid PRIMARY KEY,
  team_id uuid NOT NULL REFERENCES teams(id),
  url text NOT NULL CHECK (length(url) <= 2048),
  events text[] NOT NULL,
  enabled boolean NOT NULL DEFAULT true,
  -- Needed in clear to sign each attempt; shown to the client once, never logged.
  signing_secret text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  deleted_at timestamptz
);
CREATE INDEX webhook_endpoints_team ON webhook_endpoints (team_id) WHERE deleted_at IS NULL;

-- One delivery per (event, endpoint); its id is the Service-Delivery header on every attempt.
CREATE TABLE webhook_deliveries (
  id uuid PRIMARY KEY,
  event_id uuid REFERENCES run_events(id),
  endpoint_id uuid NOT NULL REFERENCES webhook_endpoints(id),
  team_id uuid NOT NULL REFERENCES teams(id),
  -- pending: to be attempted at next_attempt_at; delivered: answered 2xx; failed: given up after
  -- the last retry; dropped: the endpoint was paused or deleted first.
  status text NOT NULL CHECK (status IN ('pending', 'delivered', 'failed', 'dropped')),
  attempts integer NOT NULL DEFAULT 0,
  next_attempt_at timestamptz NOT NULL DEFAULT now(),
  lease_owner text,
  lease_expires_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  finished_at timestamptz,
  UNIQUE (event_id, endpoint_id)
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id) WHERE status = 'pending';

CREATE TABLE webhook_attempts (
  id bigserial PRIMARY KEY,
  delivery_id uuid NOT NULL,
  endpoint_id uuid NOT NULL REFERENCES webhook_endpoints(id),
  event_type text NOT NULL,
  attempted_at timestamptz NOT NULL DEFAULT now(),
  status_code integer,
  error text,
  duration_ms integer NOT NULL,
  response_excerpt text
);
CREATE INDEX webhook_attempts_endpoint ON webhook_attempts (endpoint_id, attempted_at);

-- Fan-out in the run's own transaction: every final run event becomes one delivery per endpoint
-- that is enabled and subscribed to its type at that moment. A trigger, so that no code path that
-- writes an event can forget it.
CREATE FUNCTION webhook_fanout() RETURNS trigger LANGUAGE plpgsql AS $$
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
CREATE TRIGGER run_events_webhook_fanout AFTER INSERT ON run_events FOR EACH ROW EXECUTE FUNCTION webhook_fanout();

-- Down Migration
DROP TRIGGER run_events_webhook_fanout ON run_events;
DROP FUNCTION webhook_fanout();
DROP TABLE webhook_attempts;
DROP TABLE webhook_deliveries;
DROP TABLE webhook_endpoints;
