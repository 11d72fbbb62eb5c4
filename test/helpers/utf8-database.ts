// A migrated database whose ctype is glibc's C.utf8, where lower() folds beyond ASCII (lower('İ')
// is 'i'), as on an operator's external PostgreSQL: first on the test server itself (CREATE
// DATABASE ... LC_CTYPE 'C.utf8'), else on a throwaway cluster made with `initdb --locale=C.utf8`
// from the machine's PostgreSQL binaries. Neither possible: the reason, for the test to skip with.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { migrate } from '../../src/db/migrate.js';
import { createDb } from '../../src/db/pool.js';
import type { TestDatabase } from './db.js';
import { testLogger } from './test-logs.js';
import { freePort } from './server.js';

const run = promisify(execFile);

export type Utf8Database = { database: TestDatabase; close(): Promise<void> } | { skip: string };

async function folds(url: string): Promise<boolean> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    const { rows } = await c.query<{ folds: boolean }>("SELECT lower(U&'\\0130') = 'i' AS folds");
    return rows[0]?.folds === true;
  } finally {
    await c.end();
  }
}

/** Creates the database on the server at adminUrl; the test runner drops it with the run's others. */
async function onServer(adminUrl: string): Promise<string> {
  const name = `toolrun_t_${(process.env.TEST_RUN_ID ?? 'adhoc').toLowerCase()}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE "${name}" TEMPLATE template0 ENCODING 'UTF8' LC_COLLATE 'C.utf8' LC_CTYPE 'C.utf8'`);
  } finally {
    await admin.end();
  }
  const u = new URL(adminUrl);
  u.pathname = `/${name}`;
  return u.toString();
}

function postgresBinDir(): string | null {
  const root = '/usr/lib/postgresql';
  if (!fs.existsSync(root)) return null;
  const versions = fs.readdirSync(root).filter((v) => fs.existsSync(path.join(root, v, 'bin', 'initdb')));
  versions.sort((a, b) => Number(b) - Number(a));
  return versions[0] ? path.join(root, versions[0], 'bin') : null;
}

/** initdb refuses root: run the binaries as the `postgres` account then. */
async function asOwner(dir: string, bin: string, args: string[]): Promise<void> {
  if (process.getuid?.() === 0) {
    const { stdout } = await run('id', ['-u', 'postgres']);
    const { stdout: gid } = await run('id', ['-g', 'postgres']);
    fs.chownSync(dir, Number(stdout.trim()), Number(gid.trim()));
    await run('runuser', ['-u', 'postgres', '--', bin, ...args]);
  } else {
    await run(bin, args);
  }
}

export async function throwawayCluster(): Promise<{ url: string; stop(): Promise<void> }> {
  const bin = postgresBinDir();
  if (!bin) throw new Error('no PostgreSQL binaries under /usr/lib/postgresql');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'toolrun-utf8-pg-'));
  fs.chmodSync(dir, 0o700);
  const data = path.join(dir, 'data');
  const port = await freePort();
  fs.mkdirSync(data, { mode: 0o700 });
  const stop = async () => {
    await asOwner(data, path.join(bin, 'pg_ctl'), ['-D', data, '-m', 'immediate', 'stop']).catch(() => undefined);
    fs.rmSync(dir, { recursive: true, force: true });
  };
  try {
    if (process.getuid?.() === 0) fs.chmodSync(dir, 0o755);
    await asOwner(data, path.join(bin, 'initdb'), ['-D', data, '--locale=C.utf8', '--encoding=UTF8', '-U', 'postgres', '--auth=trust']);
    await asOwner(data, path.join(bin, 'pg_ctl'), ['-D', data, '-w', '-l', path.join(data, 'log'), '-o', `-p ${port} -k ${data} -c listen_addresses=127.0.0.1`, 'start']);
  } catch (err) {
    await stop();
    throw err;
  }
  return { url: `postgres://postgres@127.0.0.1:${port}/postgres`, stop };
}

async function opened(url: string, name: string): Promise<TestDatabase> {
  await migrate(url, testLogger('silent'));
  return { name, url, db: createDb({ connectionString: url, logger: testLogger('silent'), max: 5 }) };
}

export async function createUtf8Database(): Promise<Utf8Database> {
  const adminUrl = process.env.TEST_DATABASE_URL;
  if (!adminUrl) throw new Error('TEST_DATABASE_URL is not set: run the tests through `npm test`');
  const problems: string[] = [];
  try {
    const url = await onServer(adminUrl);
    if (await folds(url)) {
      const database = await opened(url, new URL(url).pathname.slice(1));
      return { database, close: () => database.db.close() };
    }
    problems.push("the test server's C.utf8 database does not fold 'İ' in lower()");
  } catch (err) {
    problems.push(`the test server cannot make a C.utf8 database: ${(err as Error).message}`);
  }
  try {
    const cluster = await throwawayCluster();
    try {
      const url = await onServer(cluster.url);
      if (!(await folds(url))) throw new Error("its lower() does not fold 'İ'");
      const database = await opened(url, new URL(url).pathname.slice(1));
      return {
        database,
        close: async () => {
          await database.db.close();
          await cluster.stop();
        },
      };
    } catch (err) {
      await cluster.stop();
      throw err;
    }
  } catch (err) {
    problems.push(`no throwaway cluster with initdb --locale=C.utf8: ${(err as Error).message}`);
  }
  return { skip: `no PostgreSQL database with a C.utf8 ctype could be made here (${problems.join('; ')})` };
}
