import type { Queryable } from '../db/pool.js';

/**
 * Sparks moves for runs. Each is a ledger row plus the matching change of the team's balance,
 * made in the caller's transaction; a unique index on (run_id, kind) makes each move happen at
 * most once per run, whatever retries or races occur. Amounts are the effect on the balance.
 */

/**
 * Holds `amount` for a run; false (and nothing written) when the balance is short. One statement
 * (issue 37): the ledger row is written only if the balance was taken.
 */
export async function holdForRun(tx: Queryable, teamId: string, runId: string, amount: number): Promise<boolean> {
  const { rowCount } = await tx.query({
    name: 'ledger-hold',
    text: `WITH taken AS (
             UPDATE teams SET sparks_available = sparks_available - $2::bigint
              WHERE id = $1::uuid AND sparks_available >= $2::bigint RETURNING id)
           INSERT INTO ledger_entries (team_id, kind, amount, run_id) SELECT id, 'hold', -$2::bigint, $3::uuid FROM taken`,
    values: [teamId, amount, runId],
  });
  return rowCount === 1;
}

/**
 * Releases a run's whole hold and charges `charge` of it (0 for failed and canceled runs): the
 * release row, the charge row when there is a charge, and the balance, in one statement (issue 37).
 */
export async function settleRun(tx: Queryable, teamId: string, runId: string, hold: number, charge: number): Promise<void> {
  await tx.query({
    name: 'ledger-settle',
    text: `WITH moves AS (
             INSERT INTO ledger_entries (team_id, kind, amount, run_id)
             SELECT $1::uuid, m.kind, m.amount, $3::uuid
               FROM (VALUES (1, 'release', $2::bigint), (2, 'charge', -$4::bigint)) AS m(n, kind, amount)
              WHERE m.n = 1 OR $4::bigint > 0
              ORDER BY m.n)
           UPDATE teams SET sparks_available = sparks_available + ($2::bigint - $4::bigint) WHERE id = $1::uuid`,
    values: [teamId, hold, runId, charge],
  });
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
