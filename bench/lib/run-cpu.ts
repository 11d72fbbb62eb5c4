/**
 * The engine's own cost per run (issue 37): service CPU and PostgreSQL CPU per run of a job with
 * no work (bench_noop), the statements and transactions each run costs, and runs/s, with the
 * default worker slots, beside the same figures for a no-op graphile-worker job on the same
 * PostgreSQL in the same run (the anchor: a PostgreSQL job queue for Node.js doing the least a
 * queue can do).
 *
 * Both sides run on a PostgreSQL server of the benchmark's own (own-pg.ts), each in its own
 * database, one after the other, so the server's CPU over each phase is that side's alone.
 * Toolrun: one API process as `toolrun serve` runs it (RunWorker, WebhookWorker, janitor beside
 * the API), BENCH_CPU_TEAMS teams, BENCH_CPU_RUNS starts spread over them round robin from
 * BENCH_CPU_IN_FLIGHT clients while the workers run; service CPU = that process's CPU from the
 * first start to the last run's final commit (the HTTP client is this process, not counted).
 * graphile-worker: `run()` in this process with the same concurrency and a no-op task, the same
 * number of jobs added by addJob from the same number of lanes; its CPU is this process's,
 * the adding client included (so the anchor's service figure is, if anything, high).
 */
import pg from 'pg';
import type { Logger } from 'pino';
import { makeWorkerUtils, run as runGraphile, Logger as GraphileLogger } from 'graphile-worker';
import { createApiKey } from '../../src/auth/key-admin.js';
import { createDb } from '../../src/db/pool.js';
import { EVENTS_CHANNEL } from '../../src/runs/transitions.js';
import { addMember, createTeam, grantSparks, updateTeam } from '../../src/teams/repository.js';
import { Api, prepareTeam, runTimes } from './api.js';
import { cpuWithChildren, startAppChild, type AppChild } from './app-children.js';
import { NOOP_TOOL } from './bench-tools.js';
import { setupBenchDatabase, UNLIMITED_RATE, type BenchDatabase } from './db.js';
import { adminQuery, cpuByApplication, PG_ROLES, resetStatements, statementsOf, transactionsOf, type OwnPg, type PgRole, type StatementCount } from './own-pg.js';
import { envInt, percentile, sleep } from './report.js';
import { inFlight, procCpuSeconds } from './upload-io.js';

export const cpuSettings = () => ({
  runs: envInt('BENCH_CPU_RUNS', 400, 1),
  teams: envInt('BENCH_CPU_TEAMS', 16, 1),
  inFlight: envInt('BENCH_CPU_IN_FLIGHT', 32, 1),
  warmup: envInt('BENCH_CPU_WARMUP', 64, 1),
});
export type CpuSettings = ReturnType<typeof cpuSettings>;

export interface CpuSide {
  label: string;
  runs: number;
  /** CPU ms per run of the service process(es) and of the PostgreSQL server. */
  serviceMs: number;
  pgMs: number;
  /** pgMs by the server's process roles (own-pg.ts PG_ROLES). */
  pgMsByRole: Record<PgRole, number>;
  /** The live backends' part of pgMs by application_name. */
  pgMsByApplication: Record<string, number>;
  runsPerS: number;
  /** Client-side start (POST / addJob) latency and rate. */
  startP99Ms: number;
  startsPerS: number;
  statementsPerRun: number;
  transactionsPerRun: number;
  /** Every statement seen, calls and backend ms (planning + execution) per run, most called first. */
  statements: { query: string; perRun: number; msPerRun: number }[];
}

/** Backends report their statistics at most once a second and at the latest 10 s into idleness. */
const STATS_FLUSH_MS = 11_000;

const perRun = (statements: StatementCount[], n: number) => statements.map((s) => ({ query: s.query, perRun: s.calls / n, msPerRun: s.totalMs / n }));

/** What one side's measured phase cost: CPU seconds of the service and of the server, its statements and transactions. */
interface Sample<T> {
  out: T;
  serviceS: number;
  pgS: number;
  /** pgS by the server's process roles. */
  pgByRole: Record<PgRole, number>;
  /** The live backends' part of pgS by application_name (connections that ended are not in it). */
  pgByApplication: Record<string, number>;
  statements: StatementCount[];
  transactions: number;
}

/**
 * Runs `phase` between two readings of CPU (`serviceCpu` and the server's), statements and
 * transactions. The statistics flush before each transaction count, so the count holds the
 * phase's transactions and no others.
 */
async function sampled<T>(own: OwnPg, database: string, serviceCpu: () => number, phase: () => Promise<T>): Promise<Sample<T>> {
  await sleep(STATS_FLUSH_MS);
  const x0 = await transactionsOf(own.adminUrl, database);
  await resetStatements(own.adminUrl);
  const apps0 = await cpuByApplication(own.adminUrl);
  const c0 = { service: serviceCpu(), roles: own.cpuByRole() };
  const out = await phase();
  const c1 = { service: serviceCpu(), roles: own.cpuByRole() };
  const apps1 = await cpuByApplication(own.adminUrl);
  const pgByApplication = Object.fromEntries(Object.entries(apps1).map(([name, s1]) => [name, s1 - (apps0[name] ?? 0)]));
  const pgByRole = Object.fromEntries(PG_ROLES.map((r) => [r, c1.roles[r] - c0.roles[r]])) as Record<PgRole, number>;
  const statements = await statementsOf(own.adminUrl, database);
  await sleep(STATS_FLUSH_MS);
  const x1 = await transactionsOf(own.adminUrl, database);
  return { out, serviceS: c1.service - c0.service, pgS: PG_ROLES.reduce((n, r) => n + pgByRole[r], 0), pgByRole, pgByApplication, statements, transactions: x1 - x0 };
}

/** One side's figures from its sample: `n` runs over `seconds`, `starts` the client's start calls, `statements` the engine's. */
function cpuSide(label: string, n: number, seconds: number, starts: { lat: number[]; perS: number }, m: Sample<unknown>, statements: StatementCount[]): CpuSide {
  return {
    label,
    runs: n,
    serviceMs: (m.serviceS * 1000) / n,
    pgMs: ((m.pgS - (m.pgByApplication[WATCHER_APPLICATION] ?? 0)) * 1000) / n,
    pgMsByRole: Object.fromEntries(PG_ROLES.map((r) => [r, (m.pgByRole[r] * 1000) / n])) as Record<PgRole, number>,
    pgMsByApplication: Object.fromEntries(Object.entries(m.pgByApplication).map(([name, sec]) => [name, (sec * 1000) / n])),
    runsPerS: n / seconds,
    startP99Ms: percentile(starts.lat, 99),
    startsPerS: starts.perS,
    statementsPerRun: statements.reduce((a, st) => a + st.calls, 0) / n,
    transactionsPerRun: m.transactions / n,
    statements: perRun(statements, n),
  };
}

/**
 * The benchmark's own connection, LISTENing for runs to finish: not the service's cost, so its
 * backend's CPU is left out of the PostgreSQL figure (and shown apart).
 */
export const WATCHER_APPLICATION = 'toolrun-bench-cpu';

/** Resolves once `count` distinct runs sent their final-transition NOTIFY. */
async function finalWatcher(url: string): Promise<{ wait(ids: string[], timeoutMs: number): Promise<void>; close(): Promise<void> }> {
  const client = new pg.Client({ connectionString: url, application_name: WATCHER_APPLICATION });
  await client.connect();
  const seen = new Set<string>();
  let wake: (() => void) | null = null;
  client.on('notification', (m) => {
    if (m.payload) seen.add(m.payload);
    wake?.();
  });
  await client.query(`LISTEN ${EVENTS_CHANNEL}`);
  return {
    async wait(ids, timeoutMs) {
      const deadline = Date.now() + timeoutMs;
      while (!ids.every((id) => seen.has(id))) {
        if (Date.now() > deadline) throw new Error(`runs not final after ${timeoutMs} ms`);
        await new Promise<void>((r) => {
          wake = r;
          setTimeout(r, 1000).unref();
        });
      }
    },
    close: () => client.end(),
  };
}

async function extraKeys(url: string, n: number, logger: Logger): Promise<string[]> {
  const db = createDb({ connectionString: url, logger, max: 2, applicationName: 'toolrun-bench-setup' });
  try {
    const keys: string[] = [];
    for (let i = 0; i < n; i++) {
      const team = await createTeam(db, { name: `Bench CPU team ${i + 2}`, plan: 'pro', sparks: 0 });
      await grantSparks(db, team.id, 100_000_000);
      await updateTeam(db.pool, team.id, { runsPerHour: 1_000_000 });
      const owner = await addMember(db, { teamId: team.id, email: `bench-cpu-${i}@example.test`, role: 'owner' });
      const created = await createApiKey(db, { memberId: owner.id, name: 'bench cpu', scopes: ['read', 'run'], rate: 300, envPrefix: 'svc_test_' });
      await db.pool.query('UPDATE api_keys SET rate_limit_per_minute = $2::integer WHERE id = $1::uuid', [created.api_key.id, UNLIMITED_RATE]);
      keys.push(created.key);
    }
    return keys;
  } finally {
    await db.close();
  }
}

export async function measureToolrunCpu(own: OwnPg, env: NodeJS.ProcessEnv, s: CpuSettings, logger: Logger): Promise<CpuSide> {
  let database: BenchDatabase | null = null;
  let child: AppChild | null = null;
  const apis: Api[] = [];
  let watcher: Awaited<ReturnType<typeof finalWatcher>> | null = null;
  try {
    database = await setupBenchDatabase(logger, { adminUrl: own.adminUrl, server: 'the benchmark\'s own embedded PostgreSQL' });
    await prepareTeam(database.url, database.keyId, logger);
    const keys = [database.key, ...(await extraKeys(database.url, s.teams - 1, logger))];
    // The default slots: whatever TOOLRUN_WORKER_CONCURRENCY the caller set does not apply here.
    const { TOOLRUN_WORKER_CONCURRENCY: _c, ...serveEnv } = env;
    child = await startAppChild('api', { ...serveEnv, DATABASE_URL: database.url, BENCH_WORKERS: 'all' });
    for (const key of keys) apis.push(new Api(child.url, key));
    watcher = await finalWatcher(database.url);
    const startAll = async (n: number) => {
      const lat: number[] = [];
      const t0 = performance.now();
      const ids = await inFlight(n, s.inFlight, async (i) => {
        const t = performance.now();
        const r = await apis[i % apis.length]!.startRun(NOOP_TOOL, {});
        lat.push(performance.now() - t);
        return r.id;
      });
      return { ids, lat, perS: n / ((performance.now() - t0) / 1000) };
    };
    // Warm-up: JIT, pools, prepared plans, the janitor's first pass.
    await watcher.wait((await startAll(s.warmup)).ids, 300_000);
    // Consts: the phase's closure would not see `child` and `watcher` narrowed.
    const { pid } = child;
    const final = watcher;
    const m = await sampled(own, database.name, () => cpuWithChildren(pid), async () => {
      const started = await startAll(s.runs);
      await final.wait(started.ids, 300_000);
      return started;
    });
    const started = m.out;
    const client = new pg.Pool({ connectionString: database.url, max: 1 });
    const times = await runTimes(client, started.ids).finally(() => client.end());
    const bad = times.filter((t) => t.status !== 'succeeded').length;
    if (bad) throw new Error(`${bad} of ${s.runs} bench runs did not succeed`);
    const span = (Math.max(...times.map((t) => t.finished ?? 0)) - Math.min(...times.map((t) => t.created))) / 1000;
    // The LISTEN and the read-backs of this benchmark are not the engine's.
    const engine = m.statements.filter((st) => !/pg_stat_statements|^LISTEN|FROM runs WHERE id = ANY/.test(st.query));
    return cpuSide(`Toolrun ${NOOP_TOOL}`, s.runs, span, started, m, engine);
  } finally {
    await watcher?.close().catch(() => undefined);
    for (const a of apis) a.close();
    await child?.stop().catch(() => undefined);
    await database?.teardown();
  }
}

/** The anchor: graphile-worker's no-op job on the same server, its schema in a database of its own. */
export async function measureGraphileCpu(own: OwnPg, slots: number, s: CpuSettings): Promise<CpuSide> {
  const name = `graphile_bench_${process.pid}`;
  await adminQuery(own.adminUrl, `CREATE DATABASE "${name}"`);
  const url = own.urlOf(name);
  const quiet = new GraphileLogger(() => () => undefined);
  let done = 0;
  let wake: (() => void) | null = null;
  const runner = await runGraphile({
    connectionString: url,
    concurrency: slots,
    noHandleSignals: true,
    pollInterval: 2000,
    logger: quiet,
    taskList: { noop: async () => undefined },
  });
  runner.events.on('job:success', () => {
    done++;
    wake?.();
  });
  const utils = await makeWorkerUtils({ connectionString: url, logger: quiet });
  const addAll = async (n: number) => {
    const lat: number[] = [];
    const t0 = performance.now();
    await inFlight(n, s.inFlight, async (i) => {
      const t = performance.now();
      await utils.addJob('noop', { i });
      lat.push(performance.now() - t);
    });
    return { lat, perS: n / ((performance.now() - t0) / 1000) };
  };
  const until = async (target: number) => {
    const deadline = Date.now() + 300_000;
    while (done < target) {
      if (Date.now() > deadline) throw new Error('graphile-worker jobs not done after 300 s');
      await new Promise<void>((r) => {
        wake = r;
        setTimeout(r, 1000).unref();
      });
    }
  };
  try {
    await addAll(s.warmup);
    await until(s.warmup);
    const m = await sampled(own, name, () => procCpuSeconds(process.pid), async () => {
      const t0 = performance.now();
      const added = await addAll(s.runs);
      await until(s.warmup + s.runs);
      return { added, wall: (performance.now() - t0) / 1000 };
    });
    const statements = m.statements.filter((st) => !/pg_stat_statements/.test(st.query));
    return cpuSide('graphile-worker no-op job', s.runs, m.out.wall, m.out.added, m, statements);
  } finally {
    await Promise.resolve(utils.release()).catch(() => undefined);
    await Promise.resolve(runner.stop()).catch(() => undefined);
    await adminQuery(own.adminUrl, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`).catch(() => undefined);
  }
}
