import type { PoolClient } from 'pg';
import type { Db } from '../db/pool.js';

/** Cluster-wide figures read from PostgreSQL at scrape time: the same from every process. */
export interface ClusterFigures {
  runs: {
    tool: string;
    status: 'queued' | 'running';
    count: number;
    holdSparks: number;
    /** Queued rows only: seconds since the oldest was created. */
    oldestAgeSeconds: number;
  }[];
  /** Ledger sums by kind, as the effect on balances was recorded (holds and charges negative). */
  ledger: Record<'grant' | 'hold' | 'charge' | 'release' | 'refund', number>;
  sparksAvailable: number;
  webhooks: { pending: number; oldestDueAgeSeconds: number };
}

/** A scrape must never hang on a slow database: each statement gets this long. */
const STATEMENT_TIMEOUT_MS = 5000;

/**
 * One read-only transaction of aggregate queries. The run and delivery queries use the partial
 * indexes on unfinished rows, so they cost what is in flight, not the history. The ledger sum reads
 * the whole ledger (a few rows per run); Metrics rate-limits how often it runs.
 */
export async function readClusterFigures(db: Db): Promise<ClusterFigures> {
  const client = await db.pool.connect();
  let rows: Awaited<ReturnType<typeof queryAll>>;
  try {
    rows = await queryAll(client);
  } catch (err) {
    // A connection that failed mid-transaction (timeout, reset) is discarded, not reused.
    client.release(err instanceof Error ? err : true);
    throw err;
  }
  client.release();
  const ledger = { grant: 0, hold: 0, charge: 0, release: 0, refund: 0 };
  for (const r of rows.ledger) if (r.kind in ledger) ledger[r.kind as keyof typeof ledger] = r.total;
  return {
    runs: rows.runs.map((r) => ({ tool: r.tool_id, status: r.status, count: r.n, holdSparks: r.hold, oldestAgeSeconds: Math.max(0, r.oldest) })),
    ledger,
    sparksAvailable: rows.balance?.total ?? 0,
    webhooks: { pending: rows.hooks?.pending ?? 0, oldestDueAgeSeconds: Math.max(0, rows.hooks?.oldest ?? 0) },
  };
}

async function queryAll(client: PoolClient) {
  await client.query('BEGIN READ ONLY');
  await client.query(`SET LOCAL statement_timeout = ${STATEMENT_TIMEOUT_MS}`);
  const runs = await client.query<{ tool_id: string; status: 'queued' | 'running'; n: number; hold: number; oldest: number }>(
    `SELECT tool_id, 'queued'::text AS status, count(*)::integer AS n, coalesce(sum(hold_sparks), 0)::bigint AS hold,
            extract(epoch FROM now() - min(created_at))::float8 AS oldest
       FROM runs WHERE status = 'queued' GROUP BY tool_id
     UNION ALL
     SELECT tool_id, 'running'::text, count(*)::integer, coalesce(sum(hold_sparks), 0)::bigint, 0::float8
       FROM runs WHERE status = 'running' GROUP BY tool_id`,
  );
  const ledger = await client.query<{ kind: string; total: number }>(
    `SELECT kind, coalesce(sum(amount), 0)::bigint AS total FROM ledger_entries GROUP BY kind`,
  );
  const balance = await client.query<{ total: number }>(`SELECT coalesce(sum(sparks_available), 0)::bigint AS total FROM teams`);
  const hooks = await client.query<{ pending: number; oldest: number | null }>(
    `SELECT count(*)::integer AS pending,
            extract(epoch FROM now() - min(next_attempt_at) FILTER (WHERE next_attempt_at <= now()))::float8 AS oldest
       FROM webhook_deliveries WHERE status = 'pending'`,
  );
  await client.query('COMMIT');
  return { runs: runs.rows, ledger: ledger.rows, balance: balance.rows[0], hooks: hooks.rows[0] };
}
