-- Up Migration
-- GET /v1/me answers a team's balance from each API process's memory (src/sparks/balances.ts),
-- so a change of it must be heard. Not on toolrun_auth, which drops the team's cached keys (the
-- reason migration 0024 took the balance out of it): on toolrun_sparks, which drops the cached
-- balance only. A hold or a settlement already notifies in its own transaction (the workers' run
-- notification, the run's event), and PostgreSQL signals listeners once per committing
-- transaction, so this adds a queue entry to each, not a wake-up. A deleted team notifies
-- toolrun_auth (migration 0024), which drops its balance too.
CREATE FUNCTION sparks_notify_team() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('toolrun_sparks', NEW.id::text);
  RETURN NULL;
END $$;

CREATE TRIGGER teams_sparks_notify AFTER UPDATE OF sparks_available ON teams
  FOR EACH ROW WHEN (OLD.sparks_available IS DISTINCT FROM NEW.sparks_available)
  EXECUTE FUNCTION sparks_notify_team();

-- Down Migration
DROP TRIGGER teams_sparks_notify ON teams;
DROP FUNCTION sparks_notify_team();
