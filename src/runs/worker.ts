import { randomUUID } from 'node:crypto';
import os from 'node:os';
import pg from 'pg';
import type { Db } from '../db/pool.js';
import { executeRun, type ExecutorDeps, type StopReason } from './executor.js';
import { verifyOutputs } from './outputs.js';
import { RUN_COLUMNS, type RunRow } from './repository.js';
import { CANCEL_CHANNEL, failRun, RUNS_CHANNEL } from './transitions.js';

export interface WorkerOptions extends ExecutorDeps {
  connectionString: string;
  concurrency: number;
}

interface Active {
  abort: AbortController;
  reason: StopReason | null;
  done: Promise<void>;
}

/** Takes a queued run, or one whose worker's lease lapsed, for this worker. */
async function claim(db: Db, owner: string, leaseSeconds: number): Promise<RunRow | null> {
  for (const where of [
    `status = 'queued' ORDER BY created_at`,
    `status = 'running' AND lease_expires_at < now() AND attempts < max_attempts ORDER BY lease_expires_at`,
  ]) {
    const { rows } = await db.pool.query<RunRow>(
      `UPDATE runs SET status = 'running', started_at = coalesce(started_at, now()), lease_owner = $1::text,
              lease_expires_at = now() + make_interval(secs => $2::integer), attempts = attempts + 1, progress = 0
        WHERE id = (SELECT id FROM runs WHERE ${where} LIMIT 1 FOR UPDATE SKIP LOCKED)
        RETURNING ${RUN_COLUMNS}`,
      [owner, leaseSeconds],
    );
    if (rows[0]) return rows[0];
  }
  return null;
}

/** Runs whose lease lapsed once too often are failed, their hold released. */
async function giveUpAbandoned(db: Db): Promise<number> {
  return db.tx(async (tx) => {
    const { rows } = await tx.query<{ id: string; attempts: number }>(
      `SELECT id, attempts FROM runs WHERE status = 'running' AND lease_expires_at < now() AND attempts >= max_attempts
        LIMIT 20 FOR UPDATE SKIP LOCKED`,
    );
    for (const r of rows) {
      await failRun(tx, r.id, `The run was interrupted ${r.attempts} times (its worker stopped) and was given up; its hold was released.`, null);
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
  private readonly active = new Map<string, Active>();
  private listener: pg.Client | null = null;
  private stopping = false;
  private wake: (() => void) | null = null;
  private loop: Promise<void> | null = null;
  private sweepTimer: NodeJS.Timeout | null = null;

  constructor(private readonly opts: WorkerOptions) {}

  async start(): Promise<void> {
    await this.listen();
    this.loop = this.run();
    this.sweepTimer = setInterval(() => void this.sweep(), Math.max(1000, this.opts.config.runs.pollMs));
    this.opts.logger.info({ worker: this.id, concurrency: this.opts.concurrency }, 'run worker started');
  }

  private async listen(): Promise<void> {
    const client = new pg.Client({ connectionString: this.opts.connectionString, application_name: 'toolrun-worker-listen' });
    client.on('notification', (msg) => {
      if (msg.channel === RUNS_CHANNEL) this.poke();
      if (msg.channel === CANCEL_CHANNEL && msg.payload) this.stopRun(msg.payload, 'canceled');
    });
    client.on('error', (err) => {
      this.opts.logger.warn({ err }, 'worker notification connection lost; reconnecting');
      this.listener = null;
      void client.end().catch(() => undefined);
      if (!this.stopping) setTimeout(() => void this.listen().catch(() => undefined), 1000);
    });
    await client.connect();
    await client.query(`LISTEN ${RUNS_CHANNEL}`);
    await client.query(`LISTEN ${CANCEL_CHANNEL}`);
    this.listener = client;
    this.poke(); // work may have arrived while we were not listening
  }

  private poke(): void {
    const w = this.wake;
    this.wake = null;
    w?.();
  }

  private stopRun(runId: string, reason: StopReason): void {
    const a = this.active.get(runId);
    if (!a || a.abort.signal.aborted) return;
    a.reason = reason;
    a.abort.abort(reason);
  }

  private async sweep(): Promise<void> {
    try {
      await giveUpAbandoned(this.opts.db);
      await verifyOutputs(this.opts.db, this.opts.storage, this.opts.logger, { olderThanSeconds: 60 });
    } catch (err) {
      this.opts.logger.warn({ err }, 'worker sweep failed');
    }
    this.poke();
  }

  private async run(): Promise<void> {
    const { db, config, logger } = this.opts;
    while (!this.stopping) {
      let claimed: RunRow | null = null;
      if (this.active.size < this.opts.concurrency) {
        try {
          claimed = await claim(db, this.id, config.runs.leaseSeconds);
        } catch (err) {
          logger.warn({ err }, 'claiming a run failed');
        }
      }
      if (claimed && !this.stopping) {
        this.launch(claimed);
        continue;
      }
      await new Promise<void>((resolve) => {
        this.wake = resolve;
        setTimeout(resolve, config.runs.pollMs).unref();
      });
      this.wake = null;
    }
  }

  private launch(run: RunRow): void {
    const abort = new AbortController();
    const entry: Active = { abort, reason: null, done: Promise.resolve() };
    entry.done = executeRun(this.opts, run, this.id, { abort, reason: () => entry.reason ?? (abort.signal.reason as StopReason | null) ?? null })
      .catch((err: unknown) => this.opts.logger.error({ err, run_id: run.id }, 'run executor crashed'))
      .finally(() => {
        this.active.delete(run.id);
        this.poke();
      });
    this.active.set(run.id, entry);
  }

  /** Number of runs this worker is executing now. */
  get busy(): number {
    return this.active.size;
  }

  /**
   * Stops claiming, lets running work finish for up to graceMs, then stops what is left and hands
   * its leases back (the attempt does not count) so another worker takes those runs at once.
   */
  async stop(graceMs = 30_000): Promise<void> {
    this.stopping = true;
    this.poke();
    if (this.sweepTimer) clearInterval(this.sweepTimer);
    await this.loop;
    const all = () => Promise.all([...this.active.values()].map((a) => a.done));
    const timedOut = await Promise.race([all().then(() => false), new Promise<boolean>((r) => setTimeout(() => r(true), graceMs).unref())]);
    if (timedOut) {
      const ids = [...this.active.keys()];
      for (const id of ids) this.stopRun(id, 'shutdown');
      await all();
      await this.opts.db.pool
        .query(
          `UPDATE runs SET lease_owner = NULL, lease_expires_at = now(), attempts = greatest(0, attempts - 1)
            WHERE id = ANY ($1::uuid[]) AND lease_owner = $2::text AND status = 'running'`,
          [ids, this.id],
        )
        .catch((err: unknown) => this.opts.logger.warn({ err }, 'could not hand back leases'));
    }
    await this.listener?.end().catch(() => undefined);
    this.listener = null;
  }
}
