-- Up Migration
-- The console's Usage page as a daily roll-up (issue 37): its two queries scanned every run and
-- every charge of the last 30 days (690 ms and 3.2 s at 1 M runs). One row per team, UTC day and
-- tool, kept by triggers in the transaction that writes the run or the ledger row, so it is
-- exactly what those queries computed:
--   runs              runs created that day (usageByDay's "runs", usageByTool's "runs");
--   sparks_spent      -(charges + refunds) booked that day, for runs of that tool (usageByDay);
--   run_sparks_spent  -(charges + refunds) of the runs created that day, whenever booked (usageByTool).
-- tool_id '' holds a charge or refund that names no run (none does today: only usageByDay counts it).
CREATE TABLE usage_daily (
  team_id uuid NOT NULL REFERENCES teams(id),
  day date NOT NULL,
  tool_id text NOT NULL,
  runs integer NOT NULL DEFAULT 0,
  sparks_spent bigint NOT NULL DEFAULT 0,
  run_sparks_spent bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (team_id, day, tool_id)
);

-- No run or ledger row is written between the back-fill's snapshot and the triggers' start.
LOCK TABLE runs, ledger_entries IN SHARE ROW EXCLUSIVE MODE;

-- Deferred to the commit: every transaction that writes a run or a charge/refund has locked its
-- team's row by then (the start's SELECT ... FOR UPDATE, settleRun's and refundCharge's UPDATE
-- teams), so a team's roll-up rows are only ever written under that lock: no new waits, and no
-- deadlock against a start that holds the team row and would wait for a roll-up row (an immediate
-- trigger on the charge would take the roll-up row before settleRun's UPDATE teams).
CREATE FUNCTION usage_daily_run() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO usage_daily AS u (team_id, day, tool_id, runs)
  VALUES (NEW.team_id, (NEW.created_at AT TIME ZONE 'UTC')::date, NEW.tool_id, 1)
  ON CONFLICT (team_id, day, tool_id) DO UPDATE SET runs = u.runs + 1;
  RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER usage_daily_run AFTER INSERT ON runs
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION usage_daily_run();

CREATE FUNCTION usage_daily_ledger() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  r record;
BEGIN
  SELECT team_id, tool_id, (created_at AT TIME ZONE 'UTC')::date AS day INTO r FROM runs WHERE id = NEW.run_id;
  -- Both rows in one statement, in key order (booked day and run's day may be the same row).
  INSERT INTO usage_daily AS u (team_id, day, tool_id, sparks_spent, run_sparks_spent)
  SELECT v.team_id, v.day, coalesce(r.tool_id, ''), sum(v.spent), sum(v.run_spent)
    FROM (VALUES (NEW.team_id, (NEW.created_at AT TIME ZONE 'UTC')::date, -NEW.amount, 0::bigint),
                 (r.team_id, r.day, 0::bigint, -NEW.amount)) AS v (team_id, day, spent, run_spent)
   WHERE v.team_id IS NOT NULL
   GROUP BY v.team_id, v.day ORDER BY v.team_id, v.day
  ON CONFLICT (team_id, day, tool_id) DO UPDATE
    SET sparks_spent = u.sparks_spent + EXCLUDED.sparks_spent, run_sparks_spent = u.run_sparks_spent + EXCLUDED.run_sparks_spent;
  RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER usage_daily_ledger AFTER INSERT ON ledger_entries
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW WHEN (NEW.kind IN ('charge', 'refund'))
  EXECUTE FUNCTION usage_daily_ledger();

-- A tool filter on the run lists (GET /v1/runs?tool_id=, the console's runs page) walked the team's
-- runs newest first until it found a page of that tool: every run of the team for a tool it
-- seldom uses. With the tool in the key it reads one page (issue 37).
CREATE INDEX runs_team_tool_newest ON runs (team_id, tool_id, created_at DESC, id DESC);

-- The back-fill: the same three sums over what is there.
INSERT INTO usage_daily (team_id, day, tool_id, runs, sparks_spent, run_sparks_spent)
SELECT team_id, day, tool_id, sum(runs), sum(spent), sum(run_spent)
  FROM (SELECT team_id, (created_at AT TIME ZONE 'UTC')::date AS day, tool_id, count(*) AS runs, 0::bigint AS spent, 0::bigint AS run_spent
          FROM runs GROUP BY 1, 2, 3
        UNION ALL
        SELECT l.team_id, (l.created_at AT TIME ZONE 'UTC')::date, coalesce(r.tool_id, ''), 0, -sum(l.amount), 0
          FROM ledger_entries l LEFT JOIN runs r ON r.id = l.run_id
         WHERE l.kind IN ('charge', 'refund') GROUP BY 1, 2, 3
        UNION ALL
        SELECT r.team_id, (r.created_at AT TIME ZONE 'UTC')::date, r.tool_id, 0, 0, -sum(l.amount)
          FROM ledger_entries l JOIN runs r ON r.id = l.run_id
         WHERE l.kind IN ('charge', 'refund') GROUP BY 1, 2, 3) AS x
 GROUP BY team_id, day, tool_id;

-- Down Migration
DROP INDEX runs_team_tool_newest;
DROP TRIGGER usage_daily_ledger ON ledger_entries;
DROP FUNCTION usage_daily_ledger();
DROP TRIGGER usage_daily_run ON runs;
DROP FUNCTION usage_daily_run();
DROP TABLE usage_daily;
