import type { Logger } from 'pino';
import type { Db, Queryable } from '../db/pool.js';
import type { Storage } from '../storage/storage.js';
import { sha256File } from './outputs.js';
import { refundRun } from './transitions.js';

/**
 * How often an output whose stored copy cannot be read is tried, and how long apart: the delay
 * doubles from the first to the cap. With these, an output is given up about two hours after its
 * first attempt, long enough to outlast a storage restart, short of the 7 days it is kept.
 */
export interface CheckPolicy {
  maxAttempts: number;
  firstDelaySeconds: number;
  maxDelaySeconds: number;
}

export const OUTPUT_CHECK_POLICY: CheckPolicy = { maxAttempts: 8, firstDelaySeconds: 60, maxDelaySeconds: 3600 };

/** Seconds to wait after the given (1-based) failed attempt. */
export function checkDelaySeconds(policy: CheckPolicy, attempts: number): number {
  return Math.min(policy.maxDelaySeconds, policy.firstDelaySeconds * 2 ** Math.max(0, attempts - 1));
}

/** Why a stored copy could not be read, in words for the ledger note: no paths or hosts. */
export function storageReadProblem(err: unknown): string {
  const e = err as { code?: unknown; name?: unknown; $metadata?: { httpStatusCode?: number } };
  if (e.code === 'ENOENT' || e.name === 'NoSuchKey') return 'its stored object is missing';
  if (e.code === 'EACCES' || e.code === 'EPERM') return 'the service is not allowed to read its stored object';
  if (e.code === 'EIO') return 'the storage reported an I/O error';
  const status = e.$metadata?.httpStatusCode;
  if (status) return `the storage answered ${typeof e.name === 'string' ? e.name : 'an error'} (HTTP ${status})`;
  return 'the storage could not be read';
}

type Outcome = { kind: 'ok' } | { kind: 'mismatch' } | { kind: 'unreadable'; problem: string; err: unknown };

async function checkOne(storage: Storage, row: { storage_key: string; sha256: string }): Promise<Outcome> {
  let copy;
  try {
    copy = await storage.localCopy(row.storage_key);
  } catch (err) {
    return { kind: 'unreadable', problem: storageReadProblem(err), err };
  }
  try {
    return (await sha256File(copy.path)) === row.sha256 ? { kind: 'ok' } : { kind: 'mismatch' };
  } catch (err) {
    return { kind: 'unreadable', problem: storageReadProblem(err), err };
  } finally {
    await copy.cleanup().catch(() => undefined);
  }
}

interface CheckRow {
  id: string;
  run_id: string;
  storage_key: string;
  sha256: string;
  check_attempts: number;
}

/** Fails an output for good and gives its run's charge back (once per run), in the caller's tx. */
async function failForGood(tx: Queryable, logger: Logger, row: CheckRow, attempts: number, problem: string): Promise<void> {
  await tx.query(`UPDATE run_outputs SET status = 'failed', check_attempts = $2::integer, check_problem = $3::text, last_checked_at = now()
      WHERE id = $1::uuid`, [
    row.id,
    attempts,
    problem,
  ]);
  const refunded = await refundRun(tx, row.run_id, `output ${row.id} failed its check: ${problem}`);
  logger.error({ output: row.id, run_id: row.run_id, problem, refunded_sparks: refunded }, 'output failed its check for good');
}

/**
 * The check behind output_not_ready: reads each stored output back from storage and compares its
 * checksum with the one taken before upload. Claims due rows with SKIP LOCKED, so any worker may
 * run it (the one that finished the run does at once; others sweep what a crash or a failed read
 * left). A copy that does not match fails for good; one that cannot be read is tried again later
 * with a growing delay, and fails for good after the last attempt. A run with an output failed
 * for good is refunded. Returns how many outputs it settled (ready or failed).
 */
export async function verifyOutputs(
  db: Db,
  storage: Storage,
  logger: Logger,
  opts: { runId?: string; olderThanSeconds?: number; batch?: number; policy?: CheckPolicy } = {},
): Promise<number> {
  const batch = opts.batch ?? 10;
  const policy = opts.policy ?? OUTPUT_CHECK_POLICY;
  let done = 0;
  for (;;) {
    const n = await db.tx(async (tx) => {
      // Ordered by when each is due: rows put back for later never crowd out the ones behind them.
      const { rows } = await tx.query<CheckRow>(
        `SELECT id, run_id, storage_key, sha256, check_attempts FROM run_outputs
          WHERE status = 'checking' AND next_check_at <= now() AND ($1::uuid IS NULL OR run_id = $1::uuid)
            AND created_at <= now() - make_interval(secs => $2::integer)
          ORDER BY next_check_at, id LIMIT $3::integer FOR UPDATE SKIP LOCKED`,
        [opts.runId ?? null, opts.olderThanSeconds ?? 0, batch],
      );
      let settled = 0;
      for (const row of rows) {
        const outcome = await checkOne(storage, row);
        const attempts = row.check_attempts + 1;
        if (outcome.kind === 'ok') {
          await tx.query(`UPDATE run_outputs SET status = 'ready', check_problem = NULL, last_checked_at = now() WHERE id = $1::uuid`, [row.id]);
          settled++;
        } else if (outcome.kind === 'mismatch') {
          // Reading the same wrong bytes again cannot help.
          await failForGood(tx, logger, row, attempts, 'its stored copy does not match its checksum');
          settled++;
        } else if (attempts >= policy.maxAttempts) {
          logger.warn({ err: outcome.err, output: row.id }, 'output check could not read the stored copy');
          await failForGood(tx, logger, row, attempts, `${outcome.problem} (${attempts} attempts)`);
          settled++;
        } else {
          logger.warn({ err: outcome.err, output: row.id, attempts }, 'output check could not read the stored copy; tried again later');
          await tx.query(
            `UPDATE run_outputs SET check_attempts = $2::integer, check_problem = $3::text, last_checked_at = now(),
                    next_check_at = now() + make_interval(secs => $4::integer)
              WHERE id = $1::uuid`,
            [row.id, attempts, outcome.problem, checkDelaySeconds(policy, attempts)],
          );
        }
      }
      return { picked: rows.length, settled };
    });
    done += n.settled;
    // Every row picked was settled or put back for later, so the next pass sees the rows behind.
    if (n.picked < batch) return done;
  }
}

/**
 * How old an output must be before a sweep checks it: the worker that finished its run checks it
 * at once, and a sweep should not race that first check.
 */
export const SWEEP_MIN_AGE_SECONDS = 60;

/** A worker's periodic sweep: outputs a crash or a failed read left 'checking' and that are due. */
export function sweepOutputChecks(db: Db, storage: Storage, logger: Logger): Promise<number> {
  return verifyOutputs(db, storage, logger, { olderThanSeconds: SWEEP_MIN_AGE_SECONDS });
}
