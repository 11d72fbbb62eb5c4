import { randomUUID } from 'node:crypto';
import os from 'node:os';
import type { Logger } from 'pino';
import type { Config } from '../config/config.js';
import { Listener } from '../db/listen.js';
import type { Db } from '../db/pool.js';
import type { WebhookMetrics } from '../metrics/metrics.js';
import { recordAttempt } from './repository.js';
import { sendAttempt } from './send.js';

export const WEBHOOKS_CHANNEL = 'toolrun_webhooks';

interface Claimed {
  id: string;
  endpoint_id: string;
  attempts: number;
  url: string;
  secret: string;
  enabled: boolean;
  deleted: boolean;
  event_id: string;
  event_type: string;
  event_created_at: Date;
  payload: unknown;
}

/**
 * The event body: the same bytes on every attempt (the event row is immutable and jsonb reads
 * back in a fixed key order).
 */
export function eventBody(e: { event_id: string; event_type: string; event_created_at: Date; payload: unknown }): Buffer {
  return Buffer.from(
    JSON.stringify({ id: e.event_id, object: 'event', type: e.event_type, created_at: e.event_created_at.toISOString(), data: { run: e.payload } }),
  );
}

/**
 * Sends webhook deliveries. Deliveries are rows; a worker claims due ones with FOR UPDATE SKIP
 * LOCKED and a lease, so a crash or restart loses none and no attempt runs twice at once. Failed
 * attempts are retried on the configured schedule, then the delivery is given up.
 */
export class WebhookWorker {
  readonly id = `${os.hostname()}:${process.pid}:wh:${randomUUID().slice(0, 8)}`;
  private readonly listener: Listener;
  private stopping = false;
  private wake: (() => void) | null = null;
  /** A poke arrived while the loop was not sleeping (mid-claim): it must look again at once. */
  private poked = false;
  private loop: Promise<void> | null = null;
  private readonly inFlight = new Set<Promise<void>>();
  private readonly abort = new AbortController();

  constructor(private readonly opts: { config: Config; db: Db; logger: Logger; connectionString: string; metrics?: WebhookMetrics }) {
    this.listener = new Listener({
      connectionString: opts.connectionString,
      channels: [WEBHOOKS_CHANNEL],
      applicationName: 'toolrun-webhooks-listen',
      logger: opts.logger,
      onNotification: () => this.poke(),
      onConnected: () => this.poke(),
    });
  }

  async start(): Promise<void> {
    await this.listener.start();
    this.loop = this.run();
  }

  private poke(): void {
    this.poked = true;
    const w = this.wake;
    this.wake = null;
    w?.();
  }

  /**
   * Deliveries one endpoint may have in flight at once (all workers together, soft under races):
   * a quarter of a worker's slots, so a slow or hanging endpoint never takes all of them and
   * other endpoints' deliveries go out meanwhile.
   */
  get perEndpointLimit(): number {
    return Math.max(1, Math.floor(this.opts.config.webhooks.concurrency / 4));
  }

  private async claim(limit: number): Promise<Claimed[]> {
    // The lease outlives one attempt (10 s deadline) with room to record it. Due deliveries are
    // ranked per endpoint after those it already has in flight; only ranks within the per-endpoint
    // limit are taken, oldest first.
    const { rows } = await this.opts.db.pool.query<Claimed>(
      `WITH busy AS (
         SELECT endpoint_id, count(*)::integer AS n FROM webhook_deliveries
          WHERE status = 'pending' AND lease_expires_at >= now() GROUP BY endpoint_id
       ), due AS (
         SELECT d.id, d.next_attempt_at,
                coalesce(b.n, 0) + row_number() OVER (PARTITION BY d.endpoint_id ORDER BY d.next_attempt_at, d.id) AS rank
           FROM webhook_deliveries d LEFT JOIN busy b ON b.endpoint_id = d.endpoint_id
          WHERE d.status = 'pending' AND d.next_attempt_at <= now() AND (d.lease_expires_at IS NULL OR d.lease_expires_at < now())
       ), picked AS (
         SELECT w.id FROM webhook_deliveries w JOIN due ON due.id = w.id
          WHERE due.rank <= $3::integer
          ORDER BY due.next_attempt_at, w.id LIMIT $2::integer
          FOR UPDATE OF w SKIP LOCKED
       ), c AS (
         UPDATE webhook_deliveries d SET lease_owner = $1::text, lease_expires_at = now() + interval '60 seconds', attempts = d.attempts + 1
          WHERE d.id IN (SELECT id FROM picked) AND d.status = 'pending' AND (d.lease_expires_at IS NULL OR d.lease_expires_at < now())
         RETURNING d.id, d.endpoint_id, d.attempts, d.event_id)
       SELECT c.id, c.endpoint_id, c.attempts, e.url, e.signing_secret AS secret, e.enabled, (e.deleted_at IS NOT NULL) AS deleted,
              ev.id AS event_id, ev.type AS event_type, ev.created_at AS event_created_at, ev.payload
         FROM c JOIN webhook_endpoints e ON e.id = c.endpoint_id JOIN run_events ev ON ev.id = c.event_id`,
      [this.id, limit, this.perEndpointLimit],
    );
    return rows;
  }

  private async deliver(d: Claimed): Promise<void> {
    const { db, config, logger } = this.opts;
    if (!d.enabled || d.deleted) {
      await db.pool.query(
        `UPDATE webhook_deliveries SET status = 'dropped', finished_at = now(), lease_owner = NULL WHERE id = $1::uuid AND lease_owner = $2::text`,
        [d.id, this.id],
      );
      return;
    }
    const result = await sendAttempt({
      url: d.url,
      secret: d.secret,
      deliveryId: d.id,
      eventType: d.event_type,
      body: eventBody(d),
      timeoutMs: config.webhooks.timeoutMs,
      allowPrivate: config.allowPrivateNetwork,
      signal: this.abort.signal,
      log: logger.child({ endpoint_id: d.endpoint_id }),
    });
    const delays = config.webhooks.retryDelaysSeconds;
    const giveUp = d.attempts > delays.length;
    this.opts.metrics?.webhookAttempt(result.delivered ? 'delivered' : giveUp ? 'given_up' : 'retry', result.durationMs / 1000);
    await db.tx(async (tx) => {
      await recordAttempt(tx, {
        deliveryId: d.id,
        endpointId: d.endpoint_id,
        eventType: d.event_type,
        statusCode: result.statusCode,
        error: result.error,
        durationMs: result.durationMs,
        excerpt: result.excerpt,
        attemptedAt: result.attemptedAt,
      });
      // Only if still ours and still pending: a pause or delete meanwhile dropped it.
      await tx.query(
        `UPDATE webhook_deliveries
            SET status = $3::text, lease_owner = NULL, lease_expires_at = NULL,
                next_attempt_at = now() + make_interval(secs => $4::integer),
                finished_at = CASE WHEN $3::text = 'pending' THEN NULL ELSE now() END
          WHERE id = $1::uuid AND lease_owner = $2::text AND status = 'pending'`,
        [d.id, this.id, result.delivered ? 'delivered' : giveUp ? 'failed' : 'pending', result.delivered || giveUp ? 0 : delays[d.attempts - 1] ?? 0],
      );
    });
    logger.info(
      { delivery_id: d.id, endpoint_id: d.endpoint_id, event: d.event_type, attempt: d.attempts, status: result.statusCode, delivered: result.delivered },
      result.delivered ? 'webhook delivered' : giveUp ? 'webhook given up' : 'webhook attempt failed',
    );
  }

  private async run(): Promise<void> {
    const { config, logger } = this.opts;
    while (!this.stopping) {
      this.poked = false;
      const free = config.webhooks.concurrency - this.inFlight.size;
      let claimed: Claimed[] = [];
      if (free > 0) {
        try {
          claimed = await this.claim(free);
        } catch (err) {
          logger.warn({ err }, 'claiming webhook deliveries failed');
        }
      }
      for (const d of claimed) {
        const p: Promise<void> = this.deliver(d)
          .catch((err: unknown) => logger.error({ err, delivery_id: d.id }, 'webhook delivery crashed'))
          .finally(() => {
            this.inFlight.delete(p);
            this.poke();
          });
        this.inFlight.add(p);
      }
      // Look again at once if everything free was taken, or if a notification or a finished
      // delivery arrived while the claim ran (its poke found no sleeper to wake).
      if ((claimed.length && claimed.length === free) || this.poked) continue;
      // Sleep until a notification, a finished delivery, or the next due retry (polled).
      let timer: NodeJS.Timeout | undefined;
      await new Promise<void>((resolve) => {
        this.wake = resolve;
        timer = setTimeout(resolve, Math.min(config.runs.pollMs, 1000)).unref();
      });
      clearTimeout(timer);
      this.wake = null;
    }
  }

  async stop(graceMs = 10_000): Promise<void> {
    this.stopping = true;
    this.poke();
    await this.loop;
    const all = Promise.all([...this.inFlight]);
    const timedOut = await Promise.race([all.then(() => false), new Promise<boolean>((r) => setTimeout(() => r(true), graceMs).unref())]);
    if (timedOut) {
      this.abort.abort();
      await all;
    }
    await this.listener.stop();
  }
}
