import pg from 'pg';
import type { Logger } from 'pino';
import { isDbUnavailable } from '../db/errors.js';
import type { Db } from '../db/pool.js';
import { ToolError } from '../tools/manifest.js';
import type { NewOutput } from './repository.js';

/** Waits between the re-reads of a lost commit's outcome (the database may be restarting). */
const OUTCOME_RETRY_MS = [0, 500, 1000, 2000, 4000, 8000];
/** Tries of the success transaction itself when its connection, not PostgreSQL, failed it. */
const SUCCESS_TRIES = 3;

/**
 * The success transaction's outcome could not be learnt (the database stayed away): its outputs
 * may belong to a succeeded, charged run and must be kept.
 */
export class SuccessOutcomeUnknown extends Error {
  constructor(override readonly cause: unknown) {
    super('the outcome of the success transaction is unknown');
    this.name = 'SuccessOutcomeUnknown';
  }
}

/**
 * Whether the success transaction that wrote these outputs committed: true, false, or null when
 * the database could not tell us. Certain, because the re-read first takes the run's row lock,
 * which that transaction held from its start: if PostgreSQL is still finishing it, the re-read
 * waits for its end.
 */
async function outputsRecorded(db: Db, runId: string, outputs: NewOutput[], log: Logger): Promise<boolean | null> {
  const ids = outputs.map((o) => o.id);
  if (!ids.length) return false;
  for (const ms of OUTCOME_RETRY_MS) {
    if (ms) await new Promise((r) => setTimeout(r, ms));
    try {
      return await db.tx(async (tx) => {
        await tx.query('SELECT 1 FROM runs WHERE id = $1::uuid FOR SHARE', [runId]);
        const { rows } = await tx.query<{ n: number }>(
          'SELECT count(*)::integer AS n FROM run_outputs WHERE run_id = $1::uuid AND id = ANY ($2::uuid[])',
          [runId, ids],
        );
        return (rows[0]?.n ?? 0) > 0;
      });
    } catch (err) {
      log.warn({ err }, 'could not read back whether the run succeeded');
    }
  }
  return null;
}

/**
 * Runs the transaction that records a run's success and its outputs (`succeed` returns whether
 * the run was still ours to finish) until its outcome is certain. When it fails, the COMMIT may
 * still have reached PostgreSQL with only its answer lost, so the run is read back before anyone
 * deletes outputs: committed is success; not committed after a lost connection or a server that
 * was shutting down is tried again (the database, not the tool, failed); not committed after
 * PostgreSQL refused a statement (or the tool's own record of success refused) is thrown.
 * Throws SuccessOutcomeUnknown when the read-back itself cannot be made.
 */
export async function commitSuccess(
  db: Db,
  runId: string,
  outputs: NewOutput[],
  log: Logger,
  succeed: (tx: pg.PoolClient) => Promise<boolean>,
): Promise<boolean> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await db.tx(succeed);
    } catch (err) {
      const recorded = await outputsRecorded(db, runId, outputs, log);
      if (recorded === true) {
        log.warn({ err }, "the success commit's answer was lost; the run did succeed");
        return true;
      }
      if (recorded === null) throw new SuccessOutcomeUnknown(err);
      // A server shutting down ends the transaction with a DatabaseError of its own (57P01): the
      // database failed, not the statement, so that is tried again too.
      const refused = (err instanceof pg.DatabaseError && !isDbUnavailable(err)) || err instanceof ToolError;
      if (refused || attempt >= SUCCESS_TRIES) throw err;
      log.warn({ err, attempt }, 'the success transaction did not get through; trying again');
    }
  }
}
