import type { Logger } from 'pino';
import type { Config } from '../config/config.js';
import type { Db } from '../db/pool.js';
import { expireFiles, startJanitor } from '../files/janitor.js';
import { expireOutputs } from '../runs/outputs.js';
import type { MediaBinaries } from '../media/binaries.js';
import { RunWorker } from '../runs/worker.js';
import type { Storage } from '../storage/storage.js';
import type { ToolRegistry } from '../tools/registry.js';
import { WebhookWorker } from '../webhooks/worker.js';

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
  connectionString: string;
  storage: Storage;
  tools: ToolRegistry;
  media: MediaBinaries;
  logger: Logger;
}): Promise<BackgroundWork> {
  const worker = new RunWorker({ ...deps, concurrency: deps.config.workerConcurrency });
  await worker.start();
  const webhooks = new WebhookWorker(deps);
  await webhooks.start();
  const janitor = startJanitor(
    [() => expireFiles(deps.db, deps.storage, deps.logger), () => expireOutputs(deps.db, deps.storage, deps.logger)],
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
