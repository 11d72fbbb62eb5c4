import pg from 'pg';
import type { Logger } from 'pino';

// BIGINT (int8) and NUMERIC come back as strings by default; Sparks fit in a JS number.
pg.types.setTypeParser(20, (v) => Number(v));

/** Anything that can run a query: the pool or a client inside a transaction. */
export type Queryable = Pick<pg.Pool, 'query'> | pg.PoolClient;

export interface Db {
  pool: pg.Pool;
  /**
   * Connections with synchronous_commit off, for writes a crash may lose without harm (rate
   * buckets): commits do not wait for the WAL flush. Never for Sparks or run state.
   */
  relaxed: pg.Pool;
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

export function createDb(opts: DbOptions): Db {
  const pool = new pg.Pool({
    connectionString: opts.connectionString,
    max: opts.max ?? 10,
    application_name: opts.applicationName ?? 'toolrun',
    connectionTimeoutMillis: 5_000,
    idleTimeoutMillis: 30_000,
  });
  const relaxed = new pg.Pool({
    connectionString: opts.connectionString,
    max: Math.max(2, Math.ceil((opts.max ?? 10) / 2)),
    application_name: `${opts.applicationName ?? 'toolrun'}-relaxed`,
    connectionTimeoutMillis: 5_000,
    idleTimeoutMillis: 30_000,
    options: '-c synchronous_commit=off',
  });
  // An idle client losing its connection (server restart) must not crash the process.
  pool.on('error', (err) => opts.logger.warn({ err }, 'idle database connection failed'));
  relaxed.on('error', (err) => opts.logger.warn({ err }, 'idle database connection failed'));
  return {
    pool,
    relaxed,
    async tx(fn) {
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        const result = await fn(client);
        await client.query('COMMIT');
        return result;
      } catch (err) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw err;
      } finally {
        client.release();
      }
    },
    close: async () => {
      await Promise.all([pool.end(), relaxed.end()]);
    },
  };
}
