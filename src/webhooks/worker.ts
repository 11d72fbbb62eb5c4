import { randomUUID } from 'node:crypto';
import os from 'node:os';
import type { Logger } from 'pino';
import type { Config } from '../config/config.js';
import type { Subscription } from '../db/listen.js';
import type { Db } from '../db/pool.js';
import type { WebhookMetrics } from '../metrics/metrics.js';
import { AgentPool, type AgentPoolOptions } from '../net/agents.js';
import { endFailingStreak, logAutoPause, noteFailedAttempt } from './health.js';
import { isDataError, settleAndClaim, type Claimed, type Outcome } from './queue.js';
import { sendAttempt } from './send.js';

export const WEBHOOKS_CHANNEL = 'toolrun_webhooks';

/**
 * Under the 5 s keep-alive that Node, Apache and many proxies close idle connections at, so the
 * endpoint rarely closes one just as a delivery reuses it (an announced shorter one is heeded).
 */
export const WEBHOOK_IDLE_MS = 4000;

/** The longest a finished attempt waits for the rest of its wave, to be settled with them. */
const GATHER_MAX_MS = 20;

/**
 * The event body: the same bytes on every attempt (the event row is immutable and jsonb reads
 * back in a fixed key order).
 */
export function eventBody(e: { event_id: string; event_type: string; event_created_at: Date; payload: unknown }): Buffer {
  return Buffer.from(
    JSON.stringify({ id: e.event_id, object: 'event', type: e.event_type, created_at: e.event_created_at.toISOString(), data: { run: e.payload } }),
  );
}

/** A claimed delivery's place among the worker's concurrency slots, until it is given back. */
interface Slot {
  open: boolean;
  /** The tick that claimed it (see `wave`). */
  wave: number;
}

interface Finished {
  outcome: Outcome;
  slot: Slot;
  settled: () => void;
  failed: (err: unknown) => void;
}

/**
 * Sends webhook deliveries. Deliveries are rows; a worker claims due ones with FOR UPDATE SKIP
 * LOCKED and a lease, so a crash or restart loses none and no attempt runs twice at once. Failed
 * attempts are retried on the configured schedule, then the delivery is given up.
 *
 * One database round trip at a time (a tick) settles the attempts that finished since the last
 * one and claims deliveries for the slots free then: a slot is refilled in the round trip that
 * frees it, and many attempts finishing together cost one statement. A tick runs when attempts
 * finish, on a notification, and on a poll for due retries.
 *
 * Ticks commit without waiting for the WAL flush (the relaxed pool): a tick a PostgreSQL crash
 * loses only gives a delivery back to be sent again (a lost claim or settle leaves the row
 * pending; its lease lapses), which at-least-once delivery allows; the delivery rows themselves
 * are written by the run's own (synchronous) transaction. On a disk where a flush takes a few
 * milliseconds, waiting for it was a large part of each wave's round trip, with no attempt in flight.
 */
export class WebhookWorker {
  readonly id = `${os.hostname()}:${process.pid}:wh:${randomUUID().slice(0, 8)}`;
  private readonly listener: Subscription;
  private stopping = false;
  /** Deliveries claimed and not yet settled (or dropped, or given back). */
  private held = 0;
  private readonly sending = new Set<Promise<void>>();
  private readonly finished: Finished[] = [];
  /** Look for due deliveries at the next tick even with nothing to settle. */
  private wanted = false;
  private ticking: Promise<void> | null = null;
  private gathering: NodeJS.Timeout | null = null;
  /** The deliveries the last tick claimed: how many are still being sent, and until when to wait for them. */
  private wave = 0;
  private waveLeft = 0;
  private waveEndsAt = 0;
  private poll: NodeJS.Timeout | null = null;
  private readonly abort = new AbortController();
  /** Keep-alive connections to endpoints, per host, port and vetted address; closed on stop. */
  readonly agents: AgentPool;

  constructor(
    private readonly opts: {
      config: Config;
      db: Db;
      logger: Logger;
      metrics?: WebhookMetrics;
      /** Tests: other bounds for the connection pool. */
      agents?: Partial<AgentPoolOptions>;
    },
  ) {
    const { concurrency } = opts.config.webhooks;
    // Idle sockets: no more than can be busy at once. Agents: room for every slot on an endpoint
    // of its own, so a burst across many endpoints does not retire agents still in use.
    this.agents = new AgentPool({ idleMs: WEBHOOK_IDLE_MS, maxAgents: Math.max(64, concurrency), maxIdleSockets: concurrency, ...opts.agents });
    this.listener = opts.db.notifications.subscribe({
      channels: [WEBHOOKS_CHANNEL],
      onNotification: () => this.poke(),
      onConnected: () => this.poke(),
    });
  }

  async start(): Promise<void> {
    await this.listener.start();
    this.poke();
    this.poll = setInterval(() => this.poke(), Math.min(this.opts.config.runs.pollMs, 1000));
    this.poll.unref();
  }

  /** Something may be due: look at the next tick. */
  private poke(): void {
    this.wanted = true;
    this.kick();
  }

  /** Starts a tick if there is something to do and none is running (it kicks again when done). */
  private kick(): void {
    if (this.ticking) return;
    const waiting = this.finished.length;
    const looking = this.wanted && !this.stopping;
    if (!waiting && !looking) return;
    // A tick refills many slots at once, so attempts finish in waves. Settling the first of a
    // wave alone would hold the rest a round trip behind it, and the next wave behind them: the
    // first waits instead for the rest of its wave, at most GATHER_MAX_MS after the wave was
    // claimed (an attempt from an older wave, to a slow endpoint, is not waited for).
    const wait = this.waveEndsAt - performance.now();
    if (!looking && !this.stopping && this.waveLeft > 0 && wait > 0) {
      this.gathering ??= setTimeout(() => this.startTick(), wait);
      return;
    }
    this.startTick();
  }

  private startTick(): void {
    if (this.gathering) clearTimeout(this.gathering);
    this.gathering = null;
    if (this.ticking) return;
    this.ticking = this.tick().finally(() => {
      this.ticking = null;
      this.kick();
    });
  }

  /**
   * Deliveries one endpoint may have in flight at once (all workers together, soft under races):
   * a quarter of a worker's slots, so a slow or hanging endpoint never takes all of them and
   * other endpoints' deliveries go out meanwhile.
   */
  get perEndpointLimit(): number {
    return Math.max(1, Math.floor(this.opts.config.webhooks.concurrency / 4));
  }

  private release(slot: Slot): void {
    if (!slot.open) return;
    slot.open = false;
    this.held--;
  }

  private async tick(): Promise<void> {
    const { config, db, logger } = this.opts;
    const batch = this.finished.splice(0);
    if (this.stopping) return this.settleOnly(batch);
    const looking = this.wanted;
    this.wanted = false;
    // The batch's slots are given back by this same statement, so they count as free.
    const free = looking || batch.length ? Math.max(0, config.webhooks.concurrency - this.held + batch.length) : 0;
    if (!batch.length && !free) return;
    let claimed: Claimed[];
    try {
      claimed = await settleAndClaim(db.relaxed, this.id, batch.map((f) => f.outcome), free, this.perEndpointLimit);
    } catch (err) {
      logger.warn({ err }, 'settling and claiming webhook deliveries failed');
      if (batch.length > 1 && isDataError(err)) await this.settleOnly(batch);
      else {
        for (const f of batch) {
          this.release(f.slot);
          f.failed(err);
        }
      }
      // No claim at once after a failure (the database may be away): the next poll looks again.
      return;
    }
    for (const f of batch) {
      this.release(f.slot);
      f.settled();
    }
    this.held += claimed.length;
    if (claimed.length) {
      this.wave++;
      this.waveLeft = claimed.length;
      this.waveEndsAt = performance.now() + GATHER_MAX_MS;
    }
    for (const d of claimed) this.dispatch(d);
    // Every slot asked for was filled: more may be due.
    if (free > 0 && claimed.length === free) this.wanted = true;
  }

  /** Settles each alone, claiming nothing: one refused row does not lose the others. */
  private async settleOnly(batch: Finished[]): Promise<void> {
    for (const f of batch) {
      try {
        await settleAndClaim(this.opts.db.relaxed, this.id, [f.outcome], 0, this.perEndpointLimit);
        this.release(f.slot);
        f.settled();
      } catch (err) {
        this.release(f.slot);
        f.failed(err);
      }
    }
    if (batch.length) this.wanted = true;
  }

  private dispatch(d: Claimed): void {
    const slot: Slot = { open: true, wave: this.wave };
    const p: Promise<void> = this.deliver(d, slot)
      .catch((err: unknown) => this.opts.logger.error({ err, delivery_id: d.id }, 'webhook delivery crashed'))
      .finally(() => {
        this.sending.delete(p);
        this.sent(slot);
        // Dropped, or failed before its outcome was settled: the slot is free and nothing refilled it.
        if (slot.open) {
          this.release(slot);
          this.poke();
        }
      });
    this.sending.add(p);
  }

  /** The attempt is over: its wave has one fewer to wait for. */
  private sent(slot: Slot): void {
    if (slot.wave !== this.wave) return;
    slot.wave = -1;
    this.waveLeft--;
  }

  /** Resolves once the tick that carries the outcome has committed it. */
  private settle(outcome: Outcome, slot: Slot): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.finished.push({ outcome, slot, settled: resolve, failed: reject });
      this.sent(slot);
      this.kick();
    });
  }

  private async deliver(d: Claimed, slot: Slot): Promise<void> {
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
      previousSecret: d.previous_secret,
      deliveryId: d.id,
      eventType: d.event_type,
      body: eventBody(d),
      timeoutMs: config.webhooks.timeoutMs,
      allowPrivate: config.allowPrivateNetwork,
      signal: this.abort.signal,
      agents: this.agents,
      endpointId: d.endpoint_id,
      // Not a child logger per attempt: it is only written to when a host is refused.
      log: logger,
    });
    const delays = config.webhooks.retryDelaysSeconds;
    const giveUp = d.attempts > delays.length;
    this.opts.metrics?.webhookAttempt(result.delivered ? 'delivered' : giveUp ? 'given_up' : 'retry', result.durationMs / 1000);
    // Settled together with the attempts that finished meanwhile (one statement for all).
    await this.settle(
      {
        deliveryId: d.id,
        endpointId: d.endpoint_id,
        eventType: d.event_type,
        statusCode: result.statusCode,
        error: result.error,
        durationMs: result.durationMs,
        excerpt: result.excerpt,
        attemptedAt: result.attemptedAt,
        status: result.delivered ? 'delivered' : giveUp ? 'failed' : 'pending',
        retryInSeconds: result.delivered || giveUp ? 0 : (delays[d.attempts - 1] ?? 0),
      },
      slot,
    );
    logger.info(
      { delivery_id: d.id, endpoint_id: d.endpoint_id, event: d.event_type, attempt: d.attempts, status: result.statusCode, delivered: result.delivered },
      result.delivered ? 'webhook delivered' : giveUp ? 'webhook given up' : 'webhook attempt failed',
    );
    await this.trackHealth(d, result.delivered, result.statusCode, result.attemptedAt);
  }

  /**
   * After the attempt is settled (so whoever sees the pause also sees the attempt that caused it):
   * a success ends a failing streak, a failure may start one or pause the endpoint. A database
   * error here loses only this bookkeeping, never the delivery's outcome.
   */
  private async trackHealth(d: Claimed, delivered: boolean, statusCode: number | null, attemptedAt: Date): Promise<void> {
    const { db, config, logger } = this.opts;
    try {
      if (delivered) {
        // A retry also looks: its own failure may have started a streak after this claim read none.
        if (d.failing_since || d.attempts > 1) await endFailingStreak(db.pool, d.endpoint_id, attemptedAt);
        return;
      }
      const windowSeconds = config.webhooks.pauseAfterFailingSeconds;
      const paused = await noteFailedAttempt(db, { endpointId: d.endpoint_id, attemptedAt, statusCode, windowSeconds });
      if (paused) logAutoPause(logger, d.endpoint_id, paused, statusCode, windowSeconds);
    } catch (err) {
      logger.warn({ err, endpoint_id: d.endpoint_id, delivery_id: d.id }, "recording the webhook endpoint's health failed");
    }
  }

  async stop(graceMs = 10_000): Promise<void> {
    this.stopping = true;
    if (this.poll) clearInterval(this.poll);
    // A tick under way may still claim: what it claims is sent (or cut off) like the rest.
    await this.ticking;
    const all = Promise.all([...this.sending]);
    const timedOut = await Promise.race([all.then(() => false), new Promise<boolean>((r) => setTimeout(() => r(true), graceMs).unref())]);
    if (timedOut) {
      this.abort.abort();
      await all;
    }
    await this.ticking;
    this.agents.close();
    await this.listener.stop();
  }
}
