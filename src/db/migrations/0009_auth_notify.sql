-- Up Migration
-- API processes keep authenticated keys' contexts in memory (src/auth/key-cache.ts). Every change
-- that could alter a key's context (its team's name, plan, Sparks or ceiling, a member's role or
-- removal, a key's revocation, scopes or rate) notifies channel toolrun_auth with the team's id,
-- whoever makes it: the API, the console, the operator CLI, a worker or plain SQL. The
-- notification is sent at commit, so a process that hears it and reads again sees the change.
CREATE FUNCTION auth_notify_team() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_TABLE_NAME = 'teams' THEN
    PERFORM pg_notify('toolrun_auth', OLD.id::text);
  ELSE
    PERFORM pg_notify('toolrun_auth', OLD.team_id::text);
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER teams_auth_notify AFTER UPDATE OR DELETE ON teams
  FOR EACH ROW EXECUTE FUNCTION auth_notify_team();
CREATE TRIGGER members_auth_notify AFTER UPDATE OR DELETE ON members
  FOR EACH ROW EXECUTE FUNCTION auth_notify_team();
-- last_used_at is written in batches off the request path and changes no context: it alone
-- notifies nobody.
CREATE TRIGGER api_keys_auth_notify AFTER UPDATE ON api_keys
  FOR EACH ROW WHEN ((to_jsonb(OLD) - 'last_used_at') IS DISTINCT FROM (to_jsonb(NEW) - 'last_used_at'))
  EXECUTE FUNCTION auth_notify_team();
CREATE TRIGGER api_keys_auth_notify_delete AFTER DELETE ON api_keys
  FOR EACH ROW EXECUTE FUNCTION auth_notify_team();

-- Down Migration
DROP TRIGGER api_keys_auth_notify_delete ON api_keys;
DROP TRIGGER api_keys_auth_notify ON api_keys;
DROP TRIGGER members_auth_notify ON members;
DROP TRIGGER teams_auth_notify ON teams;
DROP FUNCTION auth_notify_team();
