import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { runner } from 'node-pg-migrate';
import type { Logger } from 'pino';

const MIGRATIONS_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), 'migrations');

/**
 * Applies pending SQL migrations. node-pg-migrate takes an advisory lock, so several processes
 * starting together against one database apply each migration once.
 */
export async function migrate(connectionString: string, logger: Logger): Promise<string[]> {
  const applied = await runner({
    databaseUrl: connectionString,
    dir: MIGRATIONS_DIR,
    direction: 'up',
    migrationsTable: 'pgmigrations',
    singleTransaction: true,
    checkOrder: true,
    // Several processes may start at once: the later ones wait, then find nothing to apply.
    advisoryLockMode: 'wait',
    verbose: false,
    log: (msg: string) => logger.debug({ migrate: msg }, 'migrate'),
  });
  const names = applied.map((m) => m.name);
  if (names.length) logger.info({ migrations: names }, 'applied database migrations');
  return names;
}
