/**
 * `npm run bench:runs`: the run engine (issue 4, "Benchmarks"). Not a test.
 *
 * Queue: `bench_noop` (bench/lib/bench-tools.ts, no inputs, no outputs) so a run costs only the
 * engine. Three set-ups share one API process (bench/app-server.ts, the real app with the bench
 * registry): `serve` (RunWorker + WebhookWorker + janitor in the API process, as `toolrun serve`),
 * then 1 and 2 separate worker processes (as `toolrun worker`) with nothing beside the API. For each:
 *   accept  starts/s of a burst of BENCH_BURST_RUNS starts from BENCH_CLIENTS clients while no
 *           worker runs (the baseline for throughput: the engine cannot finish runs faster than the
 *           API takes them), then the workers are switched on and drain that backlog (drain runs/s,
 *           first started_at to last finished_at);
 *   paced   BENCH_PACED_RUNS starts, one every BENCH_PACE_MS, idle workers: enqueue-to-start is
 *           started_at - created_at, both PostgreSQL now() of the start and claim transactions;
 *   e2e     a second burst with the workers running: runs/s from first created_at to last finished_at.
 * The latency baseline is a bare NOTIFY round trip (pg_notify committed -> a LISTENing client).
 *
 * Real tool: image_upscale on a generated JPEG sized so the runner takes ~BENCH_REAL_SECONDS here,
 * in a second API process (serve set-up, with metrics) started for it. The fixed cost per run in ms
 * (issue 29): runs.created_at -> finished_at (the input uploaded once before, so no upload is in
 * it; the queue, the input made readable, the output's check, checksum and move into storage are)
 * minus the runner call inside it (the worker's runner phase, bench/lib/phases.ts), median over
 * BENCH_REAL_ROUNDS rounds. Diag: per round the same interval minus the runner called directly
 * (runDirect() in that API process, idle meanwhile), both back to back alternating which goes
 * first, each after the previous run's output check; the median of those differences; and the
 * client's interval (before POST -> the NOTIFY the final commit sends). The engine's output steps
 * (probe, sha256, move into storage) are also timed alone on the output, in this process.
 *
 * Fairness (issues 20 and 25, bench/lib/fairness.ts): team B's enqueue-to-start while team A's
 * backlog of 1,000 runs drains, against B's on an idle system (one worker process with this
 * machine's default concurrency, A at its plan's limit), and how many of A's runs started first.
 *
 * CPU per run (issue 37, bench/lib/run-cpu.ts): service and PostgreSQL CPU, statements and
 * transactions per bench_noop run with the default slots, on a PostgreSQL server of its own, beside
 * a no-op graphile-worker job on the same server (the anchor); BENCH_CPU_* there.
 *
 * Environment: DATABASE_URL (else an embedded PostgreSQL), BENCH_PACED_RUNS (150), BENCH_PACE_MS
 * (40), BENCH_BURST_RUNS (300), BENCH_CLIENTS (8), BENCH_REAL_SECONDS (2), BENCH_REAL_ROUNDS (7),
 * BENCH_LOG_LEVEL (warn), BENCH_MAX_MINUTES (10), the BENCH_FAIR_* and BENCH_BUSY_MS of fairness.ts;
 * TOOLRUN_WORKER_CONCURRENCY passes through (not to the fairness worker, which keeps the default).
 */
import os from 'node:os';
import pg from 'pg';
import { loadConfig } from '../src/config/config.js';
import { Api, e2s, paced, pgBaselines, prepareTeam, RunNotifier, waitFinal, type RunTimes } from './lib/api.js';
import { descendantsCpuSeconds, startAppChild, type AppChild } from './lib/app-children.js';
import { NOOP_TOOL } from './lib/bench-tools.js';
import { fairSettings, measureFairness } from './lib/fairness.js';
import { signedMs } from './lib/phases.js';
import { compactSamples, envInt, envNum, figure, finish, fmt, loadNote, median, pct, percentile, resultHeader, table, type BenchResult, runBench } from './lib/report.js';
import { realTool } from './lib/real-job.js';
import { serviceEnv, withBenchService, type BenchService } from './lib/service.js';
import { cpuFigures, cpuLines, measureCpu } from './lib/run-cpu-report.js';
import { inFlight, procCpuSeconds } from './lib/upload-io.js';

const P50_TARGET_MS = 20;
/** Issue 29: what the API adds to a run, in ms, whatever the job's length. */
const FIXED_TARGET_MS = 150;
/** GET /metrics of the real-job API process: its worker's runner phase is read from there. */
const METRICS_TOKEN = 'bench-runs-metrics-token';
const FAIR_TARGET = 2;
const fair = fairSettings();
const settings = {
  pacedRuns: envInt('BENCH_PACED_RUNS', 150, 1),
  paceMs: envInt('BENCH_PACE_MS', 40),
  burstRuns: envInt('BENCH_BURST_RUNS', 300, 1),
  clients: envInt('BENCH_CLIENTS', 8, 1),
  realSeconds: envNum('BENCH_REAL_SECONDS', 2, 0.1),
  realRounds: envInt('BENCH_REAL_ROUNDS', 7, 1),
  baselineRounds: 200,
  timeoutMs: 300_000,
  apiLogLevel: process.env.BENCH_LOG_LEVEL || 'warn',
  workerConcurrency: process.env.TOOLRUN_WORKER_CONCURRENCY || `default (cores - 1 = ${Math.max(1, os.availableParallelism() - 1)})`,
};

const span = (rows: RunTimes[], from: 'created' | 'started') =>
  (Math.max(...rows.map((r) => r.finished ?? 0)) - Math.min(...rows.map((r) => r[from] ?? Infinity))) / 1000;
async function burst(api: Api, n: number): Promise<{ ids: string[]; perS: number }> {
  const t0 = performance.now();
  const runs = await inFlight(n, settings.clients, () => api.startRun(NOOP_TOOL, {}));
  return { ids: runs.map((r) => r.id), perS: n / ((performance.now() - t0) / 1000) };
}

interface QueueResult {
  label: string;
  processes: string;
  acceptPerS: number;
  drainPerS: number;
  paced: { p50: number; p99: number; max: number; execP50: number };
  e2ePerS: number;
  burstE2sP50: number;
  /** CPU per e2e run: every child process of this one (API, workers, embedded PostgreSQL), and this client. */
  cpuMsPerRun: { server: number; client: number };
  pacedSlowest: { i: number; ms: number }[];
  /** Every paced run's enqueue-to-start, for the chart. */
  pacedE2sMs: number[];
}

/** accept (no workers) -> drain, paced latency, e2e burst; `on`/`off` switch this set-up's workers. */
async function measureQueue(label: string, processes: string, api: Api, pool: pg.Pool, on: () => Promise<void>): Promise<QueueResult> {
  process.stdout.write(`  ${label}: accept + drain...`);
  const backlog = await burst(api, settings.burstRuns);
  await on();
  const drained = await waitFinal(pool, backlog.ids, settings.timeoutMs);
  process.stdout.write(' paced...');
  const pacedRows = await waitFinal(pool, await paced(api, NOOP_TOOL, settings.pacedRuns, settings.paceMs), settings.timeoutMs);
  process.stdout.write(' e2e burst...\n');
  const cpu0 = { server: descendantsCpuSeconds(process.pid), client: procCpuSeconds(process.pid) };
  const e2e = await burst(api, settings.burstRuns);
  const e2eRows = await waitFinal(pool, e2e.ids, settings.timeoutMs);
  const cpuMs = {
    server: ((descendantsCpuSeconds(process.pid) - cpu0.server) * 1000) / e2eRows.length,
    client: ((procCpuSeconds(process.pid) - cpu0.client) * 1000) / e2eRows.length,
  };
  const lat = e2s(pacedRows);
  // The slowest paced runs with their position: one stall shows as a run of neighbours.
  const slowest = lat.map((ms, i) => ({ i, ms })).sort((a, b) => b.ms - a.ms).slice(0, 5);
  return {
    label,
    processes,
    acceptPerS: backlog.perS,
    drainPerS: drained.length / span(drained, 'started'),
    paced: { p50: percentile(lat, 50), p99: percentile(lat, 99), max: Math.max(...lat), execP50: median(pacedRows.map((r) => (r.finished ?? 0) - (r.started ?? 0))) },
    e2ePerS: e2eRows.length / span(e2eRows, 'created'),
    burstE2sP50: percentile(e2s(e2eRows), 50),
    cpuMsPerRun: cpuMs,
    pacedSlowest: slowest,
    pacedE2sMs: lat,
  };
}

async function main(svc: BenchService): Promise<void> {
  const { logger, dir } = svc;
  const loadBefore = loadNote();
  process.stdout.write(`setting up (${loadBefore.text})...\n`);
  const database = await svc.database();
  const teamA = await prepareTeam(database.url, database.keyId, logger);
  const pool = svc.defer(new pg.Pool({ connectionString: database.url, max: 4 }), (p) => p.end());
  const env = serviceEnv(svc, database, { logLevel: settings.apiLogLevel, set: { BENCH_BUSY_MS: String(fair.busyMs) } });
  process.stdout.write('  CPU per run: Toolrun and graphile-worker on a PostgreSQL of its own...\n');
  const cpu = await measureCpu(env, logger);
  const apiChild = svc.child('api', await startAppChild('api', { ...env, BENCH_WORKERS: 'none' }));
  const api = new Api(apiChild.url, database.key);
  const { notify, commit } = await pgBaselines(database.url, settings.baselineRounds);

  const queue: QueueResult[] = [];
  queue.push(await measureQueue('serve (API + in-process workers)', '1', api, pool, () => apiChild.setWorkers('all')));
  await apiChild.setWorkers('none');
  const workers: AppChild[] = [];
  for (const n of [1, 2]) {
    while (workers.length < n) {
      workers.push(svc.child(`worker ${workers.length + 1}`, await startAppChild('worker', { ...env, BENCH_WORKERS: 'none' })));
    }
    await Promise.all(workers.map((w) => w.setWorkers('none')));
    queue.push(await measureQueue(`${n} worker process${n > 1 ? 'es' : ''} (API alone)`, `1+${n}`, api, pool, async () => {
      await Promise.all(workers.map((w) => w.setWorkers('all')));
    }));
  }
  for (const w of workers) await w.stop();
  // The worker as an operator would start it on this machine: default concurrency (cores - 1).
  const { TOOLRUN_WORKER_CONCURRENCY: _concurrency, ...fairEnv } = env;
  const fairConfig = loadConfig(fairEnv);
  const fairSlots = fairConfig.workerConcurrency;
  const aLimit = fairConfig.runs.teamConcurrency.pro;
  const fairWorker = svc.child('fairness worker', await startAppChild('worker', { ...fairEnv, BENCH_WORKERS: 'none' }));
  const fairness = await measureFairness({
    url: database.url, apiUrl: apiChild.url, aKey: database.key, aTeamId: teamA, worker: fairWorker, pool, logger,
    settings: fair, slots: fairSlots, clients: settings.clients, timeoutMs: settings.timeoutMs,
  });
  await fairWorker.stop();
  if (fairness.aQueued.atLastBQueued === 0) throw new Error(`team A's backlog was gone before B's last run was queued: raise BENCH_FAIR_BACKLOG or BENCH_BUSY_MS`);
  process.stdout.write('  real tool: image_upscale, direct vs API...\n');
  // A second API process as `toolrun serve` runs, with metrics (the worker's runner phase is read
  // from them): the queue figures above were taken without that instrumentation.
  const realChild = svc.child('real-tool api', await startAppChild('api', { ...env, BENCH_WORKERS: 'all', TOOLRUN_METRICS_TOKEN: METRICS_TOKEN }));
  const realApi = new Api(realChild.url, database.key);
  // Closed before the database is dropped (WITH FORCE): its LISTEN client would die of 57P01 unheard.
  const notifier = svc.defer(new RunNotifier(database.url), (n) => n.close());
  await notifier.start();
  const real = await realTool(realApi, realChild, pool, notifier, dir, { ...settings, metricsToken: METRICS_TOKEN });
  realApi.close();
  api.close();
  const loadAfter = loadNote();
  await svc.cleanup();

  const notifyP50 = percentile(notify, 50);
  const queueRows = queue.map((q) => [
    q.label, q.processes, fmt(q.paced.p50, 2), fmt(q.paced.p99, 2), fmt(q.paced.max, 1), `${fmt(q.paced.p50 / notifyP50, 1)}x`, fmt(q.paced.execP50, 1),
    fmt(q.acceptPerS, 0), fmt(q.drainPerS, 0), fmt(q.e2ePerS, 0), fmt(q.e2ePerS / q.acceptPerS, 2), fmt(q.burstE2sP50, 0),
    `${fmt(q.cpuMsPerRun.server, 1)} + ${fmt(q.cpuMsPerRun.client, 1)}`,
  ]);
  const fx = real.fixed;
  const pt = real.parts;
  const spread = (p: { min: number; max: number }) => `${signedMs(p.min)} .. ${signedMs(p.max)}`;
  const m = real.median;
  const lines = [
    '',
    `Queue, trivial tool ${NOOP_TOOL}: paced ${settings.pacedRuns} runs every ${settings.paceMs} ms; bursts of ${settings.burstRuns} from ${settings.clients} clients; worker concurrency ${settings.workerConcurrency}`,
    table(
      ['set-up', 'procs', 'e2s p50 ms', 'e2s p99 ms', 'max ms', 'vs NOTIFY', 'exec p50', 'accept/s', 'drain/s', 'e2e runs/s', 'e2e/accept', 'burst e2s p50', 'CPU ms/run'],
      [
        ['baseline: NOTIFY round trip', '-', fmt(notifyP50, 2), fmt(percentile(notify, 99), 2), fmt(Math.max(...notify), 1), '1.0x', '-', '-', '-', '-', '-', '-', '-'],
        ['diag: one-row UPDATE commit', '-', fmt(percentile(commit, 50), 2), fmt(percentile(commit, 99), 2), fmt(Math.max(...commit), 1), '-', '-', '-', '-', '-', '-', '-', '-'],
        ...queueRows,
      ],
    ),
    `e2s = enqueue-to-start (runs.started_at - created_at); accept/s = starts the API took with no worker running (baseline);`,
    `drain/s = that backlog worked off; e2e = a burst started and finished with the workers running;`,
    `CPU ms/run (e2e burst) = server side (API + workers + ${database.server.startsWith('embedded') ? 'embedded PostgreSQL' : 'not PostgreSQL: DATABASE_URL'}) + this client.`,
    '',
    `Real tool: image_upscale, ${real.image}, ${settings.realRounds} paired rounds (calibration call ${fmt(real.calibrationMs, 0)} ms); ` +
      'wall ms = median; vs direct ms = median of the per-round differences from direct (rounds min .. max)',
    table(
      ['path', 'wall ms', 'vs direct ms', 'rounds', '% of direct', 'CPU s', 'CPU vs direct'],
      [
        ['direct: the runner call, in the API process', fmt(m.direct, 0), '-', '-', '-', fmt(m.directCpu, 2), '-'],
        ['API: created_at -> finished_at', fmt(m.created, 0), signedMs(fx.created.median), spread(fx.created), pct(fx.created.median / m.direct), fmt(m.apiCpu, 2), pct(m.apiCpu / m.directCpu - 1)],
        ['  of which queue (created -> started)', fmt(m.queue, 1), '', '', ''],
        ['  of which execution (started -> finished)', fmt(m.exec, 0), signedMs(fx.exec.median), spread(fx.exec), pct(fx.exec.median / m.direct)],
        ['API: before POST -> NOTIFY of the final commit', fmt(m.client, 0), signedMs(fx.client.median), spread(fx.client), pct(fx.client.median / m.direct)],
      ],
    ),
    `API - direct ms per round (side first): ${real.rounds.map((r) => `${signedMs(r.created - r.direct)} (${r.first})`).join(', ')}`,
    `fixed cost per run = API interval - its own runner phase (same run), median: ${fmt(pt.engine, 0)} ms = queue ${fmt(pt.queue, 0)} + inputs ${fmt(pt.inputs, 0)} + ` +
      `store ${fmt(pt.store, 0)} + rest ${fmt(pt.rest, 0)} (medians); runner phase - direct ${signedMs(pt.runnerDelta)} ms; after finished_at: commit ${fmt(pt.commit, 0)}, check ${fmt(pt.check, 0)} ms`,
    `engine steps alone on the same job's output: check (the encoder's report against the file's header) ${fmt(real.steps.probeMs, 0)} ms, sha256 ${fmt(real.steps.sha256Ms, 0)} ms, ` +
      `move into storage ${fmt(real.steps.moveMs, 0)} ms = ${pct((real.steps.probeMs + real.steps.sha256Ms + real.steps.moveMs) / m.direct)} of direct`,
    `CPU s: the API process (with its ffmpeg/ffprobe children) from POST to the final commit, and over the direct call`,
    '',
    `Fairness: ${fairSlots} worker slot${fairSlots === 1 ? '' : 's'} (the default here), team A at its plan's limit of ${aLimit}, ${fair.backlog} bench_busy runs of ${fair.busyMs} ms; B ${fair.bRuns} runs every ${fair.bPaceMs} ms per phase`,
    table(
      ['team B', 'e2s p50 ms', 'e2s p99 ms'],
      [
        ['idle system', fmt(fairness.idle.p50, 2), fmt(fairness.idle.p99, 2)],
        [`A's runs hold every slot, none queued (baseline)`, fmt(fairness.held.p50, 2), fmt(fairness.held.p99, 2)],
        [`while A's backlog drains`, fmt(fairness.busy.p50, 2), fmt(fairness.busy.p99, 2)],
      ],
    ),
    `A: ${fairness.aQueued.atLastBQueued} runs still queued when B's last run was queued, ${fairness.aQueued.atLastBStart} when it started; at most ${fairness.aPeakRunning} running at once; drained in ${fmt(fairness.aDrainS, 1)} s`,
    `A's runs started while one of B's waited: p50 ${fairness.overtaken.p50}, max ${fairness.overtaken.max} (slots: ${fairSlots})`,
    '',
    ...cpuLines(cpu),
    `load: before ${loadBefore.text}; after ${loadAfter.text}`,
    '',
  ];
  process.stdout.write(lines.join('\n') + '\n');
  const notifyBaseline = { label: 'bare NOTIFY round trip p50', value: notifyP50 };
  const short = (q: QueueResult) => (q.processes === '1' ? 'serve' : `${q.processes.slice(2)}_workers`);
  const result: BenchResult = {
    ...resultHeader('runs', 'Runs: the PostgreSQL work queue (enqueue-to-start, throughput) and the engine around a real job', { before: loadBefore, after: loadAfter }, database, settings),
    figures: [
      ...queue.map((q) =>
        figure({ name: `e2s_p50_${short(q)}`, figure: `enqueue-to-start p50, ${q.label}`, unit: 'ms', value: q.paced.p50, baseline: notifyBaseline,
          target: { on: 'value', op: '<', limit: P50_TARGET_MS } }),
      ),
      ...queue.map((q) =>
        figure({ name: `e2e_rate_${short(q)}`, figure: `runs started and finished per second, ${q.label}`, unit: 'runs/s', value: q.e2ePerS,
          baseline: { label: 'starts the API took, no worker running', value: q.acceptPerS } }),
      ),
      figure({ name: 'engine_fixed_cost', figure: `image_upscale ${real.image}: fixed cost per run, API (created_at -> finished_at) - its own runner call`, unit: 'ms',
        value: pt.engine, target: { on: 'value', op: '<', limit: FIXED_TARGET_MS },
        note: `median of ${real.rounds.length} rounds; queue ${fmt(pt.queue, 0)}, inputs ${fmt(pt.inputs, 0)}, store ${fmt(pt.store, 0)}, rest ${fmt(pt.rest, 0)} ms` }),
      figure({ name: 'fair_b_e2s_p50', figure: `team B's enqueue-to-start p50 while team A's backlog of ${fair.backlog} drains`, unit: 'ms',
        value: fairness.busy.p50, baseline: { label: "team B's while A's runs hold every slot, none queued", value: fairness.held.p50 },
        target: { on: 'ratio', op: '<=', limit: FAIR_TARGET },
        note: `B on an idle system ${fmt(fairness.idle.p50, 2)} ms; ${fairSlots} slot${fairSlots === 1 ? '' : 's'} (default), A at its limit of ${aLimit}; ${fairness.aQueued.atLastBQueued} of A's runs still queued when B's last run was queued; A's peak running ${fairness.aPeakRunning}` }),
      figure({ name: 'fair_b_overtaken_max', figure: "the most of team A's queued runs that started while one of team B's runs waited", unit: 'runs',
        value: fairness.overtaken.max, target: { on: 'value', op: '<=', limit: fairSlots },
        note: `p50 ${fairness.overtaken.p50}; at most one per slot when teams take turns` }),
      ...cpuFigures(cpu),
      figure({ name: 'engine_vs_direct', figure: 'diag: the same, API (created_at -> finished_at) - the runner called directly, paired rounds', unit: 'ms',
        value: fx.created.median, note: `median of ${real.rounds.length} per-round differences, ${spread(fx.created)}; ${pct(fx.created.median / m.direct)} of the direct ` +
          `${fmt(m.direct, 0)} ms job; runner in the API - direct ${signedMs(pt.runnerDelta)} ms; client's interval - direct ${signedMs(fx.client.median)} ms` }),
    ],
    charts: [
      {
        id: 'enqueue-to-start',
        title: `Enqueue-to-start of ${settings.pacedRuns} paced ${NOOP_TOOL} runs, per set-up`,
        unit: 'ms',
        series: [
          ...queue.map((q) => ({ label: q.label, role: 'measured' as const, samples: compactSamples(q.pacedE2sMs) })),
          { label: 'NOTIFY round trip (pg_notify -> LISTENing client)', role: 'baseline', samples: compactSamples(notify) },
        ],
      },
      {
        id: 'fairness',
        title: `Team B's enqueue-to-start with ${fairSlots} slot${fairSlots === 1 ? '' : 's'}: while team A's backlog of ${fair.backlog} drains, while A's runs hold every slot, idle`,
        unit: 'ms',
        series: [
          { label: "while A's backlog drains", role: 'measured', samples: compactSamples(fairness.busy.samples) },
          { label: "A's runs hold every slot, none queued", role: 'baseline', samples: compactSamples(fairness.held.samples) },
          { label: 'idle system', role: 'measured', samples: compactSamples(fairness.idle.samples) },
        ],
      },
      {
        id: 'real-tool',
        title: `image_upscale ${real.image}: API vs direct, per round`,
        unit: 'ms',
        series: [
          { label: 'through the API (created_at -> finished_at)', role: 'measured', samples: real.rounds.map((r) => r.created) },
          { label: 'runner called directly', role: 'baseline', samples: real.rounds.map((r) => r.direct) },
        ],
      },
    ],
    notes: [
      `CPU per run (issue 37): ${cpu.settings.runs} ${NOOP_TOOL} runs over ${cpu.settings.teams} teams, ${cpu.settings.inFlight} starts in flight, ` +
        `${cpu.settings.slots} slot(s), on a PostgreSQL of the benchmark's own (pg_stat_statements preloaded), against ${cpu.settings.runs} no-op ` +
        'graphile-worker jobs on the same server in the same run; the machine\'s load weighs on both alike, so the ratio is the figure to compare.',
      `Queue: trivial tool ${NOOP_TOOL} (no inputs, no outputs); ${settings.pacedRuns} runs paced every ${settings.paceMs} ms to idle workers; ` +
        `bursts of ${settings.burstRuns} starts from ${settings.clients} clients; worker concurrency ${settings.workerConcurrency}.`,
      'Enqueue-to-start = runs.started_at - created_at (both PostgreSQL now()). Its baseline is a bare NOTIFY round trip, the floor ' +
        'for a worker woken by LISTEN/NOTIFY; the target is on the value itself.',
      `Throughput baseline: starts/s the API took with no worker running (the engine cannot finish runs faster than the API takes them).`,
      `Real job: image_upscale sized to ~${settings.realSeconds} s here, uploaded once before the rounds; ${settings.realRounds} round(s), both sides back to back ` +
        `alternating which goes first. Fixed cost per run = created_at -> finished_at minus the runner phase of the same run, median (target < ${FIXED_TARGET_MS} ms); ` +
        'against the runner called directly, the median of the per-round differences (diag). ' +
        `Queue part ${fmt(m.queue, 1)} ms, execution ${fmt(m.exec, 0)} ms (medians); engine output steps alone ${fmt(real.steps.probeMs + real.steps.sha256Ms + real.steps.moveMs, 0)} ms.`,
    ],
    details: {
      notify_round_trip_ms: { p50: notifyP50, p99: percentile(notify, 99) },
      commit_ms: { p50: percentile(commit, 50), p99: percentile(commit, 99) },
      queue: queue.map(({ pacedE2sMs: _s, ...q }) => q),
      fairness: { settings: { ...fair, slots: fairSlots, a_limit: aLimit }, overtaken: fairness.overtaken, idle: { p50: fairness.idle.p50, p99: fairness.idle.p99 },
        held: { p50: fairness.held.p50, p99: fairness.held.p99 }, busy: { p50: fairness.busy.p50, p99: fairness.busy.p99 },
        a_queued: fairness.aQueued, a_peak_running: fairness.aPeakRunning, a_drain_s: fairness.aDrainS },
      real_tool: { tool: 'image_upscale', ...real, target: { fixed_ms: FIXED_TARGET_MS } },
      cpu_per_run: cpu,
    },
  };
  finish(result);
}

runBench('runs', () => withBenchService('runs', {}, main));
