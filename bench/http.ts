/**
 * `npm run bench:http`: the authenticated GET /v1/me against a bare Fastify route answering the
 * same JSON (issue 2), what each costs per request (issue 29: CPU time from /proc, the target;
 * instructions under callgrind, bench/lib/http-instructions.ts), throughput and latency, and the
 * API server's idle RSS. Not a test.
 *
 * Both servers run as child processes (bench/server.ts); autocannon runs here. Targets are
 * interleaved round by round and medians are reported, because the machine is small and noisy.
 *
 * Environment: DATABASE_URL (else an embedded PostgreSQL in a temp dir), BENCH_DURATION (s, 10),
 * BENCH_WARMUP (s, 3), BENCH_ROUNDS (3), BENCH_CONNECTIONS (50), BENCH_PIPELINING (1),
 * BENCH_LOG_LEVEL (the API's LOG_LEVEL, warn), BENCH_PROBE=0 to skip the SQL-only diagnostic,
 * BENCH_CALLGRIND=0 to skip the instruction counts, BENCH_CG_WARMUP (20000), BENCH_CG_WINDOWS (14, the most a series takes),
 * BENCH_CG_REQUESTS (2000), BENCH_CG_NODE_ARGS (node flags of both servers under callgrind; see
 * bench/lib/http-instructions.ts), BENCH_API_NODE_ARGS (node flags of the API child in the timed rounds).
 */
import fs from 'node:fs';
import autocannon from 'autocannon';
import pg from 'pg';
import { startApiChild, startServerChild, type ServerChild } from './lib/children.js';
import type { BenchDatabase } from './lib/db.js';
import { npmStartIdleRss, type NpmStartRss } from './lib/npm-start.js';
import { countInstructions, instructionSettings, SETTLE_RUN, SETTLE_SPREAD, type CountedTarget, type InstructionResult } from './lib/http-instructions.js';
import { probeAuthQuery, type ProbeResult } from './lib/pg-probe.js';
import { callgrindVersion, cpuMeter } from './lib/request-cost.js';
import { envInt, figure, finish, fmt, loadNote, median, resultHeader, sleep, type BenchResult, runBench } from './lib/report.js';
import { withBenchService, type BenchService } from './lib/service.js';
import type { Point } from './lib/svg.js';

/**
 * The authenticated request costs at most 1/0.6 of the bare one. Issue 2 set 0.6 on throughput;
 * issue 29 moved it to CPU time per request: throughput ratios moved with how much of the two
 * cores the load generator took (0.648 on one machine, 0.429 on another for the same code).
 */
/** How many windows each server's series took, and whether it settled. */
const settleText = (r: InstructionResult) =>
  (['bare', 'healthz', 'me'] as const).map((k) => `${k} ${r[k].windows.length}${r[k].settled ? '' : ', not settled: the later half'}`).join('; ');

const RATIO_TARGET = 0.6;
/** The authenticated p99 at most this many times the bare p99 (issue 16). */
const P99_RATIO_TARGET = 3;
const RSS_TARGET_MB = 120;

const settings = {
  durationS: envInt('BENCH_DURATION', 10),
  warmupS: envInt('BENCH_WARMUP', 3),
  rounds: Math.max(1, envInt('BENCH_ROUNDS', 3)),
  connections: envInt('BENCH_CONNECTIONS', 50),
  pipelining: Math.max(1, envInt('BENCH_PIPELINING', 1)),
  apiLogLevel: process.env.BENCH_LOG_LEVEL || 'warn',
  /** BENCH_API_NODE_ARGS: node flags of the API child (space-separated), for a look inside it: `--cpu-prof --cpu-prof-dir=/tmp/prof`. */
  apiNodeArgs: (process.env.BENCH_API_NODE_ARGS ?? '').split(' ').filter(Boolean),
  settleS: 5,
  /** BENCH_CALLGRIND=0 skips the instruction counts (valgrind, a few minutes). */
  callgrind: process.env.BENCH_CALLGRIND !== '0',
  instructions: instructionSettings(),
};

interface Target {
  id: 'bare' | 'healthz' | 'me';
  label: string;
  url: string;
  headers: Record<string, string>;
  /** The server process answering it. */
  pid: number;
}

interface Run {
  reqPerSec: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
  /** The latency percentiles autocannon's HDR histogram reports, min and max included. */
  latency: Point[];
  /** CPU time per answered request, µs: the server process (all threads), and PostgreSQL's processes. */
  serverCpuUs: number;
  pgCpuUs: number;
}

/** MiB (2^20 bytes), as top and ps count; the report also shows decimal MB. */
const mb = (bytes: number) => bytes / (1024 * 1024);

const PERCENTILE_KEYS = [
  [0.001, 'p0_001'], [0.01, 'p0_01'], [0.1, 'p0_1'], [1, 'p1'], [2.5, 'p2_5'], [10, 'p10'], [25, 'p25'], [50, 'p50'],
  [75, 'p75'], [90, 'p90'], [97.5, 'p97_5'], [99, 'p99'], [99.9, 'p99_9'], [99.99, 'p99_99'], [99.999, 'p99_999'],
] as const;

function latencyCurve(h: autocannon.Histogram): Point[] {
  const points: Point[] = [{ p: 0, value: h.min }];
  for (const [p, key] of PERCENTILE_KEYS) {
    const v = h[key];
    if (typeof v === 'number') points.push({ p, value: v });
  }
  points.push({ p: 100, value: h.max });
  return points;
}

/** Rounds' percentile curves as one: the median value at each percentile. */
function medianCurve(runs: Run[]): Point[] {
  const first = runs[0]?.latency ?? [];
  return first.map((q, i) => ({ p: q.p, value: median(runs.map((r) => r.latency[i]?.value ?? Number.NaN)) }));
}

/** The bench database's PostgreSQL backends (the API's pool and listener), when they run on this machine. */
async function backendPids(database: BenchDatabase): Promise<number[]> {
  const client = new pg.Client({ connectionString: database.url });
  await client.connect();
  try {
    const { rows } = await client.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = $1::text AND pid <> pg_backend_pid()', [database.name]);
    return rows.map((r) => r.pid).filter((pid) => fs.existsSync(`/proc/${pid}`));
  } finally {
    await client.end();
  }
}

async function measure(target: Target, durationS: number, database: BenchDatabase): Promise<Run> {
  const server = cpuMeter(() => [target.pid]);
  let pgPids = await backendPids(database);
  const postgres = cpuMeter(() => pgPids);
  const r = await autocannon({
    url: target.url,
    headers: target.headers,
    connections: settings.connections,
    pipelining: settings.pipelining,
    duration: durationS,
  });
  const serverNs = server();
  // Backends that opened during the round count from their start.
  pgPids = [...new Set([...pgPids, ...(await backendPids(database))])];
  const pgNs = postgres();
  const answered = Math.max(1, r.requests.total);
  return {
    serverCpuUs: serverNs / 1000 / answered,
    pgCpuUs: pgNs / 1000 / answered,
    reqPerSec: r.requests.average,
    p50: r.latency.p50,
    p99: r.latency.p99,
    non2xx: r.non2xx,
    errors: r.errors + r.timeouts,
    latency: latencyCurve(r.latency),
  };
}

/** Samples RSS once a second for a few seconds after load stops; reports the last sample. */
async function idleRss(child: ServerChild): Promise<number> {
  let last = 0;
  for (let i = 0; i < settings.settleS; i++) {
    await sleep(1000);
    last = await child.rss();
  }
  return last;
}

async function fetchJson(url: string, headers: Record<string, string>): Promise<string> {
  const res = await fetch(url, { headers });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`GET ${url} answered ${res.status}: ${text}`);
  return text;
}

async function main(svc: BenchService): Promise<void> {
  const loadBefore = loadNote();
  process.stdout.write(`setting up the database and the two servers (${loadBefore.text})...\n`);
  const database = await svc.database();
  const auth = { authorization: `Bearer ${database.key}` };
  const api = svc.child('api', await startApiChild(database.url, settings.apiLogLevel, {}, { nodeArgs: settings.apiNodeArgs }));
  const meBody = await fetchJson(`${api.url}/v1/me`, auth);
  const bare = svc.child('bare', await startServerChild('bare', 'bare', { ...process.env, BENCH_BODY: meBody }));
  if ((await fetchJson(`${bare.url}/v1/me`, auth)) !== meBody) throw new Error('the bare route does not answer the same JSON');

  // Same request bytes for every target: the bare server and /healthz ignore the header.
  const targets: Target[] = [
    { id: 'bare', label: 'bare Fastify GET /v1/me', url: `${bare.url}/v1/me`, headers: auth, pid: bare.pid },
    { id: 'healthz', label: 'API GET /healthz (no key, diag)', url: `${api.url}/healthz`, headers: auth, pid: api.pid },
    { id: 'me', label: 'API GET /v1/me (key)', url: `${api.url}/v1/me`, headers: auth, pid: api.pid },
  ];
  process.stdout.write(
    `database: ${database.server}\nrate limit: ${database.rateLimitNote}\n` +
      `API LOG_LEVEL=${settings.apiLogLevel}; ${settings.connections} connections, pipelining ${settings.pipelining}, ` +
      `${settings.warmupS} s warm-up, ${settings.rounds} rounds of ${settings.durationS} s per target\n`,
  );

  for (const t of targets) {
    if (t.id === 'me') await database.refill();
    await measure(t, settings.warmupS, database);
  }
  const rssAfterWarmup = { api: await idleRss(api), bare: await bare.rss() };

  const runs = new Map<Target['id'], Run[]>(targets.map((t) => [t.id, []]));
  for (let round = 1; round <= settings.rounds; round++) {
    for (const t of targets) {
      if (t.id === 'me') await database.refill();
      const run = await measure(t, settings.durationS, database);
      runs.get(t.id)?.push(run);
      process.stdout.write(
        `  round ${round} ${t.label.padEnd(32)} ${run.reqPerSec.toFixed(0).padStart(7)} req/s` +
          `${run.non2xx || run.errors ? `  (${run.non2xx} non-2xx, ${run.errors} errors)` : ''}\n`,
      );
    }
  }
  const rssAfterLoad = { api: await idleRss(api), bare: await bare.rss() };
  const apiHeapUsed = await api.heapUsed();

  let probe: ProbeResult | null = null;
  if (process.env.BENCH_PROBE !== '0') {
    await database.refill();
    probe = await probeAuthQuery(database.url, database.key, svc.logger, {
      seconds: Math.min(5, settings.durationS),
      concurrency: settings.connections,
      poolSize: 20,
    });
  }
  // The counts below run their own servers under callgrind; these would only compete with them.
  for (const c of [api, bare]) await c.stop().catch(() => undefined);
  const valgrind = settings.callgrind ? await callgrindVersion() : null;
  let instructions: InstructionResult | null = null;
  if (valgrind) {
    const s = settings.instructions;
    process.stdout.write(`instructions: ${valgrind} callgrind, ${s.warmup} warm-up requests, then ${s.windows} windows of ${s.requests} one at a time...\n`);
    const db = database;
    instructions = await countInstructions({ databaseUrl: db.url, key: db.key, meBody, logLevel: settings.apiLogLevel, settings: s, refill: () => db.refill() });
  }
  await database.refill();
  const npmStart: NpmStartRss = await npmStartIdleRss({ databaseUrl: database.url, key: database.key, requests: 2000, settleMs: settings.settleS * 1000 });
  await svc.cleanup();

  const summary = targets.map((t) => {
    const rs = runs.get(t.id) ?? [];
    return {
      id: t.id,
      label: t.label,
      reqPerSec: median(rs.map((r) => r.reqPerSec)),
      p50Ms: median(rs.map((r) => r.p50)),
      p99Ms: median(rs.map((r) => r.p99)),
      failures: rs.reduce((n, r) => n + r.non2xx + r.errors, 0),
      serverCpuUs: median(rs.map((r) => r.serverCpuUs)),
      pgCpuUs: median(rs.map((r) => r.pgCpuUs)),
      runs: rs,
    };
  });
  const get = (id: Target['id']) => summary.find((s) => s.id === id);
  const bareRps = get('bare')?.reqPerSec ?? 0;
  const meRps = get('me')?.reqPerSec ?? 0;
  const clean = summary.every((s) => s.failures === 0);
  const idleRssMb = mb(Math.max(rssAfterWarmup.api, rssAfterLoad.api));
  const loadAfter = loadNote();

  const lines = [
    '',
    `${'target'.padEnd(34)}${'req/s'.padStart(10)}${'p50 ms'.padStart(9)}${'p99 ms'.padStart(9)}${'CPU µs/req'.padStart(12)}${'(PG)'.padStart(7)}  runs (req/s)`,
    ...summary.map(
      (s) =>
        `${s.label.padEnd(34)}${s.reqPerSec.toFixed(0).padStart(10)}${s.p50Ms.toFixed(1).padStart(9)}${s.p99Ms.toFixed(1).padStart(9)}` +
        `${(s.serverCpuUs + s.pgCpuUs).toFixed(2).padStart(12)}${s.pgCpuUs.toFixed(2).padStart(7)}  ` +
        `${s.runs.map((r) => r.reqPerSec.toFixed(0)).join(' / ')}${s.failures ? `  ${s.failures} FAILED REQUESTS` : ''}`,
    ),
    `API RSS: after warm-up ${mb(rssAfterWarmup.api).toFixed(1)} MiB, after load ${mb(rssAfterLoad.api).toFixed(1)} MiB ` +
      `(= ${((idleRssMb * 1048576) / 1e6).toFixed(1)} MB decimal), V8 heap used ${mb(apiHeapUsed).toFixed(1)} MiB; ` +
      `bare server ${mb(rssAfterLoad.bare).toFixed(1)} MiB; PostgreSQL not counted`,
    ...(probe
      ? [`diag: auth+bucket SQL alone, ${settings.connections} loops over a 20-connection pool: ` +
          `${probe.queriesPerSecond.toFixed(0)} queries/s, mean ${probe.meanMs.toFixed(2)} ms`]
      : []),
    ...(instructions
      ? [`instructions per request, event-loop thread (all threads): bare ${instructions.bare.main.toFixed(0)} (${instructions.bare.all.toFixed(0)}), ` +
          `/healthz ${instructions.healthz.main.toFixed(0)} (${instructions.healthz.all.toFixed(0)}), /v1/me ${instructions.me.main.toFixed(0)} (${instructions.me.all.toFixed(0)})`]
      : []),
  ];
  process.stdout.write(lines.join('\n') + '\n');

  const invalid = clean ? null : 'some requests failed, so the numbers are not valid';
  const bareT = get('bare');
  const me = get('me');
  const bareBaseline = (value: number | undefined) => ({ label: 'bare Fastify GET /v1/me', value: value ?? Number.NaN });
  const cpuUs = (t: { serverCpuUs: number; pgCpuUs: number } | undefined) => (t ? t.serverCpuUs + t.pgCpuUs : Number.NaN);
  // Each round's ratio against the bare server's run of the same round (targets interleave round by round).
  const perRound = (id: Target['id'], f: (r: Run) => number) => (get(id)?.runs ?? []).map((r, i) => f(r) / f(bareT?.runs[i] ?? r));
  const cpuRun = (r: Run) => r.serverCpuUs + r.pgCpuUs;
  // The counted windows of both servers, window by window (as many as both have).
  const windowRatios = (t: CountedTarget | undefined) => {
    if (!t || !instructions) return [];
    const bare = instructions.bare.counted;
    return t.counted.slice(0, bare.length).map((w, i) => w.main / (bare[i]?.main ?? Number.NaN));
  };
  const result: BenchResult = {
    ...resultHeader('http', 'HTTP: authenticated GET /v1/me against a bare Fastify route answering the same JSON', { before: loadBefore, after: loadAfter }, database, settings),
    figures: [
      figure({ name: 'me_cpu_per_request', figure: 'GET /v1/me with a key, CPU time per request (API process + PostgreSQL, /proc)', unit: 'µs',
        value: cpuUs(me), baseline: bareBaseline(cpuUs(bareT)), target: { on: 'ratio', op: '<=', limit: 1 / RATIO_TARGET }, invalid, roundRatios: perRound('me', cpuRun),
        note: `bare/key ${fmt(cpuUs(bareT) / cpuUs(me), 3)}, target ≥ ${RATIO_TARGET}` }),
      ...(instructions
        ? [
            figure({ name: 'me_instructions', figure: 'GET /v1/me with a key, instructions per request, event-loop thread (callgrind)', unit: '',
              value: instructions.me.main, baseline: bareBaseline(instructions.bare.main), roundRatios: windowRatios(instructions.me), note: `all threads ${fmt(instructions.me.all, 0)} vs ${fmt(instructions.bare.all, 0)}` }),
            figure({ name: 'healthz_instructions', figure: 'diag: GET /healthz (no key), instructions per request, event-loop thread (callgrind)', unit: '',
              value: instructions.healthz.main, baseline: bareBaseline(instructions.bare.main), roundRatios: windowRatios(instructions.healthz), note: `all threads ${fmt(instructions.healthz.all, 0)}` }),
          ]
        : []),
      figure({ name: 'healthz_cpu_per_request', figure: 'diag: GET /healthz (no key), CPU time per request (API process, /proc)', unit: 'µs',
        value: cpuUs(get('healthz')), baseline: bareBaseline(cpuUs(bareT)), roundRatios: perRound('healthz', cpuRun) }),
      figure({ name: 'me_throughput', figure: 'diag: GET /v1/me with a key, throughput', unit: 'req/s', value: meRps, baseline: bareBaseline(bareRps), roundRatios: perRound('me', (r) => r.reqPerSec) }),
      figure({ name: 'me_latency_p50', figure: 'GET /v1/me with a key, latency p50', unit: 'ms', value: me?.p50Ms ?? Number.NaN, baseline: bareBaseline(bareT?.p50Ms), roundRatios: perRound('me', (r) => r.p50) }),
      figure({ name: 'me_latency_p99', figure: 'GET /v1/me with a key, latency p99', unit: 'ms', value: me?.p99Ms ?? Number.NaN, baseline: bareBaseline(bareT?.p99Ms),
        target: { on: 'ratio', op: '<=', limit: P99_RATIO_TARGET }, invalid, roundRatios: perRound('me', (r) => r.p99) }),
      figure({ name: 'healthz_throughput', figure: 'diag: GET /healthz (no key), throughput', unit: 'req/s', value: get('healthz')?.reqPerSec ?? Number.NaN, baseline: bareBaseline(bareRps), roundRatios: perRound('healthz', (r) => r.reqPerSec) }),
      figure({ name: 'idle_rss', figure: `idle RSS of \`npm start\` (toolrun serve with its workers, ${npmStart.compiled ? 'compiled dist/' : 'sources through tsx'}) after 2000 requests`,
        unit: 'MiB', value: mb(npmStart.rssBytes), baseline: { label: 'bare Fastify server after load', value: mb(rssAfterLoad.bare) },
        target: { on: 'value', op: '<', limit: RSS_TARGET_MB } }),
      figure({ name: 'idle_rss_tsx', figure: 'diag: API server idle RSS run from the sources through tsx (tests, development)', unit: 'MiB', value: idleRssMb,
        baseline: { label: 'bare Fastify server after load', value: mb(rssAfterLoad.bare) } }),
    ],
    charts: [
      {
        id: 'latency',
        title: `HTTP latency under load (${settings.connections} connections, median of ${settings.rounds} round(s))`,
        unit: 'ms',
        series: [
          { label: 'API GET /v1/me (key)', role: 'measured', percentiles: medianCurve(me?.runs ?? []) },
          { label: 'API GET /healthz (no key)', role: 'measured', percentiles: medianCurve(get('healthz')?.runs ?? []) },
          { label: 'bare Fastify GET /v1/me', role: 'baseline', percentiles: medianCurve(bareT?.runs ?? []) },
        ],
      },
    ],
    notes: [
      'CPU time per request: each target\'s server process (every thread, /proc/<pid>/task/*/schedstat) plus the bench database\'s PostgreSQL backends (pg_stat_activity; when the server runs on this machine), ' +
        'over a measured round, divided by the requests answered in it; medians of the rounds. The target is on it (bare/key >= 0.6): unlike throughput, it does not move with how much of the cores the load generator takes.',
      ...(instructions
        ? [`Instructions: ${valgrind ?? 'valgrind'} callgrind, each server alone under it (the API as \`serve --no-workers\`), ${settings.instructions.warmup} warm-up requests, then ` +
            `windows of ${settings.instructions.requests} requests sent one at a time on one connection until ${SETTLE_RUN} windows in a row agree within ${SETTLE_SPREAD * 100}% ` +
            `(at most ${settings.instructions.windows}), the median of those, per request (windows taken: ${settleText(instructions)}). ` +
            'The event-loop thread is the figure (it serves the requests); all threads adds V8\'s compiler and collector helpers. User space only: the kernel\'s share (the socket writes) is in the CPU time. ' +
            `Both servers run with the same node flags (${settings.instructions.nodeArgs.join(' ') || 'none'}); the API's token reservations and key cache last a minute under callgrind, ` +
            'so a request that takes ~50 ms there costs the PostgreSQL take of every 100th request, as at full speed, not one a second. ' +
            'It moves with the Node.js and V8 build; the spread is over the windows counted.']
        : ['Instructions: not counted (BENCH_CALLGRIND=0, or valgrind is not installed).']),
      `autocannon, ${settings.connections} connections, pipelining ${settings.pipelining}, ${settings.warmupS} s warm-up, ` +
        `${settings.rounds} round(s) of ${settings.durationS} s per target, interleaved; medians of the rounds.`,
      'Both servers are child processes of the benchmark; the baseline is a plain Fastify instance answering the same JSON ' +
        'through the same response schema. Same request bytes for every target.',
      `Rate limit: ${database.rateLimitNote}.`,
      ...(probe ? [`diag: the auth + token-bucket SQL alone runs at ${probe.queriesPerSecond.toFixed(0)} queries/s (mean ${probe.meanMs.toFixed(2)} ms), a ceiling for authenticated requests.`] : []),
      'RSS is in MiB (2^20 bytes), as top and ps count; PostgreSQL is not counted. The idle RSS target applies to what ' +
        `\`npm start\` runs: the prestart build, then \`node ${npmStart.args.join(' ')}\` (its start script) from dist/; ` +
        'the tsx figure is what tests and development use.',
    ],
    details: {
      targets: summary,
      npm_start: { compiled: npmStart.compiled, args: npmStart.args, rss_mib: mb(npmStart.rssBytes) },
      idle_rss_mib: { api_after_warmup: mb(rssAfterWarmup.api), api_after_load: mb(rssAfterLoad.api), bare_after_load: mb(rssAfterLoad.bare), api_heap_used: mb(apiHeapUsed) },
      auth_sql_probe: probe,
      instructions,
    },
  };
  finish(result);
}

runBench('http', () => withBenchService('http', { watchdogMinutes: null }, main));
