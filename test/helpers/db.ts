import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { migrate } from '../../src/db/migrate.js';
import { createDb, type Db } from '../../src/db/pool.js';
import { testLogger } from './test-logs.js';

export interface TestDatabase {
  name: string;
  url: string;
  db: Db;
}

function adminUrl(): string {
  const url = process.env.TEST_DATABASE_URL;
  if (!url) throw new Error('TEST_DATABASE_URL is not set: run the tests through `npm test`');
  return url;
}

/**
 * A fresh, migrated database for one test file. The runner drops it after a green run and keeps
 * it after a red one.
 */
export async function createTestDatabase(): Promise<TestDatabase> {
  const runId = (process.env.TEST_RUN_ID ?? 'adhoc').toLowerCase();
  const name = `toolrun_t_${runId}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl() });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE "${name}"`);
  } finally {
    await admin.end();
  }
  const u = new URL(adminUrl());
  u.pathname = `/${name}`;
  const url = u.toString();
  await migrate(url, testLogger('silent'));
  return { name, url, db: createDb({ connectionString: url, logger: testLogger('silent'), max: 10 }) };
}
