import type { Queryable } from '../db/pool.js';

/**
 * Sparks moves for runs. Each is a ledger row plus the matching change of the team's balance,
 * made in the caller's transaction; a unique index on (run_id, kind) makes each move happen at
 * most once per run, whatever retries or races occur. Amounts are the effect on the balance.
 */

/** Holds `amount` for a run; false (and nothing written) when the balance is short. */
export async function holdForRun(tx: Queryable, teamId: string, runId: string, amount: number): Promise<boolean> {
  const { rowCount } = await tx.query(
    `UPDATE teams SET sparks_available = sparks_available - $2::bigint
      WHERE id = $1::uuid AND sparks_available >= $2::bigint`,
    [teamId, amount],
  );
  if (!rowCount) return false;
  await tx.query(
    `INSERT INTO ledger_entries (team_id, kind, amount, run_id) VALUES ($1::uuid, 'hold', $2::bigint, $3::uuid)`,
    [teamId, -amount, runId],
  );
  return true;
}

/** Releases a run's whole hold and charges `charge` of it (0 for failed and canceled runs). */
export async function settleRun(tx: Queryable, teamId: string, runId: string, hold: number, charge: number): Promise<void> {
  await tx.query(
    `INSERT INTO ledger_entries (team_id, kind, amount, run_id) VALUES ($1::uuid, 'release', $2::bigint, $3::uuid)`,
    [teamId, hold, runId],
  );
  if (charge > 0) {
    await tx.query(
      `INSERT INTO ledger_entries (team_id, kind, amount, run_id) VALUES ($1::uuid, 'charge', $2::bigint, $3::uuid)`,
      [teamId, -charge, runId],
    );
  }
  await tx.query('UPDATE teams SET sparks_available = sparks_available + $2::bigint WHERE id = $1::uuid', [teamId, hold - charge]);
}

/**
 * Gives back `amount` a run was charged, with a note saying why. At most once per run: a second
 * call (another failed output, a concurrent sweep) writes nothing and returns false.
 */
export async function refundCharge(tx: Queryable, teamId: string, runId: string, amount: number, note: string): Promise<boolean> {
  const { rowCount } = await tx.query(
    `INSERT INTO ledger_entries (team_id, kind, amount, run_id, note) VALUES ($1::uuid, 'refund', $2::bigint, $3::uuid, $4::text)
     ON CONFLICT (run_id, kind) WHERE run_id IS NOT NULL DO NOTHING`,
    [teamId, amount, runId, note],
  );
  if (!rowCount) return false;
  await tx.query('UPDATE teams SET sparks_available = sparks_available + $2::bigint WHERE id = $1::uuid', [teamId, amount]);
  return true;
}

/** Ledger sum against the kept balance, per team; empty when every team balances to the Spark. */
export async function ledgerDrift(db: Queryable): Promise<{ team_id: string; balance: number; ledger: number }[]> {
  const { rows } = await db.query<{ team_id: string; balance: number; ledger: number }>(
    `SELECT t.id AS team_id, t.sparks_available AS balance, coalesce(sum(l.amount), 0)::bigint AS ledger
       FROM teams t LEFT JOIN ledger_entries l ON l.team_id = t.id
      GROUP BY t.id HAVING t.sparks_available <> coalesce(sum(l.amount), 0)`,
  );
  return rows;
}
