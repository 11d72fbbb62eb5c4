/**
 * The scaffold every benchmark that starts the service carries, written once (issue 37 item 5):
 * a clean-up that runs exactly once whichever way the bench ends (finished, failed, Ctrl-C, the
 * watchdog), a throwaway database and temp directory, the service's child processes stopped, and
 * on a failure the failure said before the clean-up (which may fail in its own way and hide it)
 * followed by the last lines each child wrote.
 *
 *   runBench('mine', () => withBenchService('mine', { watchdogMinutes: 10 }, async (svc) => {
 *     const database = await svc.database();
 *     const api = svc.child('api', await startAppChild('api', {...}));
 *     const pool = svc.defer(new pg.Pool({ connectionString: database.url }), (p) => p.end());
 *     ... measure ...
 *     await svc.cleanup();   // before the report, so nothing of the bench runs while it is written
 *     finish(result);
 *   }));
 *
 * Clean-up runs the registered steps newest first (the database, set up first, is dropped after
 * everything that holds a connection to it; the temp directory goes last), each step's failure
 * swallowed so the next still runs.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Logger } from 'pino';
import { createLogger } from '../../src/logger.js';
import { setupBenchDatabase, type BenchDatabase } from './db.js';
import { sayFailure, watchdog } from './report.js';

/** Something the service started that stops, and may keep the end of what it wrote. */
export interface Stoppable {
  stop(): Promise<void>;
  /** The last lines the process wrote (stdout and stderr), for a failure report. */
  logTail?(): string;
}

export interface BenchService {
  readonly name: string;
  /** A fresh directory (mode 0755: an embedded PostgreSQL running as another user reaches it), removed last. */
  readonly dir: string;
  readonly logger: Logger;
  /** The bench database (bench/lib/db.ts), set up on the first call and dropped at clean-up. */
  database(): Promise<BenchDatabase>;
  /** Registers a child process: stopped at clean-up, the end of its output printed if the bench fails. */
  child<T extends Stoppable>(name: string, child: T): T;
  /** Registers a clean-up step for `thing` and returns it. */
  defer<T>(thing: T, close: (thing: T) => unknown): T;
  /** Runs the clean-up now (once; later calls wait for the same run). */
  cleanup(): Promise<void>;
}

export interface BenchServiceOptions {
  /** BENCH_MAX_MINUTES' default for this bench; null: no watchdog (bench/all.ts still has its limit). */
  watchdogMinutes?: number | null;
  /** Log level of the bench's own logger (database set-up). */
  logLevel?: string;
}

const TAIL_LINES = 30;

/** How one bench's service children differ from the common environment serviceEnv builds. */
export interface ServiceEnvOptions {
  /** The children's LOG_LEVEL. */
  logLevel: string;
  /** TOOLRUN_DATA_DIR; `<dir>/data` unless the bench keeps its data apart. */
  dataDir?: string;
  /** Added or changed variables, applied last. */
  set?: NodeJS.ProcessEnv;
  /** Variables of this process the children must not inherit. */
  unset?: readonly string[];
}

/**
 * The environment a bench gives the service's children: this process's, then the bench database
 * (none: whatever this process has), loopback only, no demo team, a data directory inside the
 * bench's temp directory.
 */
export function serviceEnv(svc: { readonly dir: string }, database: { readonly url: string } | null, opts: ServiceEnvOptions): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    ...(database ? { DATABASE_URL: database.url } : {}),
    HOST: '127.0.0.1',
    LOG_LEVEL: opts.logLevel,
    TOOLRUN_ENV: 'development',
    TOOLRUN_DEMO_SEED: '0',
    TOOLRUN_DATA_DIR: opts.dataDir ?? path.join(svc.dir, 'data'),
    ...opts.set,
  };
  for (const name of opts.unset ?? []) delete env[name];
  return env;
}

/** Runs `body` inside the scaffold; resolves when it and the clean-up are done, rejects with its failure. */
export async function withBenchService(name: string, opts: BenchServiceOptions, body: (svc: BenchService) => Promise<void>): Promise<void> {
  const logger = createLogger(opts.logLevel ?? 'warn');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `toolrun-bench-${name}-`));
  fs.chmodSync(dir, 0o755);
  const steps: (() => unknown)[] = [() => fs.rmSync(dir, { recursive: true, force: true })];
  const children: { name: string; child: Stoppable }[] = [];
  let database: Promise<BenchDatabase> | null = null;
  let cleaning: Promise<void> | null = null;

  const cleanup = () =>
    (cleaning ??= (async () => {
      for (const step of steps.splice(0).reverse()) {
        try {
          await step();
        } catch (err) {
          logger.warn({ err }, `bench:${name}: a clean-up step failed`);
        }
      }
    })());
  const onSigint = () => void cleanup().finally(() => process.exit(130));
  process.once('SIGINT', onSigint);
  if (opts.watchdogMinutes !== null) watchdog(name, cleanup, opts.watchdogMinutes ?? 10);

  const svc: BenchService = {
    name,
    dir,
    logger,
    database() {
      if (!database) {
        const started = setupBenchDatabase(logger);
        database = started;
        steps.push(async () => (await started.catch(() => null))?.teardown());
      }
      return database;
    },
    child(childName, child) {
      children.push({ name: childName, child });
      steps.push(() => child.stop());
      return child;
    },
    defer(thing, close) {
      steps.push(() => close(thing));
      return thing;
    },
    cleanup,
  };

  try {
    await body(svc);
  } catch (err) {
    sayFailure(name, err);
    for (const c of children) {
      const tail = c.child.logTail?.().trimEnd();
      if (!tail) continue;
      const lines = tail.split('\n').slice(-TAIL_LINES);
      process.stderr.write(`--- last ${lines.length} lines of ${c.name}'s output ---\n${lines.join('\n')}\n---\n`);
    }
    throw err;
  } finally {
    await cleanup();
    process.off('SIGINT', onSigint);
  }
}
