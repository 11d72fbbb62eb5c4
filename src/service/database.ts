import pg from 'pg';
import type { Logger } from 'pino';
import type { Config } from '../config/config.js';
import { startEmbeddedPostgres, type EmbeddedPostgres } from '../db/embedded.js';
import { NoDatabaseError } from '../db/errors.js';
import { migrate, schemaState } from '../db/migrate.js';
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

type OpenOptions = { poolSize?: number; applicationName?: string };

/**
 * DATABASE_URL when set, else the embedded server under the data directory (started, or attached
 * to when another toolrun process runs it; the last process to close stops it), then `prepare`
 * on it (migrations, or a schema check); a failed `prepare` stops what was started.
 */
async function open(
  config: Config,
  logger: Logger,
  opts: OpenOptions & { mustExist?: boolean },
  prepare: (connectionString: string) => Promise<void>,
): Promise<OpenedDatabase> {
  let embedded: EmbeddedPostgres | null = null;
  let connectionString = config.databaseUrl;
  if (!connectionString) {
    embedded = await startEmbeddedPostgres({ dataDir: config.dataDir, logger, mustExist: opts.mustExist });
    connectionString = embedded.connectionString;
  }
  try {
    await prepare(connectionString);
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

/** The database (see `open`), with migrations applied. */
export function openDatabase(config: Config, logger: Logger, opts: OpenOptions = {}): Promise<OpenedDatabase> {
  return open(config, logger, opts, (url) => migrateInTurn(url, logger));
}

/** The database the configuration points at, in words for an operator (no password). */
export function describeDatabase(config: Config): string {
  if (!config.databaseUrl) return `the embedded PostgreSQL in ${config.dataDir} (TOOLRUN_DATA_DIR)`;
  try {
    const u = new URL(config.databaseUrl);
    u.password = '';
    u.searchParams.delete('password');
    return `${u.toString()} (DATABASE_URL)`;
  } catch {
    return 'the server DATABASE_URL names';
  }
}

/**
 * For admin commands: the database the service already uses, never a new one. An embedded data
 * directory without a database, or a server whose database holds no Toolrun schema (or another
 * version's), is refused with NoDatabaseError and left untouched; nothing is migrated.
 */
export function openExistingDatabase(config: Config, logger: Logger, opts: OpenOptions = {}): Promise<OpenedDatabase> {
  const where = describeDatabase(config);
  return open(config, logger, { ...opts, mustExist: true }, async (url) => {
    const state = await schemaState(url, opts.applicationName);
    if (state === 'none') {
      throw new NoDatabaseError(`${where} holds no Toolrun database: point it at the one the service uses, or run \`toolrun migrate\` to make one there`);
    }
    if (state === 'behind') throw new NoDatabaseError(`${where} needs migrations this version brings: run \`toolrun migrate\` first`);
    if (state === 'other') throw new NoDatabaseError(`${where} was migrated by another version of Toolrun: use that version's toolrun`);
  });
}
