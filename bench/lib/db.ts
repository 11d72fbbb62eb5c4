import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import type { Logger } from 'pino';
import { createApiKey } from '../../src/auth/key-admin.js';
import { startEmbeddedPostgres, type EmbeddedPostgres } from '../../src/db/embedded.js';
import { migrate } from '../../src/db/migrate.js';
import { createDb } from '../../src/db/pool.js';
import { addMember, createTeam } from '../../src/teams/repository.js';

/** Far above anything a 10 s run can spend; also the refill rate, so the bucket never runs dry. */
export const UNLIMITED_RATE = 1_000_000_000;

export interface BenchDatabase {
  /** 'DATABASE_URL' or 'embedded (temp dir)'. */
  server: string;
  /** The server's version (SHOW server_version). */
  version: string;
  name: string;
  url: string;
  key: string;
  keyId: string;
  /** What was done to the rate limit, for the report. */
  rateLimitNote: string;
  /** Puts the key's bucket back to full (and checks the limit is still lifted). */
  refill(): Promise<void>;
  teardown(): Promise<void>;
}

function withDatabase(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

async function adminQuery(url: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/**
 * A dedicated, migrated database (on DATABASE_URL's server, or on an embedded server in a temp
 * dir), a Pro team, its owner and one key made with the operator code (rate 300/min). The
 * benchmark would hit 300/min in a fraction of a second, so in this throwaway database only, the
 * CHECK on api_keys.rate_limit_per_minute is dropped and the key gets a limit of 10^9 a minute:
 * the authentication + token-bucket UPDATE still runs on every request, it just never says no.
 */
export async function setupBenchDatabase(logger: Logger, opts: { adminUrl?: string; server?: string } = {}): Promise<BenchDatabase> {
  let embedded: EmbeddedPostgres | null = null;
  let tmp: string | null = null;
  // opts.adminUrl: a server the caller runs (and stops); only the database is made and dropped here.
  let adminUrl = opts.adminUrl ?? process.env.DATABASE_URL ?? '';
  const server = opts.adminUrl ? (opts.server ?? 'the caller\'s server') : adminUrl ? 'DATABASE_URL' : 'embedded PostgreSQL (temp dir)';
  if (!adminUrl) {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'toolrun-bench-'));
    fs.chmodSync(tmp, 0o755); // as root, postgres runs as an unprivileged user that must reach it
    embedded = await startEmbeddedPostgres({ dataDir: tmp, logger, adoptOrphans: false });
    adminUrl = embedded.connectionString;
  }
  const name = `toolrun_bench_${randomBytes(4).toString('hex')}`;
  const url = withDatabase(adminUrl, name);
  const cleanupServer = async () => {
    await embedded?.stop().catch(() => undefined);
    if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
  };
  try {
    await adminQuery(adminUrl, `CREATE DATABASE "${name}"`);
  } catch (err) {
    await cleanupServer();
    throw err;
  }
  const dropDatabase = () => adminQuery(adminUrl, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);

  const db = createDb({ connectionString: url, logger, max: 2, applicationName: 'toolrun-bench-setup' });
  try {
    await migrate(url, logger);
    const team = await createTeam(db, { name: 'Bench team', plan: 'pro', sparks: 1000 });
    const owner = await addMember(db, { teamId: team.id, email: 'bench@example.test', role: 'owner' });
    const created = await createApiKey(db, { memberId: owner.id, name: 'bench', scopes: ['read', 'run'], rate: 300, envPrefix: 'svc_test_' });
    const keyId = created.api_key.id;

    const { rows } = await db.pool.query<{ conname: string }>(
      `SELECT conname FROM pg_constraint
        WHERE conrelid = 'api_keys'::regclass AND contype = 'c' AND pg_get_constraintdef(oid) LIKE '%rate_limit_per_minute%'`,
    );
    for (const { conname } of rows) await db.pool.query(`ALTER TABLE api_keys DROP CONSTRAINT "${conname}"`);
    await db.pool.query('UPDATE api_keys SET rate_limit_per_minute = $2::integer WHERE id = $1::uuid', [keyId, UNLIMITED_RATE]);

    const refill = async () => {
      const res = await db.pool.query(
        `UPDATE rate_buckets rb SET capacity = k.rate_limit_per_minute, tokens = k.rate_limit_per_minute, refilled_at = clock_timestamp(), last_take = 0
           FROM api_keys k WHERE rb.key_id = k.id AND k.id = $1::uuid AND k.rate_limit_per_minute = $2::integer`,
        [keyId, UNLIMITED_RATE],
      );
      if (res.rowCount !== 1) throw new Error('the bench key lost its lifted rate limit');
    };
    await refill();
    const version = (await db.pool.query<{ server_version: string }>('SHOW server_version')).rows[0]?.server_version ?? 'unknown';
    return {
      server,
      version,
      name,
      url,
      key: created.key,
      keyId,
      rateLimitNote:
        `key created at 300/min by createApiKey; in the throwaway database ${name} the CHECK on ` +
        `api_keys.rate_limit_per_minute (${rows.map((r) => r.conname).join(', ') || 'none found'}) was dropped and the key set to ` +
        `${UNLIMITED_RATE.toExponential()}/min, bucket refilled before each round; a take reads the key and up to 100 tokens from its bucket, the requests between takes are answered from memory`,
      refill,
      async teardown() {
        await db.close().catch(() => undefined);
        await dropDatabase().catch((err: unknown) => logger.warn({ err }, `could not drop ${name}`));
        await cleanupServer();
      },
    };
  } catch (err) {
    await db.close().catch(() => undefined);
    await dropDatabase().catch(() => undefined);
    await cleanupServer();
    throw err;
  }
}
