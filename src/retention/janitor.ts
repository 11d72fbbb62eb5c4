import type { Logger } from 'pino';
import { DEAD_BUCKET_GRACE_SECONDS, deleteDeadRateBuckets } from '../auth/retention.js';
import type { RetentionConfig } from '../config/retention.js';
import type { Queryable } from '../db/pool.js';
import { deleteExpiredFileRows } from '../files/repository.js';
import { deleteExpiredOutputRows, deleteOldRunEvents } from '../runs/retention.js';
import { deleteOldAttempts, deleteOldDeliveries } from '../webhooks/retention.js';

/** One kind of row past its period: its name (for the log) and one batch of its delete. */
export interface RetentionStep {
  name: string;
  batch(db: Queryable, limit: number): Promise<number>;
}

const DAY_SECONDS = 86_400;

/**
 * What the janitor deletes, in an order where each step frees the next: deliveries before the
 * events they refer to. Runs and ledger rows are never among them. `lagSeconds` moves the
 * janitor's clock back (every period longer by that much): bench:retention runs a simulated week
 * of passes this way, with rows dated in the past; the service always uses 0.
 */
export function retentionSteps(config: RetentionConfig, lagSeconds = 0): RetentionStep[] {
  const days = (n: number) => n * DAY_SECONDS + lagSeconds;
  return [
    { name: 'webhook_deliveries', batch: (db, n) => deleteOldDeliveries(db, days(config.webhookDays), n) },
    { name: 'webhook_attempts', batch: (db, n) => deleteOldAttempts(db, days(config.webhookDays), n) },
    { name: 'run_events', batch: (db, n) => deleteOldRunEvents(db, days(config.runEventsDays), n) },
    { name: 'run_outputs', batch: (db, n) => deleteExpiredOutputRows(db, days(config.expiredRowsDays), n) },
    { name: 'files', batch: (db, n) => deleteExpiredFileRows(db, days(config.expiredRowsDays), n) },
    { name: 'rate_buckets', batch: (db, n) => deleteDeadRateBuckets(db, n, DEAD_BUCKET_GRACE_SECONDS + lagSeconds) },
  ];
}

/**
 * Deletes every row past its retention, a batch at a time: each batch is one statement on the
 * pool (its own short transaction, autocommitted), so no lock is held between batches and any
 * number of processes may run this at once (SKIP LOCKED: each takes other rows). A step ends when
 * a batch comes back short. Returns the rows deleted per table.
 */
export async function deleteExpiredRows(db: Queryable, config: RetentionConfig, logger: Logger, lagSeconds = 0): Promise<Record<string, number>> {
  const deleted: Record<string, number> = {};
  for (const step of retentionSteps(config, lagSeconds)) {
    let total = 0;
    for (;;) {
      const n = await step.batch(db, config.batchSize);
      total += n;
      if (n < config.batchSize) break;
    }
    deleted[step.name] = total;
  }
  const any = Object.values(deleted).some((n) => n > 0);
  if (any) logger.info({ deleted }, 'rows past their retention deleted');
  return deleted;
}
