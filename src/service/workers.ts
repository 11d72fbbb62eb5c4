import type { Logger } from 'pino';
import type { Config } from '../config/config.js';
import type { Db } from '../db/pool.js';
import { expireFiles, startJanitor } from '../files/janitor.js';
import { expireOutputs } from '../runs/outputs.js';
import { deleteExpiredRows } from '../retention/janitor.js';
import { resolveMediaBinaries, type MediaBinaries } from '../media/binaries.js';
import type { Metrics } from '../metrics/metrics.js';
import { startMetricsServer, type MetricsServer } from '../metrics/server.js';
import { RunWorker } from '../runs/worker.js';
import { createStorage } from '../storage/create.js';
import type { Storage } from '../storage/storage.js';
import { createToolRegistry, type ToolRegistry } from '../tools/registry.js';
import { WebhookWorker } from '../webhooks/worker.js';
import { openDatabase } from './database.js';

export interface BackgroundWork {
  worker: RunWorker;
  webhooks: WebhookWorker;
  /** Stops claiming, lets running work finish within the grace period, hands the rest back. */
  stop(): Promise<void>;
}

/** The run workers and the expiry janitor: in `toolrun serve` and in every `toolrun worker`. */
export async function startBackgroundWork(deps: {
  config: Config;
  db: Db;
  storage: Storage;
  tools: ToolRegistry;
  media: MediaBinaries;
  logger: Logger;
  /** Where run executions and webhook attempts are recorded, when metrics are on. */
  metrics?: Metrics;
}): Promise<BackgroundWork> {
  const worker = new RunWorker({ ...deps, concurrency: deps.config.workerConcurrency });
  await worker.start();
  const webhooks = new WebhookWorker(deps);
  await webhooks.start();
  const janitor = startJanitor(
    [
      () => expireFiles(deps.db, deps.storage, deps.logger),
      () => expireOutputs(deps.db, deps.storage, deps.logger),
      // After the expiries above, so that rows they just marked are counted from their expiry.
      () => deleteExpiredRows(deps.db.pool, deps.config.retention, deps.logger),
    ],
    deps.logger,
  );
  return {
    worker,
    webhooks,
    async stop() {
      await Promise.all([
        worker.stop(deps.config.runs.shutdownGraceSeconds * 1000),
        webhooks.stop(deps.config.webhooks.timeoutMs),
        janitor.stop(),
      ]);
    },
  };
}

/** A running `toolrun worker`: its background work, metrics listener and database. */
export interface WorkerProcess {
  /** Stops claiming, lets running work finish within the grace period, then closes everything. */
  stop(): Promise<void>;
}

/** `toolrun worker`: the background work alone, with an optional metrics listener (no API). */
export async function startWorkerProcess(config: Config, logger: Logger): Promise<WorkerProcess> {
  const database = await openDatabase(config, logger, { applicationName: 'toolrun-worker' });
  let background: BackgroundWork | null = null;
  let metricsServer: MetricsServer | null = null;
  const close = async () => {
    await background?.stop();
    await metricsServer?.close();
    await database.close();
  };
  try {
    const tools = createToolRegistry();
    const metrics =
      config.metrics.port === null
        ? undefined
        : new (await import('../metrics/metrics.js')).Metrics({ db: database.db, logger, toolIds: tools.listed().map((t) => t.id) });
    background = await startBackgroundWork({
      config,
      db: database.db,
      storage: await createStorage(config, database.db.pool),
      tools,
      media: resolveMediaBinaries(),
      logger,
      ...(metrics ? { metrics } : {}),
    });
    if (metrics && config.metrics.port !== null) {
      metricsServer = await startMetricsServer({ host: config.host, port: config.metrics.port, token: config.metrics.token, metrics, logger });
    }
    return { stop: close };
  } catch (err) {
    await close().catch(() => undefined);
    throw err;
  }
}
