import { randomUUID } from 'node:crypto';
import os from 'node:os';
import type { Subscription } from '../db/listen.js';
import type { Db } from '../db/pool.js';
import type { RunOutcome } from '../metrics/metrics.js';
import { executeRun, type ExecutorDeps, type StopReason } from './executor.js';
import { sweepOutputChecks } from './output-checks.js';
import type { TeamConcurrency } from '../config/config.js';
import { claimLapsed, claimQueued } from './claim.js';
import { lockRun, type RunRow } from './repository.js';
import { CANCEL_CHANNEL, cancelLockedRun, failRun, RUNS_CHANNEL } from './transitions.js';

export interface WorkerOptions extends ExecutorDeps {
  concurrency: number;
}

interface Active {
  runId: string;
  abort: AbortController;
  reason: StopReason | null;
  /** This execution's lease token (the run's lease_owner while it holds the run). */
  lease: string;
  done: Promise<void>;
}

/**
 * Takes a queued run by fair order (claim.ts), or else one whose worker's lease lapsed, under the
 * lease token `owner`. Tokens are unique per claim, not per worker, so an execution that lost its
 * lease can never pass for a later execution of the same run in the same worker.
 */
async function claim(db: Db, owner: string, leaseSeconds: number, limits: TeamConcurrency): Promise<RunRow | null> {
  return (await claimQueued(db, owner, leaseSeconds, limits)) ?? (await claimLapsed(db, owner, leaseSeconds));
}

/** Runs whose lease lapsed once too often are failed, their hold released. */
async function giveUpAbandoned(db: Db): Promise<number> {
  return db.tx(async (tx) => {
    const { rows } = await tx.query<{ id: string; attempts: number }>(
      `SELECT id, attempts FROM runs WHERE status = 'running' AND lease_expires_at < now() AND attempts >= max_attempts
        LIMIT 20 FOR UPDATE SKIP LOCKED`,
    );
    for (const r of rows) {
      const times = `${r.attempts} time${r.attempts === 1 ? '' : 's'}`;
      await failRun(tx, r.id, `The run was interrupted ${times} (its worker stopped) and was given up; its hold was released.`, null);
    }
    return rows.length;
  });
}

/** Runs past their Cancel-After deadline are canceled (the worker running one stops it on the notification). */
async function cancelOverdue(db: Db): Promise<number> {
  return db.tx(async (tx) => {
    const { rows } = await tx.query<{ id: string }>(
      `SELECT id FROM runs WHERE cancel_at <= now() AND status IN ('queued', 'running') ORDER BY cancel_at LIMIT 20 FOR UPDATE SKIP LOCKED`,
    );
    for (const { id } of rows) {
      const run = await lockRun(tx, id);
      if (!run) continue;
      const message = 'The run was not finished by its Cancel-After deadline and was canceled by the service; its hold was released.';
      await cancelLockedRun(tx, run, message);
    }
    return rows.length;
  });
}

/**
 * A pool of run slots in one process. PostgreSQL is the queue: claims use FOR UPDATE SKIP LOCKED,
 * LISTEN/NOTIFY wakes idle workers at once (with a slow poll as a fallback) and tells the worker
 * running a canceled run to stop it. Any number of workers on any machines may share a database.
 */
export class RunWorker {
  readonly id = `${os.hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  /** Executions by lease token (a run lost and retaken here may briefly have two). */
  private readonly active = new Map<string, Active>();
  private readonly listener: Subscription;
  private stopping = false;
  private wake: (() => void) | null = null;
  /** A poke arrived while the loop was not sleeping (e.g. mid-claim): it must look again. */
  private poked = false;
  private claims = 0;
  private loop: Promise<void> | null = null;
  private sweepTimer: NodeJS.Timeout | null = null;

  constructor(private readonly opts: WorkerOptions) {
    this.listener = opts.db.notifications.subscribe({
      channels: [RUNS_CHANNEL, CANCEL_CHANNEL],
      onNotification: (channel, payload) => {
        if (channel === RUNS_CHANNEL) this.poke();
        if (channel === CANCEL_CHANNEL && payload) this.stopRun(payload, 'canceled');
      },
      // Work may have arrived while we were not listening.
      onConnected: () => this.poke(),
    });
  }

  async start(): Promise<void> {
    await this.listener.start();
    this.loop = this.run();
    // Lapsed leases are looked for at least once per lease period, however slow the poll.
    const { pollMs, leaseSeconds } = this.opts.config.runs;
    this.sweepTimer = setInterval(() => void this.sweep(), Math.max(1000, Math.min(pollMs, leaseSeconds * 1000)));
    this.opts.logger.info({ worker: this.id, concurrency: this.opts.concurrency }, 'run worker started');
  }

  private poke(): void {
    this.poked = true;
    const w = this.wake;
    this.wake = null;
    w?.();
  }

  private stopRun(runId: string, reason: StopReason): void {
    for (const a of this.active.values()) {
      if (a.runId !== runId || a.abort.signal.aborted) continue;
      a.reason = reason;
      a.abort.abort(reason);
    }
  }

  private async sweep(): Promise<void> {
    try {
      await giveUpAbandoned(this.opts.db);
      await cancelOverdue(this.opts.db);
      await sweepOutputChecks(this.opts.db, this.opts.storage, this.opts.logger);
    } catch (err) {
      this.opts.logger.warn({ err }, 'worker sweep failed');
    }
    this.poke();
  }

  /** Sleeps until poked or ms pass. */
  private async sleep(ms: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await new Promise<void>((resolve) => {
      this.wake = resolve;
      timer = setTimeout(resolve, ms).unref();
    });
    clearTimeout(timer);
    this.wake = null;
  }

  private async run(): Promise<void> {
    const { db, config, logger } = this.opts;
    while (!this.stopping) {
      // Pokes from here on (a notification while the claim below runs) make the loop look again.
      this.poked = false;
      let failed = false;
      if (this.active.size < this.opts.concurrency) {
        const lease = `${this.id}/${++this.claims}`;
        const claimedAt = Date.now(); // before the claim: the lease cannot have started earlier
        let claimed: RunRow | null = null;
        try {
          claimed = await claim(db, lease, config.runs.leaseSeconds, config.runs.teamConcurrency);
        } catch (err) {
          failed = true;
          logger.warn({ err }, 'claiming a run failed');
        }
        if (claimed) {
          if (this.stopping) {
            // Claimed while stop() began: hand it straight back rather than strand it.
            await this.handBack([claimed.id], [lease]);
            break;
          }
          if (Date.now() - claimedAt >= (config.runs.leaseSeconds * 1000) / 2) {
            // The claim's answer took half a lease or more (a stalled database): the execution
            // would fence itself before its first renewal and the attempt would be lost for
            // nothing. Give the run back uncounted; the next claim starts a fresh lease.
            logger.warn({ run_id: claimed.id, ms: Date.now() - claimedAt }, 'claim answered too late; run handed back');
            await this.handBack([claimed.id], [lease]);
            continue;
          }
          this.launch(claimed, lease, claimedAt);
          continue;
        }
      }
      if (this.stopping) break;
      if (this.poked && !failed) continue;
      await this.sleep(failed ? Math.min(1000, config.runs.pollMs) : config.runs.pollMs);
    }
  }

  private launch(run: RunRow, lease: string, claimedAt: number): void {
    const abort = new AbortController();
    const entry: Active = { runId: run.id, abort, reason: null, lease, done: Promise.resolve() };
    const reason = () => entry.reason ?? (abort.signal.reason as StopReason | null) ?? null;
    entry.done = executeRun(this.opts, run, lease, { abort, claimedAt, reason })
      .catch((err: unknown) => this.opts.logger.error({ err, run_id: run.id }, 'run executor crashed'))
      .then(() => this.recordEnd(run, reason(), claimedAt))
      .finally(() => {
        this.active.delete(lease);
        this.poke();
      });
    this.active.set(lease, entry);
  }

  /**
   * The execution has ended; the run's row says how (the executor settles it, or not when it was
   * stopped). A stopped run still running is not final: it was handed back or lost its lease.
   */
  private async recordEnd(run: RunRow, reason: StopReason | null, claimedAt: number): Promise<void> {
    const metrics = this.opts.metrics;
    if (!metrics) return;
    const seconds = (Date.now() - claimedAt) / 1000;
    let outcome: RunOutcome = reason === 'lease_lost' ? 'lease_lost' : 'interrupted';
    if (reason !== 'lease_lost') {
      try {
        const { rows } = await this.opts.db.pool.query<{ status: string }>('SELECT status FROM runs WHERE id = $1::uuid', [run.id]);
        const status = rows[0]?.status;
        if (status === 'succeeded' || status === 'failed' || status === 'canceled') outcome = status;
        else if (reason === 'shutdown') outcome = 'handed_back';
      } catch {
        return; // the database is away: one sample fewer, nothing worse
      }
    }
    metrics.runEnded(run.tool_id, outcome, seconds);
  }

  /** Number of runs this worker is executing now. */
  get busy(): number {
    return this.active.size;
  }

  /**
   * Gives leases back without counting the attempt, and wakes the other workers so that one of
   * them takes the runs at once.
   */
  private async handBack(ids: string[], leases: string[]): Promise<void> {
    await this.opts.db.pool
      .query(
        `WITH back AS (
           UPDATE runs SET lease_owner = NULL, lease_expires_at = now() - interval '1 second', attempts = greatest(0, attempts - 1)
            WHERE id = ANY ($1::uuid[]) AND lease_owner = ANY ($2::text[]) AND status = 'running'
            RETURNING id)
         SELECT pg_notify($3::text, id::text) FROM back`,
        [ids, leases, RUNS_CHANNEL],
      )
      .catch((err: unknown) => this.opts.logger.warn({ err }, 'could not hand back leases'));
  }

  /**
   * Stops claiming, lets running work finish for up to graceMs, then stops what is left and hands
   * its leases back (the attempt does not count) so another worker takes those runs at once.
   */
  async stop(graceMs = 30_000): Promise<void> {
    this.stopping = true;
    this.poke();
    if (this.sweepTimer) clearInterval(this.sweepTimer);
    this.sweepTimer = null;
    await this.loop;
    const all = () => Promise.all([...this.active.values()].map((a) => a.done));
    let graceTimer: NodeJS.Timeout | undefined;
    const timedOut = await Promise.race([
      all().then(() => false),
      new Promise<boolean>((r) => {
        graceTimer = setTimeout(() => r(true), graceMs);
      }),
    ]);
    clearTimeout(graceTimer);
    if (timedOut) {
      const left = [...this.active.values()];
      for (const a of left) this.stopRun(a.runId, 'shutdown');
      await all();
      await this.handBack(
        left.map((a) => a.runId),
        left.map((a) => a.lease),
      );
    }
    await this.listener.stop();
  }
}
