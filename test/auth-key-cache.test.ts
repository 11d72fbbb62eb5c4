// API keys answered from memory in every API process (issue 16): two real `toolrun serve
// --no-workers` processes on this file's database. A change made in one process's console takes
// effect there at once and in the other as soon as PostgreSQL's notification arrives; a change
// made around both (the operator CLI, SQL) reaches both the same way; a lost LISTEN connection
// empties the cache; and no entry outlives its age bound.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { updateTeam } from '../src/teams/repository.js';
import { answeredWith } from './helpers/app.js';
import { signedInMember, type SignedInMember } from './helpers/console.js';
import { createTestDatabase, type TestDatabase } from './helpers/db.js';
import { toolrunEnv } from './helpers/faults.js';
import { callApi, makeTeam, type TeamFixture } from './helpers/fixtures.js';
import { CliProcess, killLiveChildren, makeDataDir, waitFor } from './helpers/process.js';

/**
 * Long enough that a loaded machine still answers from memory between two steps, short enough
 * that the age bound is seen within a test; the notifications must not depend on it.
 */
const MAX_AGE_MS = 10_000;
/**
 * Keys here take 300 a minute, five tokens a take, and keep what they took for a minute: most of
 * their requests then need no SQL for the rate either, so what answers them is the cache.
 */
const RATE = 300;

let database: TestDatabase;
const dataDirs: string[] = [];
const api: { a: string; b: string } = { a: '', b: '' };

async function serve(): Promise<string> {
  const dir = makeDataDir('key-cache');
  dataDirs.push(dir);
  const proc = new CliProcess(
    ['serve', '--no-workers'],
    toolrunEnv({ DATABASE_URL: database.url, TOOLRUN_DATA_DIR: dir, PORT: '0', TOOLRUN_KEY_CACHE_MAX_AGE_MS: String(MAX_AGE_MS), TOOLRUN_RATE_RESERVATION_MS: '60000' }),
  );
  return String((await proc.waitForLog('toolrun API listening')).url);
}

before(async () => {
  database = await createTestDatabase();
  [api.a, api.b] = await Promise.all([serve(), serve()]);
});

after(async () => {
  killLiveChildren();
  await database?.db.close();
  for (const dir of dataDirs) fs.rmSync(dir, { recursive: true, force: true });
});

interface Answer {
  statusCode: number;
  code: string | undefined;
}

async function call(baseUrl: string, key: string, path = '/v1/me'): Promise<Answer> {
  const res = await callApi(baseUrl, key, 'GET', path);
  const body = (await res.json()) as { error?: { code: string } };
  return { statusCode: res.status, code: body.error?.code };
}

/** Both processes answer 200, so each holds the key in memory. */
async function warm(key: string, path = '/v1/me'): Promise<void> {
  for (const url of [api.a, api.b]) assert.equal((await call(url, key, path)).statusCode, 200);
}

async function owner(team: TeamFixture): Promise<SignedInMember> {
  return signedInMember(api.a, database.db, team.teamId, 'owner');
}

async function silently(sql: string, values: unknown[]): Promise<void> {
  // session_replication_role = replica turns triggers off for this transaction: the change
  // notifies nobody, so only the age bound or a fresh read can show it.
  const client = await database.db.pool.connect();
  try {
    await client.query('BEGIN');
    await client.query('SET LOCAL session_replication_role = replica');
    await client.query(sql, values);
    await client.query('COMMIT');
  } finally {
    client.release();
  }
}

async function listenerPids(): Promise<number[]> {
  const { rows } = await database.db.pool.query<{ pid: number }>(
    "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'toolrun-api-listen' ORDER BY pid",
  );
  return rows.map((r) => r.pid);
}

describe('a change in one process', { timeout: 120_000 }, () => {
  test("a key revoked in A's console fails at once in A, and in B as soon as it hears", async () => {
    const team = await makeTeam(database.db, { rate: RATE });
    await warm(team.key);
    const o = await owner(team);
    const revoked = await o.client.call('POST', `/console/api/keys/${team.keyId}/revoke`);
    assert.equal(revoked.statusCode, 200, revoked.body);
    assert.deepEqual(await call(api.a, team.key), { statusCode: 401, code: 'invalid_api_key' });
    assert.deepEqual(await answeredWith(401, () => call(api.b, team.key)), { statusCode: 401, code: 'invalid_api_key' });
  });

  test("a member removed in A's console: their key fails at once in A, and in B as soon as it hears", async () => {
    const team = await makeTeam(database.db, { rate: RATE });
    const o = await owner(team);
    const made = await o.client.call('POST', '/console/api/keys', { name: 'leaver', rate_limit_per_minute: RATE });
    assert.equal(made.statusCode, 201, made.body);
    const leaver = made.json<{ key: string }>().key;
    // The key acts as the member who created it: the owner signed in above. A second owner
    // removes that one.
    const other = await owner(team);
    await warm(leaver);
    const removed = await other.client.call('DELETE', `/console/api/members/${o.memberId}`);
    assert.equal(removed.statusCode, 200, removed.body);
    assert.deepEqual(await call(api.a, leaver), { statusCode: 401, code: 'invalid_api_key' });
    assert.deepEqual(await answeredWith(401, () => call(api.b, leaver)), { statusCode: 401, code: 'invalid_api_key' });
  });

  test("a role change in A's console: an admin's key loses webhook access at once in A, and in B as soon as it hears", async () => {
    const team = await makeTeam(database.db, { rate: RATE });
    const admin = await signedInMember(api.a, database.db, team.teamId, 'admin');
    const made = await admin.client.call('POST', '/console/api/keys', { name: 'hooks', scopes: ['read', 'webhooks'], rate_limit_per_minute: RATE });
    assert.equal(made.statusCode, 201, made.body);
    const key = made.json<{ key: string }>().key;
    await warm(key, '/v1/webhook-endpoints');
    const o = await owner(team);
    const demoted = await o.client.call('PATCH', `/console/api/members/${admin.memberId}`, { role: 'member' });
    assert.equal(demoted.statusCode, 200, demoted.body);
    assert.deepEqual(await call(api.a, key, '/v1/webhook-endpoints'), { statusCode: 403, code: 'insufficient_role' });
    assert.deepEqual(await answeredWith(403, () => call(api.b, key, '/v1/webhook-endpoints')), { statusCode: 403, code: 'insufficient_role' });
  });
});

describe('a change around both processes (the operator CLI, SQL)', { timeout: 120_000 }, () => {
  test('a move to Free reaches both; a move back too', async () => {
    const team = await makeTeam(database.db, { rate: RATE });
    await warm(team.key);
    await updateTeam(database.db.pool, team.teamId, { plan: 'free' });
    for (const url of [api.a, api.b]) {
      assert.deepEqual(await answeredWith(403, () => call(url, team.key)), { statusCode: 403, code: 'plan_upgrade_required' });
    }
    await updateTeam(database.db.pool, team.teamId, { plan: 'plus' });
    for (const url of [api.a, api.b]) assert.equal((await answeredWith(200, () => call(url, team.key))).statusCode, 200);
  });

  test("a revocation in SQL alone reaches both (the trigger notifies); last_used_at writes notify nobody", async () => {
    const team = await makeTeam(database.db, { rate: RATE });
    await warm(team.key);
    await database.db.pool.query('UPDATE api_keys SET revoked_at = now() WHERE id = $1::uuid', [team.keyId]);
    for (const url of [api.a, api.b]) {
      assert.deepEqual(await answeredWith(401, () => call(url, team.key)), { statusCode: 401, code: 'invalid_api_key' });
    }
  });
});

describe('memory that cannot be trusted is dropped', { timeout: 120_000 }, () => {
  test('a change nobody hears of: a known key is answered from memory, with no SQL, until it is read again', async () => {
    const team = await makeTeam(database.db, { rate: RATE });
    await warm(team.key);
    await silently('UPDATE api_keys SET revoked_at = now() WHERE id = $1::uuid', [team.keyId]);
    // Answered from memory: no SQL ran for this request (a read would have found the key revoked).
    assert.equal((await call(api.b, team.key)).statusCode, 200);
    // The key is read again when its reserved tokens run out (the take reads the key too) or its
    // entry ages out (test/key-cache.test.ts), whichever comes first.
    for (const url of [api.a, api.b]) {
      assert.deepEqual(await answeredWith(401, () => call(url, team.key), MAX_AGE_MS * 4), { statusCode: 401, code: 'invalid_api_key' });
    }
  });

  test('a lost LISTEN connection empties the cache: a change made while it was down is seen at once', async () => {
    const team = await makeTeam(database.db, { rate: RATE });
    await warm(team.key);
    const before = await listenerPids();
    assert.equal(before.length, 2, 'one LISTEN connection per API process');
    await database.db.pool.query('SELECT pg_terminate_backend(pid) FROM unnest($1::int[]) AS pid', [before]);
    // Both processes reconnect (having emptied their caches when the connection dropped).
    await waitFor('both processes to LISTEN again', async () => {
      const now = await listenerPids();
      return now.length === 2 && now.every((p) => !before.includes(p));
    });
    await silently('UPDATE api_keys SET revoked_at = now() WHERE id = $1::uuid', [team.keyId]);
    for (const url of [api.a, api.b]) assert.deepEqual(await call(url, team.key), { statusCode: 401, code: 'invalid_api_key' });
  });
});
