/**
 * A child process of bench/runs.ts, bench/tools.ts and bench/webhooks.ts (never run on its own),
 * configured from the environment the parent passes (DATABASE_URL, TOOLRUN_DATA_DIR, LOG_LEVEL...).
 *
 *   api     the real app, built as startService() builds it but with the bench registry (the five
 *           tools plus bench_noop), on a free port of 127.0.0.1, with BENCH_WORKERS beside it:
 *           `all` is startBackgroundWork() exactly as `toolrun serve` runs it (RunWorker,
 *           WebhookWorker, janitor); `runs` / `webhooks` one worker alone; `none` the API alone.
 *   worker  the same without the API, as `toolrun worker` runs (BENCH_WORKERS, default all).
 *   direct  no database: runs a tool's runner in this process on request (bench/lib/bench-tools.ts).
 *
 * It reports {type:'ready'} over IPC, switches what runs beside the API on {type:'workers'}, and
 * exits when told to stop or when the parent goes away.
 */
import net from 'node:net';
import type { FastifyInstance } from 'fastify';
import { loadConfig, type Config } from '../src/config/config.js';
import { buildApp } from '../src/service/app.js';
import { createLogger } from '../src/logger.js';
import { resolveMediaBinaries } from '../src/media/binaries.js';
import { RunWorker } from '../src/runs/worker.js';
import { openDatabase, type OpenedDatabase } from '../src/service/database.js';
import { startBackgroundWork, type BackgroundWork } from '../src/service/workers.js';
import { createStorage } from '../src/storage/create.js';
import { WebhookWorker } from '../src/webhooks/worker.js';
import type { AppChildMessage, AppParentMessage, Workers } from './lib/app-children.js';
import { benchRegistry, runDirect } from './lib/bench-tools.js';

const send = (m: AppChildMessage) => process.send?.(m);
const errorText = (err: unknown) => (err instanceof Error ? (err.stack ?? err.message) : String(err));

function freePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on('error', reject);
    srv.listen(0, host, () => {
      const address = srv.address();
      srv.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

type WorkDeps = Parameters<typeof startBackgroundWork>[0];

async function startWork(which: Workers, deps: WorkDeps): Promise<{ stop(): Promise<void> }> {
  if (which === 'all') {
    const bg: BackgroundWork = await startBackgroundWork(deps);
    return { stop: () => bg.stop() };
  }
  if (which === 'runs') {
    const w = new RunWorker({ ...deps, concurrency: deps.config.workerConcurrency });
    await w.start();
    return { stop: () => w.stop(deps.config.runs.shutdownGraceSeconds * 1000) };
  }
  if (which === 'webhooks') {
    const w = new WebhookWorker(deps);
    await w.start();
    return { stop: () => w.stop(deps.config.webhooks.timeoutMs) };
  }
  return { stop: async () => undefined };
}

function workersFromEnv(): Workers {
  const w = process.env.BENCH_WORKERS ?? 'all';
  if (w !== 'all' && w !== 'none' && w !== 'runs' && w !== 'webhooks') throw new Error(`BENCH_WORKERS must be all, none, runs or webhooks, got "${w}"`);
  return w;
}

async function main(): Promise<void> {
  if (!process.send) throw new Error('bench/app-server.ts is started by a benchmark over IPC');
  const mode = process.argv[2];
  if (mode !== 'api' && mode !== 'worker' && mode !== 'direct') throw new Error(`mode must be api, worker or direct, got "${mode ?? ''}"`);
  let config: Config = loadConfig(process.env);
  const logger = createLogger(config.logLevel);
  const tools = benchRegistry();
  const media = resolveMediaBinaries();
  let database: OpenedDatabase | null = null;
  let app: FastifyInstance | null = null;
  let work: { stop(): Promise<void> } = { stop: async () => undefined };
  let deps: WorkDeps | null = null;
  let url = '';

  if (mode !== 'direct') {
    if (mode === 'api') {
      // As startService does for PORT=0: pick the port first so that upload URLs name it.
      const port = await freePort(config.host);
      config = { ...config, port, publicBaseUrl: `http://${config.host}:${port}` };
    }
    database = await openDatabase(config, logger, mode === 'api' ? { poolSize: 20, applicationName: 'toolrun-api' } : { applicationName: 'toolrun-worker' });
    const storage = await createStorage(config, database.db.pool);
    // As startService: metrics only with a token (bench/tools.ts reads the run phases from them).
    const metrics = config.metrics.token
      ? new (await import('../src/metrics/metrics.js')).Metrics({ db: database.db, logger, toolIds: tools.listed().map((t) => t.id) })
      : undefined;
    if (mode === 'api') {
      app = await buildApp({ config, db: database.db, logger, tools, storage, media, ...(metrics ? { metrics } : {}) });
      await app.listen({ port: config.port, host: config.host });
      url = config.publicBaseUrl;
    }
    deps = { config, db: database.db, storage, tools, media, logger, ...(metrics ? { metrics } : {}) };
    work = await startWork(workersFromEnv(), deps);
  }

  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    void (async () => {
      await Promise.all([work.stop(), app?.close()]);
      await database?.close();
    })().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  const runConfig = config;
  process.on('message', (m: AppParentMessage) => {
    if (m.type === 'rss') {
      const mem = process.memoryUsage();
      send({ type: 'rss', rss: mem.rss, heapUsed: mem.heapUsed });
    } else if (m.type === 'stop') {
      stop();
    } else if (m.type === 'workers' && deps) {
      const d = deps;
      void work
        .stop()
        .then(() => startWork(m.which, d))
        .then((w) => {
          work = w;
          send({ type: 'workers-done' });
        })
        .catch((err: unknown) => send({ type: 'error', message: errorText(err) }));
    } else if (m.type === 'direct') {
      runDirect(m.job, { config: runConfig, media, logger, tools }).then(
        (result) => send({ type: 'direct-done', result, error: null, maxRssBytes: process.resourceUsage().maxRSS * 1024 }),
        (err: unknown) => send({ type: 'direct-done', result: null, error: errorText(err), maxRssBytes: 0 }),
      );
    }
  });
  process.on('disconnect', stop);
  process.on('SIGTERM', stop);
  send({ type: 'ready', url });
}

main().catch((err: unknown) => {
  send({ type: 'error', message: errorText(err) });
  process.exit(1);
});
