// `npm run topology`: the scale-out proof. Starts 2 API processes and 2 worker processes (each in
// its own network namespace where the machine allows), PostgreSQL, s3rver (or the S3 named by
// TEST_S3_ENDPOINT, as in the S3 tests), an HTTPS webhook
// receiver and a brand test site; drives a load of mixed runs through both APIs; checks that
// every run ends once, every webhook arrives once, the limits hold across both APIs and the ledger
// balances; prints a summary table. Exit code 0 when every check passes, 1 otherwise.
//
//   npm run topology -- --runs 300 --concurrency 24 --seed 7 [--loopback] [--json report.json]
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import pino from 'pino';
import { startEmbeddedPostgres } from '../src/db/embedded.js';
import { makeDataDir } from '../test/helpers/process.js';
import { killAllSync } from './topology/processes.js';
import { runScaleOut } from './topology/scaleout.js';
import { formatReport } from './topology/summary.js';

const USAGE = `usage: npm run topology -- [options]
  --runs N                runs in the load (default 300)
  --concurrency N         runs in flight at once (default 24)
  --seed N                seed of the load's mix (default: random, printed)
  --poll-ms N             polling interval of each run (default 2000, the spec's guidance)
  --worker-concurrency N  runs each worker process works on at once (default 2)
  --timeout S             every run must be final within S seconds of the load's start (default 900)
  --loopback              plain processes on 127.0.0.1 even where network namespaces work
  --keep                  keep the database created for the run
  --json FILE             also write the whole report as JSON
Database: DATABASE_URL if set (used as it is); else a fresh database on the machine's
postgres://postgres@127.0.0.1:5432 (dropped afterwards); else an embedded PostgreSQL.`;

function int(raw: string | undefined, name: string, fallback: number, min = 1): number {
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < min) {
    process.stderr.write(`topology: --${name} must be a whole number >= ${min}\n${USAGE}\n`);
    process.exit(64);
  }
  return Number(raw);
}

const log = (line: string) => process.stderr.write(`# ${line}\n`);

interface ChosenDatabase {
  url: string;
  label: string;
  release(): Promise<void>;
}

async function reachable(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

async function chooseDatabase(keep: boolean): Promise<ChosenDatabase> {
  if (process.env.DATABASE_URL) return { url: process.env.DATABASE_URL, label: 'DATABASE_URL', release: async () => undefined };
  let admin = 'postgres://postgres@127.0.0.1:5432/test';
  let stopEmbedded: (() => Promise<void>) | null = null;
  let label = 'the machine PostgreSQL (127.0.0.1:5432)';
  if (!(await reachable(admin))) {
    const dataDir = makeDataDir('topology-pg');
    const embedded = await startEmbeddedPostgres({ dataDir, logger: pino({ level: 'warn' }) });
    admin = embedded.connectionString;
    label = 'an embedded PostgreSQL';
    stopEmbedded = async () => {
      await embedded.stop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    };
  }
  const name = `toolrun_topology_${Date.now().toString(36)}_${process.pid}`;
  const client = new pg.Client({ connectionString: admin });
  await client.connect();
  await client.query(`CREATE DATABASE "${name}"`);
  await client.end();
  const url = new URL(admin);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    label: `${label}, database ${name}`,
    async release() {
      if (!keep) {
        const c = new pg.Client({ connectionString: admin });
        await c.connect();
        // FORCE: connections a killed process left are ended with it.
        await c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`).finally(() => c.end());
      } else {
        log(`database kept: ${url.toString()}`);
      }
      await stopEmbedded?.();
    },
  };
}

function parse() {
  return parseArgs({
    options: {
      runs: { type: 'string' },
      concurrency: { type: 'string' },
      seed: { type: 'string' },
      'poll-ms': { type: 'string' },
      'worker-concurrency': { type: 'string' },
      timeout: { type: 'string' },
      loopback: { type: 'boolean', default: false },
      keep: { type: 'boolean', default: false },
      json: { type: 'string' },
      help: { type: 'boolean', default: false },
    },
    strict: true,
  });
}

async function main(): Promise<number> {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse();
  } catch (err) {
    process.stderr.write(`topology: ${(err as Error).message}\n${USAGE}\n`);
    return 64;
  }
  const { values } = parsed;
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  // Every option is checked before anything is created.
  const runs = int(values.runs, 'runs', 300);
  const seed = int(values.seed, 'seed', Math.floor(Math.random() * 1_000_000), 0);
  const concurrency = int(values.concurrency, 'concurrency', 24);
  const pollMs = int(values['poll-ms'], 'poll-ms', 2000, 50);
  const workerConcurrency = int(values['worker-concurrency'], 'worker-concurrency', 2);
  const loadDeadlineMs = int(values.timeout, 'timeout', 900) * 1000;
  const database = await chooseDatabase(values.keep);
  log(`database: ${database.label}`);
  // Ctrl-C: children are killed and namespaces removed by the topology's exit handler; the
  // database is dropped first, as far as it can be in a moment.
  const interrupted = async (signal: string) => {
    log(`${signal}: stopping`);
    killAllSync();
    await Promise.race([database.release(), new Promise((r) => setTimeout(r, 5000))]).catch(() => undefined);
    process.exit(130);
  };
  process.once('SIGINT', () => void interrupted('SIGINT'));
  process.once('SIGTERM', () => void interrupted('SIGTERM'));
  try {
    const report = await runScaleOut({
      databaseUrl: database.url,
      runs,
      concurrency,
      seed,
      pollMs,
      forceLoopback: values.loopback,
      workerConcurrency,
      loadDeadlineMs,
      rateLimit: { limits: [30, 120], durationMs: 10_000 },
      ceiling: { limit: 12, attempts: 30 },
      log,
    });
    process.stdout.write(`\n${formatReport(report)}\n`);
    if (values.json) fs.writeFileSync(path.resolve(values.json), JSON.stringify(report, null, 2));
    const failed = report.checks.filter((c) => !c.ok);
    process.stdout.write(`\n${failed.length ? `${failed.length} check(s) FAILED` : 'all checks passed'} (seed ${seed}; replay with --seed ${seed})\n`);
    return failed.length ? 1 : 0;
  } finally {
    await database.release();
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`topology: ${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  },
);
