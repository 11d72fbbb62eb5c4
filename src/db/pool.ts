import pg from 'pg';
import type { Logger } from 'pino';
import { NotificationHub } from './listen.js';

// BIGINT (int8) and NUMERIC come back as strings by default; Sparks fit in a JS number.
pg.types.setTypeParser(20, (v) => Number(v));

/** Anything that can run a query: the pool or a client inside a transaction. */
export type Queryable = Pick<pg.Pool, 'query'> | pg.PoolClient;

export interface Db {
  /** Where the pools connect; dedicated connections (LISTEN) open their own to the same server. */
  connectionString: string;
  pool: pg.Pool;
  /**
   * Connections with synchronous_commit off, for writes a crash may lose without harm (rate
   * buckets, webhook claims and settles): commits do not wait for the WAL flush. Never for
   * Sparks or run state.
   */
  relaxed: pg.Pool;
  /** The process's one LISTEN connection, opened on the first subscription (src/db/listen.ts). */
  notifications: NotificationHub;
  /** Runs fn inside BEGIN/COMMIT, rolling back on any throw. */
  tx<T>(fn: (client: pg.PoolClient) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

export interface DbOptions {
  connectionString: string;
  max?: number;
  logger: Logger;
  applicationName?: string;
}

/**
 * A query without an answer for this long fails (and its connection is dropped): a server that
 * stopped answering without closing its connections (frozen, or cut off by the network) must
 * not hold requests and workers forever. Far above any query's normal time, lock waits included.
 */
export const QUERY_TIMEOUT_MS = 10_000;

/** Errors after which a connection cannot be trusted again: it is discarded, not pooled. */
function connectionLost(err: unknown): boolean {
  return err instanceof Error && /Query read timeout|Connection terminated|is not queryable/.test(err.message);
}

export function createDb(opts: DbOptions): Db {
  const common = {
    connectionString: opts.connectionString,
    // Waiting for a free connection or for a new one to open counts against this, too.
    connectionTimeoutMillis: 5_000,
    query_timeout: QUERY_TIMEOUT_MS,
    idleTimeoutMillis: 30_000,
    keepAlive: true,
  };
  const pool = new pg.Pool({ ...common, max: opts.max ?? 10, application_name: opts.applicationName ?? 'toolrun' });
  const relaxed = new pg.Pool({
    ...common,
    max: Math.max(2, Math.ceil((opts.max ?? 10) / 2)),
    application_name: `${opts.applicationName ?? 'toolrun'}-relaxed`,
    options: '-c synchronous_commit=off',
  });
  // Once closing, a connection the server ends (an embedded server stopped right after, say) is
  // what was asked for, not a failure worth a warning.
  let closing = false;
  for (const p of [pool, relaxed]) {
    // An idle client losing its connection (server restart) must not crash the process.
    p.on('error', (err) => {
      if (!closing) opts.logger.warn({ err }, 'idle database connection failed');
    });
    // Nor a checked-out one: pg emits 'error' on a client whose connection drops even when the
    // query in flight already failed with it, and pg-pool listens only while a client is idle, so
    // without this a database restart during a transaction is an uncaught exception.
    p.on('connect', (client) => client.on('error', () => undefined));
  }
  const notifications = new NotificationHub({
    connectionString: opts.connectionString,
    applicationName: `${opts.applicationName ?? 'toolrun'}-listen`,
    logger: opts.logger,
  });
  return {
    connectionString: opts.connectionString,
    pool,
    relaxed,
    notifications,
    async tx(fn) {
      const client = await pool.connect();
      let lost: Error | undefined;
      try {
        await client.query('BEGIN');
        const result = await fn(client);
        await client.query('COMMIT');
        return result;
      } catch (err) {
        if (connectionLost(err)) lost = err as Error;
        else await client.query('ROLLBACK').catch(() => undefined);
        throw err;
      } finally {
        // A lost connection is closed instead of pooled (a timed-out query may still be running).
        client.release(lost);
      }
    },
    close: async () => {
      closing = true;
      await Promise.all([pool.end(), relaxed.end(), notifications.close()]);
    },
  };
}
