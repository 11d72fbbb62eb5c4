/**
 * The fairness figure of bench:runs (issues 20 and 25): team B's enqueue-to-start while team A's
 * backlog of BENCH_FAIR_BACKLOG runs drains, against B's while A's runs hold every slot with nothing
 * queued, same run; B's on an idle system is shown beside them.
 *
 * One worker process with the worker's default concurrency on this machine (cores - 1: one slot on
 * two cores), A (the bench team) at its plan's default limit, which is not below the slots, B a
 * second Pro team with its own key. Both run `bench_busy` (holds a slot for BENCH_BUSY_MS). B starts
 * BENCH_FAIR_B_RUNS runs, one every BENCH_FAIR_B_PACE_MS: on the idle system; while A keeps one run
 * per slot in flight (each started when its last one finished); and right after A's backlog was
 * accepted. Enqueue-to-start is runs.started_at - created_at (both PostgreSQL now()). When A holds
 * every slot, B waits for the rest of a run of A's whatever the order: that wait is in both sides of
 * the ratio, so the ratio is what A's backlog adds, which is the claim's order alone. For each of
 * B's runs the timestamps also tell how many of A's queued runs started first (at most one per slot
 * when teams take turns, A's whole backlog when the oldest run wins). A's backlog must still hold
 * queued runs when B's last run is queued, or the figure would not measure what it says: that is
 * checked, not assumed.
 */
import pg from 'pg';
import type { Logger } from 'pino';
import { createApiKey } from '../../src/auth/key-admin.js';
import { createDb } from '../../src/db/pool.js';
import { addMember, createTeam, grantSparks, updateTeam } from '../../src/teams/repository.js';
import { Api, e2s, paced, RunNotifier, waitFinal, type RunTimes } from './api.js';
import type { AppChild } from './app-children.js';
import { BUSY_TOOL } from './bench-tools.js';
import { UNLIMITED_RATE } from './db.js';
import { envInt, percentile, sleep } from './report.js';
import { inFlight } from './upload-io.js';

/**
 * B's runs come slowly enough to ask for well under half of one slot (its share beside A) even when
 * the engine's own work per run is slow on a busy machine: 60 ms + up to ~40 ms, every 250 ms.
 */
export const fairSettings = () => ({
  backlog: envInt('BENCH_FAIR_BACKLOG', 1000, 1),
  bRuns: envInt('BENCH_FAIR_B_RUNS', 30, 1),
  bPaceMs: envInt('BENCH_FAIR_B_PACE_MS', 250),
  busyMs: envInt('BENCH_BUSY_MS', 60),
});
export type FairSettings = ReturnType<typeof fairSettings>;

export interface FairResult {
  idle: { p50: number; p99: number; samples: number[] };
  /** A's runs hold every slot, nothing of A's queued: what B waits for whatever the order. */
  held: { p50: number; p99: number; samples: number[] };
  busy: { p50: number; p99: number; samples: number[] };
  /**
   * A's runs still queued when B's last run was queued (> 0: every one of B's runs came while A had
   * a backlog) and when it started (0 with the oldest run first: B waited for the whole backlog).
   */
  aQueued: { atLastBQueued: number; atLastBStart: number };
  /** The most of A's runs running at once over the whole backlog, from their timestamps. */
  aPeakRunning: number;
  /** For each of B's runs (A's backlog draining), how many of A's runs started after it was queued and before it started. */
  overtaken: { p50: number; max: number };
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
 * Keeps `slots` of A's runs in flight and none queued: each loop starts a run when its last one
 * finished (heard by LISTEN, not polled) until `stop.done`. `ids` fills as A's runs are accepted.
 */
function holdSlots(api: Api, notifier: RunNotifier, slots: number, stop: { done: boolean }, timeoutMs: number): { ids: string[]; done: Promise<void> } {
  const ids: string[] = [];
  const loop = async () => {
    while (!stop.done) {
      const run = await api.startRun(BUSY_TOOL, {});
      ids.push(run.id);
      await notifier.wait(run.id, timeoutMs);
    }
  };
  return { ids, done: Promise.all(Array.from({ length: slots }, loop)).then(() => undefined) };
}

/** For each B run, the A runs whose start fell between B's enqueue and B's start. */
function overtakes(aRows: RunTimes[], bRows: RunTimes[]): number[] {
  const aStarts = aRows.map((r) => r.started ?? Number.NaN);
  return bRows.map((b) => aStarts.filter((t) => t > b.created && t < (b.started ?? Infinity)).length);
}

/**
 * `worker` must be a worker process started with the default TOOLRUN_WORKER_CONCURRENCY and
 * BENCH_BUSY_MS = settings.busyMs; nothing else may claim runs meanwhile. A's limit is reset to its
 * plan's default.
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
  /** The worker's slots (its default concurrency). */
  slots: number;
  clients: number;
  timeoutMs: number;
}): Promise<FairResult> {
  const { settings: s, pool } = opts;
  await updateTeam(pool, opts.aTeamId, { maxConcurrentRuns: null });
  const apiA = new Api(opts.apiUrl, opts.aKey);
  const apiB = new Api(opts.apiUrl, await makeTeamB(opts.url, opts.logger));
  const notifier = new RunNotifier(opts.url);
  try {
    await notifier.start();
    await opts.worker.setWorkers('runs');
    process.stdout.write(`  fairness: B idle (${s.bRuns} runs)...`);
    const idle = e2s(await waitFinal(pool, await paced(apiB, BUSY_TOOL, s.bRuns, s.bPaceMs), opts.timeoutMs));
    process.stdout.write(` B while A holds ${opts.slots} slot${opts.slots === 1 ? '' : 's'}...`);
    const stop = { done: false };
    const holding = holdSlots(apiA, notifier, opts.slots, stop, opts.timeoutMs);
    let failed: unknown = null;
    holding.done.catch((err: unknown) => (failed = err ?? new Error("A's runs holding the slots failed")));
    // B's first run must find the slots taken.
    while (holding.ids.length < opts.slots) {
      if (failed) throw failed;
      await sleep(1);
    }
    const heldB = await paced(apiB, BUSY_TOOL, s.bRuns, s.bPaceMs).finally(() => (stop.done = true));
    const held = e2s(await waitFinal(pool, heldB, opts.timeoutMs));
    await holding.done;
    await waitFinal(pool, holding.ids, opts.timeoutMs);
    process.stdout.write(` A's backlog of ${s.backlog}...`);
    const aIds = (await inFlight(s.backlog, opts.clients, () => apiA.startRun(BUSY_TOOL, {}))).map((r) => r.id);
    process.stdout.write(' B meanwhile...');
    const bIds = await paced(apiB, BUSY_TOOL, s.bRuns, s.bPaceMs);
    const bRows = await waitFinal(pool, bIds, opts.timeoutMs);
    const aQueuedAt = async (t: number) => {
      const { rows } = await pool.query<{ n: string }>(
        `SELECT count(*) AS n FROM runs
          WHERE id = ANY($1::uuid[]) AND (started_at IS NULL OR started_at > to_timestamp($2::double precision / 1000))`,
        [aIds, t],
      );
      return Number(rows[0]?.n ?? 0);
    };
    const aQueued = {
      atLastBQueued: await aQueuedAt(Math.max(...bRows.map((r) => r.created))),
      atLastBStart: await aQueuedAt(Math.max(...bRows.map((r) => r.started ?? 0))),
    };
    process.stdout.write(' A drains...\n');
    const aRows = await waitFinal(pool, aIds, opts.timeoutMs);
    const busy = e2s(bRows);
    const overtaken = overtakes(aRows, bRows);
    const aStart = Math.min(...aRows.map((r) => r.started ?? Infinity));
    const aEnd = Math.max(...aRows.map((r) => r.finished ?? 0));
    return {
      idle: { p50: percentile(idle, 50), p99: percentile(idle, 99), samples: idle },
      held: { p50: percentile(held, 50), p99: percentile(held, 99), samples: held },
      busy: { p50: percentile(busy, 50), p99: percentile(busy, 99), samples: busy },
      aQueued,
      aPeakRunning: peakOverlap(aRows),
      overtaken: { p50: percentile(overtaken, 50), max: Math.max(...overtaken) },
      aDrainS: (aEnd - aStart) / 1000,
    };
  } finally {
    await opts.worker.setWorkers('none').catch(() => undefined);
    await notifier.close().catch(() => undefined);
    apiA.close();
    apiB.close();
  }
}
