import pg from 'pg';
import type { Logger } from 'pino';
import type { Config } from '../config/config.js';
import { startEmbeddedPostgres, type EmbeddedPostgres } from '../db/embedded.js';
import { migrate } from '../db/migrate.js';
import { createDb, type Db } from '../db/pool.js';

const MIGRATE_LOCK = 7_301_442_002;

/**
 * Several processes may open the database at once (an admin command while `serve` starts, several
 * API processes). The migration library refuses to run while another process holds its lock, so
 * the processes take turns on a lock of our own: the later ones then find nothing to apply.
 */
async function migrateInTurn(connectionString: string, logger: Logger): Promise<void> {
  const client = new pg.Client({ connectionString, application_name: 'toolrun-migrate' });
  await client.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1::bigint)', [MIGRATE_LOCK]);
    await migrate(connectionString, logger);
  } finally {
    // Ending the session releases the lock.
    await client.end().catch(() => undefined);
  }
}

export interface OpenedDatabase {
  db: Db;
  connectionString: string;
  embedded: EmbeddedPostgres | null;
  close(): Promise<void>;
}

/**
 * DATABASE_URL when set, else the embedded server under the data directory (started, or
 * attached to when another toolrun process runs it; the last process to close stops it).
 * Migrations are applied either way.
 */
export async function openDatabase(
  config: Config,
  logger: Logger,
  opts: { poolSize?: number; applicationName?: string } = {},
): Promise<OpenedDatabase> {
  let embedded: EmbeddedPostgres | null = null;
  let connectionString = config.databaseUrl;
  if (!connectionString) {
    embedded = await startEmbeddedPostgres({ dataDir: config.dataDir, logger });
    connectionString = embedded.connectionString;
  }
  try {
    await migrateInTurn(connectionString, logger);
  } catch (err) {
    await embedded?.stop();
    throw err;
  }
  const db = createDb({
    connectionString,
    logger,
    max: opts.poolSize ?? 10,
    ...(opts.applicationName ? { applicationName: opts.applicationName } : {}),
  });
  return {
    db,
    connectionString,
    embedded,
    async close() {
      await db.close().catch(() => undefined);
      await embedded?.stop();
    },
  };
}
