import type { Logger } from 'pino';
import type { Db } from '../db/pool.js';
import type { Storage } from '../storage/storage.js';
import { claimExpiredFiles, markExpired } from './repository.js';

/**
 * Deletes the bytes of abandoned uploads and of completed files past their retention, and marks
 * them expired. Rows are claimed with SKIP LOCKED, so any number of processes may run this.
 * Returns how many files it expired.
 */
export async function expireFiles(db: Db, storage: Storage, logger: Logger, batch = 100): Promise<number> {
  let total = 0;
  for (;;) {
    const done = await db.tx(async (tx) => {
      const rows = await claimExpiredFiles(tx, batch);
      for (const row of rows) {
        if (row.status === 'uploading') await storage.abortUpload(row.storage_key, row.upload_id);
        // Also for uploads: an object assembled but never committed (a crash) is left behind.
        await storage.delete(row.storage_key);
        await markExpired(tx, row.id);
      }
      return rows.length;
    });
    total += done;
    if (done < batch) break;
  }
  if (total) logger.info({ files: total }, 'expired files deleted');
  return total;
}

/** Runs each task now and then every intervalMs until stopped; a failing task is logged and retried next time. */
export function startJanitor(tasks: (() => Promise<unknown>)[], logger: Logger, intervalMs = 5 * 60_000): { stop(): Promise<void> } {
  let running: Promise<unknown> = Promise.resolve();
  const tick = () => {
    running = (async () => {
      for (const task of tasks) await task().catch((err: unknown) => logger.warn({ err }, 'expiry task failed'));
    })();
  };
  tick();
  const timer = setInterval(tick, intervalMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
