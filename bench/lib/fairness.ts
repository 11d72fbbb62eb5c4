/**
 * The fairness figure of bench:runs (issue 20): team B's enqueue-to-start while team A's backlog of
 * BENCH_FAIR_BACKLOG runs drains, against B's enqueue-to-start on an idle system, same run.
 *
 * One worker process with BENCH_FAIR_SLOTS slots; A (the bench team) limited to BENCH_FAIR_A_LIMIT
 * running runs (teams.max_concurrent_runs), B a second Pro team with its own key. Both run
 * `bench_busy` (holds a slot for BENCH_BUSY_MS), so A's backlog lasts while B is measured. B starts
 * BENCH_FAIR_B_RUNS runs, one every BENCH_FAIR_B_PACE_MS: first with nothing else queued (the
 * baseline), then right after A's backlog was accepted. Enqueue-to-start is runs.started_at -
 * created_at (both PostgreSQL now()). A's backlog must still hold queued runs when B's last run
 * starts, or the figure would not measure what it says: that is checked, not assumed.
 */
import pg from 'pg';
import type { Logger } from 'pino';
import { createApiKey } from '../../src/auth/key-admin.js';
import { createDb } from '../../src/db/pool.js';
import { addMember, createTeam, grantSparks, updateTeam } from '../../src/teams/repository.js';
import { Api, e2s, paced, waitFinal, type RunTimes } from './api.js';
import type { AppChild } from './app-children.js';
import { BUSY_TOOL } from './bench-tools.js';
import { UNLIMITED_RATE } from './db.js';
import { envInt, percentile } from './report.js';
import { inFlight } from './upload-io.js';

export const fairSettings = () => ({
  backlog: envInt('BENCH_FAIR_BACKLOG', 1000, 1),
  slots: envInt('BENCH_FAIR_SLOTS', 4, 2),
  aLimit: envInt('BENCH_FAIR_A_LIMIT', 2, 1),
  bRuns: envInt('BENCH_FAIR_B_RUNS', 30, 1),
  bPaceMs: envInt('BENCH_FAIR_B_PACE_MS', 100),
  busyMs: envInt('BENCH_BUSY_MS', 60),
});
export type FairSettings = ReturnType<typeof fairSettings>;

export interface FairResult {
  idle: { p50: number; p99: number; samples: number[] };
  busy: { p50: number; p99: number; samples: number[] };
  /** A's runs still queued when B's last run started (> 0: the backlog lasted through the measurement). */
  aQueuedAtEnd: number;
  /** The most of A's runs running at once over the whole backlog, from their timestamps. */
  aPeakRunning: number;
  aDrainS: number;
}

/** Team B: Pro, a large grant, an owner and a key whose rate limit is lifted like the bench key's. */
async function makeTeamB(url: string, logger: Logger): Promise<string> {
  const db = createDb({ connectionString: url, logger, max: 2, applicationName: 'toolrun-bench-setup' });
  try {
    const team = await createTeam(db, { name: 'Bench team B', plan: 'pro', sparks: 0 });
    await grantSparks(db, team.id, 10_000_000);
    await updateTeam(db.pool, team.id, { runsPerHour: 1_000_000 });
    const owner = await addMember(db, { teamId: team.id, email: 'bench-b@example.test', role: 'owner' });
    const created = await createApiKey(db, { memberId: owner.id, name: 'bench B', scopes: ['read', 'run'], rate: 300, envPrefix: 'svc_test_' });
    await db.pool.query('UPDATE api_keys SET rate_limit_per_minute = $2::integer WHERE id = $1::uuid', [created.api_key.id, UNLIMITED_RATE]);
    return created.key;
  } finally {
    await db.close();
  }
}

/** The most intervals [started, finished) open at one instant. */
function peakOverlap(rows: RunTimes[]): number {
  const marks = rows.flatMap((r) => [
    { t: r.started ?? Number.NaN, d: 1 },
    { t: r.finished ?? Number.NaN, d: -1 },
  ]);
  marks.sort((a, b) => a.t - b.t || a.d - b.d);
  let open = 0;
  let peak = 0;
  for (const m of marks) peak = Math.max(peak, (open += m.d));
  return peak;
}

/**
 * `worker` must be a worker process started with TOOLRUN_WORKER_CONCURRENCY = settings.slots and
 * BENCH_BUSY_MS = settings.busyMs; nothing else may claim runs meanwhile.
 */
export async function measureFairness(opts: {
  url: string;
  apiUrl: string;
  aKey: string;
  aTeamId: string;
  worker: AppChild;
  pool: pg.Pool;
  logger: Logger;
  settings: FairSettings;
  clients: number;
  timeoutMs: number;
}): Promise<FairResult> {
  const { settings: s, pool } = opts;
  await updateTeam(pool, opts.aTeamId, { maxConcurrentRuns: s.aLimit });
  const apiA = new Api(opts.apiUrl, opts.aKey);
  const apiB = new Api(opts.apiUrl, await makeTeamB(opts.url, opts.logger));
  try {
    await opts.worker.setWorkers('runs');
    process.stdout.write(`  fairness: B idle (${s.bRuns} runs)...`);
    const idle = e2s(await waitFinal(pool, await paced(apiB, BUSY_TOOL, s.bRuns, s.bPaceMs), opts.timeoutMs));
    process.stdout.write(` A's backlog of ${s.backlog}...`);
    const aIds = (await inFlight(s.backlog, opts.clients, () => apiA.startRun(BUSY_TOOL, {}))).map((r) => r.id);
    process.stdout.write(' B meanwhile...');
    const bIds = await paced(apiB, BUSY_TOOL, s.bRuns, s.bPaceMs);
    const bRows = await waitFinal(pool, bIds, opts.timeoutMs);
    const lastBStart = Math.max(...bRows.map((r) => r.started ?? 0));
    const { rows } = await pool.query<{ n: string }>(
      `SELECT count(*) AS n FROM runs
        WHERE id = ANY($1::uuid[]) AND (started_at IS NULL OR started_at > to_timestamp($2::double precision / 1000))`,
      [aIds, lastBStart],
    );
    const aQueuedAtEnd = Number(rows[0]?.n ?? 0);
    process.stdout.write(' A drains...\n');
    const aRows = await waitFinal(pool, aIds, opts.timeoutMs);
    const busy = e2s(bRows);
    const aStart = Math.min(...aRows.map((r) => r.started ?? Infinity));
    const aEnd = Math.max(...aRows.map((r) => r.finished ?? 0));
    return {
      idle: { p50: percentile(idle, 50), p99: percentile(idle, 99), samples: idle },
      busy: { p50: percentile(busy, 50), p99: percentile(busy, 99), samples: busy },
      aQueuedAtEnd,
      aPeakRunning: peakOverlap(aRows),
      aDrainS: (aEnd - aStart) / 1000,
    };
  } finally {
    await opts.worker.setWorkers('none').catch(() => undefined);
    apiA.close();
    apiB.close();
  }
}
