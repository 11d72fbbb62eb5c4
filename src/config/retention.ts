import { ConfigError, type Env, int } from './values.js';

/**
 * How long rows that only grow are kept before the janitor deletes them (issue 37). Runs and
 * ledger rows are never deleted: they are the team's history and its money.
 */
export interface RetentionConfig {
  /**
   * Days a run event (the webhook outbox row, and what `GET /v1/events` resumes from) is kept after
   * it was written. At least the webhook period: a delivery's log line shows its event, and a
   * redelivery sends the event's stored body again. At least 1: the team stream resumes from any
   * event of the last 24 hours.
   */
  runEventsDays: number;
  /** Days a webhook delivery is kept after it ended (delivered, failed or dropped), and an attempt after it was made. */
  webhookDays: number;
  /** Days an expired file row or output row (its bytes already deleted) is kept after its expiry before the row goes too. */
  expiredRowsDays: number;
  /** Rows one delete statement removes at most: each batch is its own short transaction. */
  batchSize: number;
}

/** The team stream's resume window (src/events/routes.ts, LOOK_BACK_HOURS) in days: the least run events are kept. */
export const STREAM_RESUME_DAYS = 1;

export function retentionConfig(env: Env): RetentionConfig {
  const webhookDays = int(env, 'TOOLRUN_RETENTION_WEBHOOK_DAYS', 30, 1, 3650);
  const runEventsDays = int(env, 'TOOLRUN_RETENTION_RUN_EVENTS_DAYS', Math.max(30, webhookDays), STREAM_RESUME_DAYS, 3650);
  if (runEventsDays < webhookDays) {
    throw new ConfigError(
      'TOOLRUN_RETENTION_RUN_EVENTS_DAYS',
      `must be at least TOOLRUN_RETENTION_WEBHOOK_DAYS (${webhookDays}): a kept delivery shows its event and a redelivery sends it again; got ${runEventsDays}`,
    );
  }
  return {
    runEventsDays,
    webhookDays,
    expiredRowsDays: int(env, 'TOOLRUN_RETENTION_EXPIRED_ROWS_DAYS', 7, 0, 3650),
    batchSize: int(env, 'TOOLRUN_RETENTION_BATCH_SIZE', 1000, 10, 100_000),
  };
}
