/**
 * `npm run bench:scale [-- --runs N]`: the service on a team with a long past (issue 37). Not a test.
 *
 * One run, two databases side by side, each with its own API process (and run worker): young (a
 * team's first BENCH_SCALE_YOUNG runs, over its first day) and old (the same, then N more past
 * runs over BENCH_SCALE_DAYS days, set-based in chunks by bench/lib/scale-seed.ts: inputs, ledger
 * rows, outputs, events, webhook deliveries and attempts; the usage roll-up rebuilt with migration
 * 0022's back-fill; VACUUM ANALYZE). The requests alternate between the two, so a machine whose
 * load changes meanwhile (other work on it) weighs on both sides alike:
 *   every /v1 read (the run list with its filters and cursor, a run, an output URL, me, tools,
 *   webhook endpoints and deliveries) and every GET of the console's API with a signed-in session,
 *   BENCH_SCALE_ROUNDS requests per side after 3 warm-ups, p50;
 *   start-to-claim: BENCH_SCALE_CLAIMS bench_noop runs per side started one every 100 ms to an
 *   idle worker (the POST's own time, and runs.started_at - created_at).
 * At the end, EXPLAIN (ANALYZE, BUFFERS) of the heaviest queries on the old database is printed
 * and kept in the results' details (bench/lib/scale-explain.ts).
 * Targets: each old p50 within 1.5x of the young one; the Usage page (GET /console/api/usage)
 * under 100 ms. Also: the database's growth per million runs, the back-fill's time, and (diag)
 * the Usage page's old ledger-scanning queries on the old database.
 *
 * Environment: DATABASE_URL (else an embedded PostgreSQL), BENCH_SCALE_RUNS (1,000,000; or
 * --runs), BENCH_SCALE_DAYS (90), BENCH_SCALE_CHUNK (50,000), BENCH_SCALE_YOUNG (1,000),
 * BENCH_SCALE_ROUNDS (30), BENCH_SCALE_CLAIMS (30), BENCH_MAX_MINUTES (15 + 12 per million runs).
 */
import path from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { createSession } from '../src/console/sessions.js';
import { insertMember } from '../src/teams/repository.js';
import { usageByDayFromLedger, usageByToolFromLedger, usageDrift } from '../src/console/usage-ledger.js';
import { Api, prepareTeam, waitFinal, e2s } from './lib/api.js';
import { startAppChild } from './lib/app-children.js';
import { setupBenchDatabase, type BenchDatabase } from './lib/db.js';
import { NOOP_TOOL } from './lib/bench-tools.js';
import { envInt, figure, finish, fmt, loadNote, machine, percentile, resultHeader, runBench, sleep, table, type BenchResult, type Figure, type LoadNote } from './lib/report.js';
import { rebuildUsage, seedRuns, type SeedTarget } from './lib/scale-seed.js';
import { explainHeaviest } from './lib/scale-explain.js';
import { serviceEnv, withBenchService, type BenchService } from './lib/service.js';

const RATIO_TARGET = 1.5;
const USAGE_TARGET_MS = 100;
const USAGE_PATH = '/console/api/usage';

const cli = parseArgs({ options: { runs: { type: 'string' } }, strict: false }).values;
const runsArg = typeof cli.runs === 'string' ? Number(cli.runs.replaceAll('_', '')) : Number.NaN;
const settings = {
  runs: Number.isInteger(runsArg) && runsArg > 0 ? runsArg : envInt('BENCH_SCALE_RUNS', 1_000_000, 1),
  days: envInt('BENCH_SCALE_DAYS', 90, 1),
  chunk: envInt('BENCH_SCALE_CHUNK', 50_000, 100),
  young: envInt('BENCH_SCALE_YOUNG', 1_000, 10),
  rounds: envInt('BENCH_SCALE_ROUNDS', 30, 3),
  claims: envInt('BENCH_SCALE_CLAIMS', 30, 1),
};
const millions = settings.runs / 1e6;

interface Probe {
  name: string;
  path: string;
  /** 'v1': the team's key; 'console': a signed-in owner's session cookie. */
  as: 'v1' | 'console';
  /** The console probe's own session: the console allows a member 600 requests a minute. */
  cookie?: string;
}

interface Timing {
  p50: number;
  p90: number;
}

interface Side {
  label: string;
  url: string;
  key: string;
  cookie: string;
  client: Api;
  pool: pg.Pool;
  seeder: pg.Client;
  target: SeedTarget;
  probes: Probe[];
}

/** Each probe on both sides, alternating young and old request by request: 3 warm-ups each, then `rounds` each. */
async function timeProbes(sides: [Side, Side], rounds: number): Promise<[Map<string, Timing>, Map<string, Timing>]> {
  const out: [Map<string, Timing>, Map<string, Timing>] = [new Map(), new Map()];
  const count = sides[0].probes.length;
  for (let k = 0; k < count; k++) {
    const samples: [number[], number[]] = [[], []];
    for (let i = 0; i < rounds + 3; i++) {
      for (const j of [0, 1] as const) {
        const side = sides[(i + j) % 2 === 0 ? 0 : 1];
        const p = side.probes[k];
        if (!p) throw new Error(`no probe ${k}`);
        const headers: Record<string, string> = p.as === 'v1' ? { authorization: `Bearer ${side.key}` } : { cookie: `toolrun_session=${p.cookie ?? side.cookie}` };
        const t0 = performance.now();
        const res = await fetch(`${side.url}${p.path}`, { headers });
        const text = await res.text();
        const ms = performance.now() - t0;
        if (res.status !== 200) throw new Error(`GET ${p.path} (${side.label}) answered ${res.status}: ${text.slice(0, 300)}`);
        if (i >= 3) samples[side === sides[0] ? 0 : 1].push(ms);
      }
    }
    const name = sides[0].probes[k]?.name ?? '';
    for (const j of [0, 1] as const) out[j].set(name, { p50: percentile(samples[j], 50), p90: percentile(samples[j], 90) });
  }
  return out;
}

/** bench_noop runs started one every 100 ms to each side's idle worker, alternating: the POST's time and enqueue-to-start. */
async function startToClaim(sides: [Side, Side], n: number): Promise<{ post: number; claim: number }[]> {
  const ids: [string[], string[]] = [[], []];
  const posts: [number[], number[]] = [[], []];
  for (let i = 0; i < n; i++) {
    for (const j of [0, 1] as const) {
      const t0 = performance.now();
      ids[j].push((await sides[j].client.startRun(NOOP_TOOL, {})).id);
      posts[j].push(performance.now() - t0);
      await sleep(Math.max(0, 50 - (performance.now() - t0)));
    }
  }
  const out: { post: number; claim: number }[] = [];
  for (const j of [0, 1] as const) out.push({ post: percentile(posts[j], 50), claim: percentile(e2s(await waitFinal(sides[j].pool, ids[j], 120_000)), 50) });
  return out;
}

const dbSize = async (pool: pg.Pool) => (await pool.query<{ n: number }>('SELECT pg_database_size(current_database()) AS n')).rows[0]?.n ?? 0;

async function timed(fn: () => Promise<unknown>, rounds: number): Promise<number> {
  const xs: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const t0 = performance.now();
    await fn();
    xs.push(performance.now() - t0);
  }
  return percentile(xs, 50);
}

/** One side: its API process (with a run worker), the team's webhook endpoint, a console session, the young seed. */
async function prepareSide(svc: BenchService, database: BenchDatabase, label: string): Promise<Side> {
  const teamId = await prepareTeam(database.url, database.keyId, svc.logger, { scopes: ['read', 'run', 'webhooks'] });
  const pool = svc.defer(new pg.Pool({ connectionString: database.url, max: 3 }), (p) => p.end());
  const api = svc.child(`api (${label})`, await startAppChild('api', serviceEnv(svc, database, {
    logLevel: 'warn',
    // Two sides, two API processes: each keeps its files apart.
    dataDir: path.join(svc.dir, `data-${label}`),
    set: {
      // The run worker claims the start-to-claim runs; no webhook worker posts their events anywhere.
      BENCH_WORKERS: 'runs',
      // The endpoint (never posted to) is on this machine: no DNS needed.
      TOOLRUN_ALLOW_PRIVATE_NETWORK: '1',
    },
  })));
  const client = svc.defer(new Api(api.url, database.key), (c) => c.close());
  const endpoint = await client.call<{ id: string }>('POST', '/v1/webhook-endpoints', { url: 'https://127.0.0.1:9/toolrun-hooks', events: ['run.succeeded'] }, 201);
  const memberId = (await pool.query<{ member_id: string }>('SELECT member_id FROM api_keys WHERE id = $1::uuid', [database.keyId])).rows[0]?.member_id ?? '';
  const session = await createSession(pool, memberId);
  const target: SeedTarget = { teamId, keyId: database.keyId, memberId, endpointId: endpoint.id };
  const seeder = svc.defer(new pg.Client({ connectionString: database.url }), (c) => c.end());
  await seeder.connect();
  await seedRuns(seeder, target, settings.young, 1, settings.chunk, () => undefined);
  // Fixed ids: the newest run with a ready output, and a cursor in the middle of the young runs.
  const recent = (await pool.query<{ run_id: string; asset_id: string }>(
    `SELECT r.id AS run_id, o.id AS asset_id FROM runs r JOIN run_outputs o ON o.run_id = r.id
      WHERE r.team_id = $1::uuid AND o.status = 'ready' ORDER BY r.created_at DESC LIMIT 1`, [teamId])).rows[0];
  const cursor = (await pool.query<{ id: string }>(
    `SELECT id FROM runs WHERE team_id = $1::uuid ORDER BY created_at DESC, id DESC OFFSET $2::integer LIMIT 1`, [teamId, Math.floor(settings.young / 2)])).rows[0];
  if (!recent || !cursor) throw new Error('the young seed left no run with a ready output');
  const probes = probesOf(recent, cursor.id, endpoint.id);
  for (const [i, p] of probes.entries()) {
    if (p.as !== 'console') continue;
    const member = await insertMember(pool, { teamId, email: `owner-${i}@bench.example`, role: 'owner' });
    p.cookie = (await createSession(pool, member.id)).token;
  }
  return { label, url: api.url, key: database.key, cookie: session.token, client, pool, seeder, target, probes };
}

function probesOf(recent: { run_id: string; asset_id: string }, cursor: string, endpointId: string): Probe[] {
  const longAgo = new Date(Date.now() - 100 * 86_400_000).toISOString();
  return [
    { name: 'v1 runs', path: '/v1/runs?limit=20', as: 'v1' },
    { name: 'v1 runs, cursor', path: `/v1/runs?limit=20&starting_after=${cursor}`, as: 'v1' },
    { name: 'v1 runs, status=failed', path: '/v1/runs?limit=20&status=failed', as: 'v1' },
    { name: 'v1 runs, tool_id=video_transition', path: '/v1/runs?limit=20&tool_id=video_transition', as: 'v1' },
    { name: 'v1 runs, status=running (none)', path: '/v1/runs?limit=20&status=running', as: 'v1' },
    // A tool the team has never run (bench_noop runs start after the reads), and a bound older than every run.
    { name: 'v1 runs, unused tool', path: `/v1/runs?limit=20&tool_id=${NOOP_TOOL}`, as: 'v1' },
    { name: 'v1 runs, created_before 100 days ago', path: `/v1/runs?limit=20&created_before=${encodeURIComponent(longAgo)}`, as: 'v1' },
    { name: 'v1 run', path: `/v1/runs/${recent.run_id}`, as: 'v1' },
    { name: 'v1 output url', path: `/v1/runs/${recent.run_id}/outputs/${recent.asset_id}/url`, as: 'v1' },
    { name: 'v1 me', path: '/v1/me', as: 'v1' },
    { name: 'v1 tools', path: '/v1/tools', as: 'v1' },
    { name: 'v1 webhook endpoints', path: '/v1/webhook-endpoints', as: 'v1' },
    { name: 'v1 webhook deliveries', path: `/v1/webhook-endpoints/${endpointId}/deliveries`, as: 'v1' },
    { name: 'console session', path: '/console/api/session', as: 'console' },
    { name: 'console overview', path: '/console/api/overview', as: 'console' },
    { name: 'console runs', path: '/console/api/runs', as: 'console' },
    { name: 'console runs, status=failed', path: '/console/api/runs?status=failed', as: 'console' },
    { name: 'console runs, status=running (none)', path: '/console/api/runs?status=running', as: 'console' },
    { name: 'console runs, unused tool', path: `/console/api/runs?tool_id=${NOOP_TOOL}`, as: 'console' },
    { name: 'console run', path: `/console/api/runs/${recent.run_id}`, as: 'console' },
    { name: 'console ledger', path: '/console/api/ledger', as: 'console' },
    { name: 'console usage', path: USAGE_PATH, as: 'console' },
    { name: 'console keys', path: '/console/api/keys', as: 'console' },
    { name: 'console members', path: '/console/api/members', as: 'console' },
    { name: 'console invites', path: '/console/api/invites', as: 'console' },
    { name: 'console tools', path: '/console/api/tools', as: 'console' },
    { name: 'console webhooks', path: '/console/api/webhooks', as: 'console' },
    { name: 'console webhook deliveries', path: `/console/api/webhooks/${endpointId}/deliveries`, as: 'console' },
  ];
}

/** Says so when the machine was busier than its cores while the bench ran. */
function loadedNote(before: LoadNote, after: LoadNote): string[] {
  const peak = Math.max(before.loadavg[0] ?? 0, after.loadavg[0] ?? 0);
  const cpus = machine().cpus;
  if (peak <= cpus) return [];
  return [`The machine was loaded by other work while this ran (1-minute load average up to ${fmt(peak, 1)} on ${cpus} CPUs): the alternating requests put it on both sides alike, ` +
    'but the absolute times are not those of a quiet machine, and a ratio near the target can move with it.'];
}

async function main(): Promise<void> {
  await withBenchService('scale', { watchdogMinutes: 15 + 12 * millions }, async (svc) => {
    const loadBefore = loadNote();
    process.stdout.write(`setting up (${loadBefore.text}); ${settings.runs.toLocaleString('en')} runs over ${settings.days} days...\n`);
    const oldDb = await svc.database();
    const youngDb = svc.defer(await setupBenchDatabase(svc.logger), (d) => d.teardown());
    const young = await prepareSide(svc, youngDb, 'young');
    const old = await prepareSide(svc, oldDb, 'old');
    const sides: [Side, Side] = [young, old];

    const seedStart = performance.now();
    let lastSaid = 0;
    await seedRuns(old.seeder, old.target, settings.runs, settings.days, settings.chunk, (done) => {
      if (performance.now() - lastSaid < 20_000 && done < settings.runs) return;
      lastSaid = performance.now();
      process.stdout.write(`  seeded ${done.toLocaleString('en')} runs (${fmt((performance.now() - seedStart) / 1000, 0)} s)\n`);
    });
    const seedS = (performance.now() - seedStart) / 1000;
    await rebuildUsage(young.seeder);
    const backfillMs = await rebuildUsage(old.seeder);
    const vacuumStart = performance.now();
    await young.seeder.query('VACUUM ANALYZE');
    await old.seeder.query('VACUUM ANALYZE');
    const vacuumS = (performance.now() - vacuumStart) / 1000;
    const sizeYoung = await dbSize(young.pool);
    const sizeOld = await dbSize(old.pool);
    process.stdout.write(`  seeded in ${fmt(seedS, 0)} s, back-fill ${fmt(backfillMs / 1000, 1)} s, VACUUM ANALYZE ${fmt(vacuumS, 0)} s; timing ${young.probes.length} reads, young and old alternating...\n`);
    const [youngT, oldT] = await timeProbes(sides, settings.rounds);
    const [youngClaim, oldClaim] = await startToClaim(sides, settings.claims);
    if (!youngClaim || !oldClaim) throw new Error('start-to-claim measured nothing');
    // Diag: what the Usage page's queries cost before the roll-up, and that the roll-up still equals them.
    const ledgerUsageMs = await timed(() => Promise.all([usageByDayFromLedger(old.pool, old.target.teamId), usageByToolFromLedger(old.pool, old.target.teamId)]), 3);
    const drift = await usageDrift(old.pool, old.target.teamId);
    if (drift.length) throw new Error(`the usage roll-up differs from the ledger: ${drift.join('; ')}`);
    const plans = await explainHeaviest(old.pool, old.target);
    const loadAfter = loadNote();
    await svc.cleanup();

    const youngLabel = `young database (${settings.young.toLocaleString('en')} runs)`;
    const mRuns = `${fmt(millions, millions < 1 ? 2 : 0)} M runs`;
    const probes = young.probes;
    const figures: Figure[] = probes.map((p) =>
      figure({ name: `p50_${p.name.replace(/[^a-z0-9]+/gi, '_').replace(/_+$/, '').toLowerCase()}`, figure: `GET ${p.path.replace(/[0-9a-f-]{36}/g, '{id}').replace(/created_before=[^&]+/, 'created_before={100 days ago}')} p50 with ${mRuns}`, unit: 'ms',
        value: oldT.get(p.name)?.p50 ?? Number.NaN, baseline: { label: youngLabel, value: youngT.get(p.name)?.p50 ?? Number.NaN },
        target: { on: 'ratio', op: '<=', limit: RATIO_TARGET } }),
    );
    figures.push(
      figure({ name: 'usage_page_ms', figure: `Usage page (GET ${USAGE_PATH}) p50 with ${mRuns}`, unit: 'ms', value: oldT.get('console usage')?.p50 ?? Number.NaN,
        target: { on: 'value', op: '<', limit: USAGE_TARGET_MS }, note: `its old ledger-scanning queries take ${fmt(ledgerUsageMs, 0)} ms on this database (diag)` }),
      figure({ name: 'start_post_p50', figure: `POST /v1/tools/${NOOP_TOOL}/runs p50 with ${mRuns}`, unit: 'ms', value: oldClaim.post,
        baseline: { label: youngLabel, value: youngClaim.post }, target: { on: 'ratio', op: '<=', limit: RATIO_TARGET } }),
      figure({ name: 'start_to_claim_p50', figure: `start-to-claim (started_at - created_at) p50 with ${mRuns}`, unit: 'ms', value: oldClaim.claim,
        baseline: { label: youngLabel, value: youngClaim.claim }, target: { on: 'ratio', op: '<=', limit: RATIO_TARGET } }),
      figure({ name: 'db_mib_per_million_runs', figure: 'database growth per million past runs (with their rows in every table, after VACUUM)', unit: 'MiB',
        value: (sizeOld - sizeYoung) / 1024 / 1024 / millions, note: `${fmt(sizeYoung / 1024 / 1024, 0)} MiB young, ${fmt(sizeOld / 1024 / 1024, 0)} MiB with ${mRuns}` }),
      figure({ name: 'usage_backfill_s_per_million', figure: "migration 0022's usage back-fill, seconds per million runs", unit: 's',
        value: backfillMs / 1000 / millions }),
    );
    const lines = [
      '',
      table(['read', `young p50 ms`, `${mRuns} p50 ms`, 'ratio', 'young p90', 'old p90'],
        probes.map((p) => {
          const y = youngT.get(p.name);
          const o = oldT.get(p.name);
          return [p.name, fmt(y?.p50, 2), fmt(o?.p50, 2), fmt((o?.p50 ?? 0) / (y?.p50 ?? 1), 2), fmt(y?.p90, 2), fmt(o?.p90, 2)];
        })),
      `start: POST p50 ${fmt(youngClaim.post, 2)} -> ${fmt(oldClaim.post, 2)} ms; start-to-claim p50 ${fmt(youngClaim.claim, 2)} -> ${fmt(oldClaim.claim, 2)} ms`,
      `seed ${fmt(seedS, 0)} s, back-fill ${fmt(backfillMs / 1000, 1)} s, database ${fmt(sizeYoung / 2 ** 20, 0)} -> ${fmt(sizeOld / 2 ** 20, 0)} MiB; ledger-scanning usage queries ${fmt(ledgerUsageMs, 0)} ms`,
      `load: before ${loadBefore.text}; after ${loadAfter.text}`,
      '',
      ...plans.map((pl) => `EXPLAIN ${pl.name}: ${pl.ms} ms\n${pl.plan}\n`),
    ];
    process.stdout.write(lines.join('\n') + '\n');
    const result: BenchResult = {
      ...resultHeader('scale', 'Reads on a team with a long past: every /v1 read and console page, young database vs N past runs', { before: loadBefore, after: loadAfter }, oldDb, settings),
      figures,
      charts: [],
      notes: [
        `Two databases side by side, each with its own API process: young (${settings.young.toLocaleString('en')} runs over one day) and old (the same, then ` +
          `${settings.runs.toLocaleString('en')} more finished runs over ${settings.days} days: 90 % succeeded with a charge and an output, 7 % failed, 3 % canceled; each with its input file, ` +
          'hold/release ledger rows, final event, a delivered webhook delivery and its attempt), seeded set-based with triggers off, the usage roll-up rebuilt by migration 0022\'s back-fill, then VACUUM ANALYZE.',
        `Each read: ${settings.rounds} GETs per side after 3 warm-ups, young and old alternating request by request, p50; the baseline is the same GET on the young database (target: within ${RATIO_TARGET}x). ` +
          `Start-to-claim: ${settings.claims} ${NOOP_TOOL} runs per side, alternating, to an idle in-process worker.`,
        ...loadedNote(loadBefore, loadAfter),
      ],
      details: { young: Object.fromEntries(youngT), old: Object.fromEntries(oldT), youngClaim, oldClaim, seed_s: seedS, backfill_ms: backfillMs, vacuum_s: vacuumS,
        db_bytes: { young: sizeYoung, old: sizeOld }, ledger_usage_ms: ledgerUsageMs, plans },
    };
    finish(result);
  });
}

runBench('scale', main);
