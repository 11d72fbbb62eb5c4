import type { Logger } from 'pino';
import type { Config } from '../config/config.js';
import { startEmbeddedPostgres, type EmbeddedPostgres } from '../db/embedded.js';
import { migrate } from '../db/migrate.js';
import { createDb, type Db } from '../db/pool.js';

export interface OpenedDatabase {
  db: Db;
  connectionString: string;
  embedded: EmbeddedPostgres | null;
  close(): Promise<void>;
}

/**
 * DATABASE_URL when set, else the embedded server under the data directory (started, or
 * attached to when another toolrun process runs it). Migrations are applied either way.
 */
export async function openDatabase(
  config: Config,
  logger: Logger,
  opts: { adoptOrphans?: boolean; poolSize?: number; applicationName?: string } = {},
): Promise<OpenedDatabase> {
  let embedded: EmbeddedPostgres | null = null;
  let connectionString = config.databaseUrl;
  if (!connectionString) {
    embedded = await startEmbeddedPostgres({ dataDir: config.dataDir, logger, adoptOrphans: opts.adoptOrphans ?? false });
    connectionString = embedded.connectionString;
  }
  try {
    await migrate(connectionString, logger);
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
