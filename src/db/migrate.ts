import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import type { Logger } from 'pino';

const MIGRATIONS_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), 'migrations');
const MIGRATIONS_TABLE = 'pgmigrations';

/** This build's migrations as node-pg-migrate names them (file names without .sql), in file-name order. */
function migrationNames(): string[] {
  return fs
    .readdirSync(MIGRATIONS_DIR)
    .filter((f) => f.endsWith('.sql'))
    .map((f) => f.slice(0, -'.sql'.length))
    .sort();
}

/**
 * What the database holds against this build's migrations: `current` (exactly these, in this
 * order), `none` (no Toolrun schema: a new or foreign database), `behind` (a prefix of them: some
 * to apply) or `other` (names this build does not know, or another order).
 */
export type SchemaState = 'current' | 'none' | 'behind' | 'other';

export async function schemaState(connectionString: string, applicationName = 'toolrun-migrate'): Promise<SchemaState> {
  const client = new pg.Client({ connectionString, application_name: applicationName });
  await client.connect();
  try {
    const { rows } = await client.query<{ name: string }>(`SELECT name FROM public.${MIGRATIONS_TABLE} ORDER BY run_on, id`);
    const wanted = migrationNames();
    if (!rows.every((r, i) => r.name === wanted[i])) return 'other';
    if (rows.length === 0) return 'none';
    return rows.length === wanted.length ? 'current' : 'behind';
  } catch (err) {
    // 42P01: no migrations table yet, a new database.
    if ((err as { code?: string }).code === '42P01') return 'none';
    throw err;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * With exactly this build's migrations applied node-pg-migrate would find nothing to do, and is
 * not even loaded (its code and file loaders are a few MiB in every process). Anything else is
 * left to node-pg-migrate, which applies or reports it.
 */
async function upToDate(connectionString: string): Promise<boolean> {
  return (await schemaState(connectionString)) === 'current';
}

/**
 * Applies pending SQL migrations. node-pg-migrate takes an advisory lock, so several processes
 * starting together against one database apply each migration once.
 */
export async function migrate(connectionString: string, logger: Logger): Promise<string[]> {
  if (await upToDate(connectionString)) return [];
  const { runner } = await import('node-pg-migrate');
  const applied = await runner({
    databaseUrl: connectionString,
    dir: MIGRATIONS_DIR,
    direction: 'up',
    migrationsTable: MIGRATIONS_TABLE,
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
