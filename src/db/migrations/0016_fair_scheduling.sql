-- Up Migration
-- Fair scheduling (issue 20): at most max_concurrent_runs runs of one team run at once (NULL: the
-- plan's default from TOOLRUN_TEAM_CONCURRENCY). The claim walks the teams that have queued runs
-- (a skip scan of runs_team_queued), counts each one's running runs (runs_team_running) and takes
-- the oldest queued run (runs_team_queued) of the team with the fewest running: every step is an
-- index probe, however long one team's backlog is.
ALTER TABLE teams ADD COLUMN max_concurrent_runs integer CHECK (max_concurrent_runs BETWEEN 1 AND 1000);
CREATE INDEX runs_team_queued ON runs (team_id, created_at, id) WHERE status = 'queued';
CREATE INDEX runs_team_running ON runs (team_id) WHERE status = 'running';

-- Down Migration
DROP INDEX runs_team_running;
DROP INDEX runs_team_queued;
ALTER TABLE teams DROP COLUMN max_concurrent_runs;
