-- Up Migration
-- Issue 37 (PostgreSQL CPU per run): a claim was five round trips (the fair order, then per team
-- BEGIN, the team's advisory lock, the take, COMMIT), each costing the server ~110 us beyond its
-- statement. Here it is one: the same order, lock and take, in one statement's transaction. The
-- order is the one of issue 25 (fewest running first, then least recently served, then oldest
-- queued run); a team whose claim lock another claim holds is skipped, not waited for; the team's
-- running runs are counted after its lock is taken, so no number of workers exceeds its limit.
-- PL/pgSQL keeps each statement's plan for the session, as the named statements it replaces did.
CREATE FUNCTION toolrun_claim_queued(claim_owner text, lease_seconds integer, cap_free integer, cap_plus integer,
                                     cap_pro integer, cap_team integer, candidates integer)
RETURNS SETOF runs LANGUAGE plpgsql AS $$
DECLARE
  c record;
  taken runs;
BEGIN
  FOR c IN
    WITH RECURSIVE queued_teams AS (
      (SELECT r.team_id FROM runs r WHERE r.status = 'queued' ORDER BY r.team_id LIMIT 1)
      UNION ALL
      SELECT (SELECT r.team_id FROM runs r WHERE r.status = 'queued' AND r.team_id > q.team_id ORDER BY r.team_id LIMIT 1)
        FROM queued_teams q WHERE q.team_id IS NOT NULL
    )
    SELECT o.team_id, o.cap FROM (
      SELECT q.team_id,
             (SELECT count(*)::integer FROM runs r WHERE r.team_id = q.team_id AND r.status = 'running') AS running,
             (SELECT r.created_at FROM runs r WHERE r.team_id = q.team_id AND r.status = 'queued' ORDER BY r.created_at, r.id LIMIT 1) AS oldest,
             (SELECT s.last_served_at FROM team_claims s WHERE s.team_id = q.team_id) AS served,
             coalesce(t.max_concurrent_runs,
                      CASE t.plan WHEN 'free' THEN cap_free WHEN 'plus' THEN cap_plus WHEN 'pro' THEN cap_pro ELSE cap_team END) AS cap
        FROM queued_teams q JOIN teams t ON t.id = q.team_id
       WHERE q.team_id IS NOT NULL
    ) o
    WHERE o.running < o.cap
    ORDER BY o.running, o.served NULLS FIRST, o.oldest, o.team_id
    LIMIT candidates
  LOOP
    -- 730144: the first key of the locks that serialise one team's claims, held to commit.
    CONTINUE WHEN NOT pg_try_advisory_xact_lock(730144, hashtext(c.team_id::text));
    UPDATE runs SET status = 'running', started_at = coalesce(started_at, now()), lease_owner = claim_owner,
           lease_expires_at = now() + make_interval(secs => lease_seconds), attempts = attempts + 1, progress = 0
     WHERE id = (SELECT r.id FROM runs r
                  WHERE r.team_id = c.team_id AND r.status = 'queued'
                    AND (SELECT count(*) FROM runs x WHERE x.team_id = c.team_id AND x.status = 'running') < c.cap
                  ORDER BY r.created_at, r.id LIMIT 1 FOR UPDATE SKIP LOCKED)
    RETURNING * INTO taken;
    IF FOUND THEN
      -- The team's turn, at the claim's own moment (not its transaction's start).
      INSERT INTO team_claims (team_id, last_served_at) VALUES (taken.team_id, clock_timestamp())
      ON CONFLICT (team_id) DO UPDATE SET last_served_at = excluded.last_served_at;
      RETURN NEXT taken;
      RETURN;
    END IF;
  END LOOP;
END $$;

-- Down Migration
DROP FUNCTION toolrun_claim_queued(text, integer, integer, integer, integer, integer, integer);
