-- Up Migration
-- Issue 37 (CPU per run): every run moves its team's Sparks twice (the hold at the start, the
-- settlement at the end), and each such UPDATE of teams notified toolrun_auth (migration 0009),
-- so every API process dropped the team's cached keys and read them again at the team's next
-- request: two notifications to every listening backend and an authentication query per run.
-- Sparks are no longer part of what a key's cached context is trusted for (GET /v1/me reads the
-- balance itself), so a change of sparks_available alone notifies nobody, like api_keys'
-- last_used_at. Any other change to a team (name, plan, ceilings), and a deletion, still does.
DROP TRIGGER teams_auth_notify ON teams;
CREATE TRIGGER teams_auth_notify AFTER UPDATE ON teams
  FOR EACH ROW WHEN ((to_jsonb(OLD) - 'sparks_available') IS DISTINCT FROM (to_jsonb(NEW) - 'sparks_available'))
  EXECUTE FUNCTION auth_notify_team();
CREATE TRIGGER teams_auth_notify_delete AFTER DELETE ON teams
  FOR EACH ROW EXECUTE FUNCTION auth_notify_team();

-- Down Migration
DROP TRIGGER teams_auth_notify_delete ON teams;
DROP TRIGGER teams_auth_notify ON teams;
CREATE TRIGGER teams_auth_notify AFTER UPDATE OR DELETE ON teams
  FOR EACH ROW EXECUTE FUNCTION auth_notify_team();
