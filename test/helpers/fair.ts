// Shared by the fair-scheduling tests (test/runs-fair*.test.ts): a trigger that records each team's
// peak of running runs at the moment a claim commits (so a limit is checked at every claim, not
// sampled), per-team counts and limits, run starts in batches, and the order runs started in.
import type { Engine, TeamClient } from './runs-harness.js';

export async function recordPeaks(e: Engine): Promise<void> {
  await e.db().query(`
    CREATE TABLE IF NOT EXISTS test_running_peaks (team_id uuid PRIMARY KEY, peak integer NOT NULL);
    CREATE OR REPLACE FUNCTION test_note_peak() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO test_running_peaks AS p (team_id, peak)
        SELECT NEW.team_id, count(*)::integer FROM runs WHERE team_id = NEW.team_id AND status = 'running'
      ON CONFLICT (team_id) DO UPDATE SET peak = greatest(p.peak, excluded.peak);
      RETURN NULL;
    END $$;
    DROP TRIGGER IF EXISTS test_note_peak ON runs;
    CREATE TRIGGER test_note_peak AFTER UPDATE OF status ON runs FOR EACH ROW
      WHEN (NEW.status = 'running' AND OLD.status = 'queued') EXECUTE FUNCTION test_note_peak();`);
}

export async function peak(e: Engine, teamId: string): Promise<number> {
  const { rows } = await e.db().query<{ peak: number }>('SELECT peak FROM test_running_peaks WHERE team_id = $1::uuid', [teamId]);
  return rows[0]?.peak ?? 0;
}

export async function counts(e: Engine, teamId: string): Promise<{ running: number; started: number; queued: number; succeeded: number }> {
  const { rows } = await e.db().query<{ running: number; started: number; queued: number; succeeded: number }>(
    `SELECT count(*) FILTER (WHERE status = 'running')::integer AS running, count(started_at)::integer AS started,
            count(*) FILTER (WHERE status = 'queued')::integer AS queued, count(*) FILTER (WHERE status = 'succeeded')::integer AS succeeded
       FROM runs WHERE team_id = $1::uuid`,
    [teamId],
  );
  return rows[0]!;
}

export async function setLimit(e: Engine, teamId: string, limit: number | null): Promise<void> {
  await e.db().query('UPDATE teams SET max_concurrent_runs = $2::integer WHERE id = $1::uuid', [teamId, limit]);
}

/** Starts `n` runs for a team, a few requests at a time. */
export async function startMany(c: TeamClient, n: number, mode: string): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i += 10) {
    const batch = await Promise.all(Array.from({ length: Math.min(10, n - i) }, () => c.start(mode)));
    ids.push(...batch.map((r) => r.id));
  }
  return ids;
}

/** The runs' teams in the order the runs started (runs.started_at, the claim's commit time). */
export async function startOrder(e: Engine, runIds: string[]): Promise<{ id: string; team_id: string; attempts: number }[]> {
  const { rows } = await e.db().query<{ id: string; team_id: string; attempts: number }>(
    'SELECT id, team_id, attempts FROM runs WHERE id = ANY ($1::uuid[]) ORDER BY started_at, id',
    [runIds],
  );
  return rows;
}
