// API keys as a team's credentials: the limit of 25 active keys per team (removed members' keys
// not counted, concurrent creations held to it), and their secrecy: stored only as a hash, never
// logged, the same answer for every kind of bad key, and the Authorization header classified
// before any database work.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { MAX_ACTIVE_KEYS_PER_TEAM, revokeApiKey } from '../src/auth/key-admin.js';
import { hashKey, parseAuthorization } from '../src/auth/keys.js';
import { AdminError, removeMember } from '../src/teams/repository.js';
import type { TestApp } from './helpers/app.js';
import { authCalls, SESSION_JWT, startAuthApp, WELL_FORMED_UNKNOWN } from './helpers/auth.js';
import { assertError } from './helpers/error-envelope.js';
import { bearer, makeTeam, type TeamFixture } from './helpers/fixtures.js';

let t: TestApp;
let team: TeamFixture;

before(async () => {
  ({ t, team } = await startAuthApp());
});
after(async () => {
  await t.close();
});

const { db, me, addTo, newKey, activeKeyCount } = authCalls(() => t);

describe('the 25 active keys per team limit', () => {
  test('the 26th key is refused; revoking one allows another', async () => {
    const f = await makeTeam(db());
    const made = [f.keyId];
    while (made.length < MAX_ACTIVE_KEYS_PER_TEAM) made.push((await newKey(f.memberId)).api_key.id);
    assert.equal(MAX_ACTIVE_KEYS_PER_TEAM, 25);
    assert.equal(await activeKeyCount(f.teamId), 25);
    await assert.rejects(newKey(f.memberId), (err: unknown) => err instanceof AdminError && /25 active keys/.test(err.message));

    await revokeApiKey(db().pool, made[3] ?? '');
    const replacement = await newKey(f.memberId);
    assert.equal((await me(replacement.key)).statusCode, 200);
    await assert.rejects(newKey(f.memberId), AdminError);
    assert.equal(await activeKeyCount(f.teamId), 25);
  });

  test('keys of removed members do not count', async () => {
    const f = await makeTeam(db());
    const admin = await addTo(f.teamId, 'admin');
    for (let i = 0; i < 5; i++) await newKey(admin.id);
    for (let i = 0; i < 19; i++) await newKey(f.memberId);
    assert.equal(await activeKeyCount(f.teamId), 25);
    await assert.rejects(newKey(f.memberId), AdminError);

    await removeMember(db(), admin.id);
    assert.equal(await activeKeyCount(f.teamId), 20);
    for (let i = 0; i < 5; i++) await newKey(f.memberId);
    await assert.rejects(newKey(f.memberId), AdminError);
  });

  test('concurrent creations cannot pass the limit', async () => {
    const f = await makeTeam(db());
    const results = await Promise.allSettled(Array.from({ length: 30 }, () => newKey(f.memberId)));
    const made = results.filter((r) => r.status === 'fulfilled').length;
    const refused = results.filter((r) => r.status === 'rejected' && r.reason instanceof AdminError).length;
    assert.equal(made, 24, 'the fixture key plus 24 new ones');
    assert.equal(refused, 6);
    assert.equal(await activeKeyCount(f.teamId), 25);
  });
});

describe('security', () => {
  test('a key is stored only as a hash: its secret appears in no column of any table', async () => {
    const f = await makeTeam(db());
    const secret = f.key.slice(17);
    assert.equal(secret.length, 32);
    const needles = [f.key, secret, secret.slice(0, 16), secret.slice(16), Buffer.from(secret).toString('hex'), Buffer.from(secret).toString('base64')];

    const { rows: keyRows } = await db().pool.query<{ row: string; hash_hex: string; prefix: string }>(
      `SELECT to_jsonb(k)::text AS row, encode(k.key_hash, 'hex') AS hash_hex, k.prefix FROM api_keys k WHERE k.id = $1::uuid`,
      [f.keyId],
    );
    const keyRow = keyRows[0];
    assert.ok(keyRow);
    assert.equal(keyRow.prefix, f.key.slice(9, 17), 'the 8-character prefix is kept to tell keys apart');
    assert.equal(keyRow.hash_hex.length, 64, 'a 256-bit digest');
    for (const needle of needles) {
      assert.ok(!keyRow.row.toLowerCase().includes(needle.toLowerCase()), 'api_keys row holds part of the key');
    }

    const { rows: tables } = await db().pool.query<{ name: string }>(
      "SELECT quote_ident(table_name) AS name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'",
    );
    assert.ok(tables.some((x) => x.name === 'api_keys'));
    for (const { name } of tables) {
      const { rows } = await db().pool.query<{ row: string }>(`SELECT to_jsonb(x)::text AS row FROM ${name} x`);
      for (const { row } of rows) {
        for (const needle of needles) assert.ok(!row.includes(needle), `table ${name} holds part of a key`);
      }
    }
  });

  test('keys never reach the logs', async () => {
    const f = await makeTeam(db());
    await me(f.key);
    await me(`${f.key}x`);
    await t.app.inject({ method: 'GET', url: `/v1/nope?api_key=${f.key}`, headers: bearer(f.key) });
    await t.app.inject({ method: 'GET', url: '/test/boom', headers: bearer(f.key) });
    const secret = f.key.slice(17);
    assert.ok(t.logs.lines.length > 0, 'something was logged');
    assert.ok(!t.logs.text().includes(secret), 'a key secret was logged');
  });

  test('unknown, revoked, removed-member and malformed keys get the same answer (no oracle)', async () => {
    const revoked = await makeTeam(db());
    await revokeApiKey(db().pool, revoked.keyId);
    const removed = await makeTeam(db());
    const admin = await addTo(removed.teamId, 'admin');
    const removedKey = await newKey(admin.id);
    await removeMember(db(), admin.id);

    const answers = await Promise.all(
      [WELL_FORMED_UNKNOWN, revoked.key, removedKey.key, 'svc_test_tooshort'].map(async (key) => {
        const error = assertError(await me(key), 401, 'invalid_api_key');
        return { message: error.message, details: error.details, errors: error.errors };
      }),
    );
    for (const a of answers) assert.deepEqual(a, answers[0]);
  });

  test('a refused key gets no RateLimit headers and no team data', async () => {
    const res = await me(WELL_FORMED_UNKNOWN);
    assertError(res, 401, 'invalid_api_key');
    assert.equal(res.headers['ratelimit-limit'], undefined);
    assert.ok(!res.body.includes(team.teamId));
  });

  test('parseAuthorization classifies headers before any database work', () => {
    const key = team.key;
    assert.deepEqual(parseAuthorization(undefined, 'svc_test_'), { kind: 'none' });
    assert.deepEqual(parseAuthorization('Basic abc', 'svc_test_'), { kind: 'none' });
    assert.deepEqual(parseAuthorization('Bearerx svc_test_abc', 'svc_test_'), { kind: 'none' });
    assert.deepEqual(parseAuthorization(`Bearer ${SESSION_JWT}`, 'svc_test_'), { kind: 'not_a_key' });
    assert.deepEqual(parseAuthorization(`Bearer ${key} extra`, 'svc_test_'), { kind: 'malformed' });
    assert.deepEqual(parseAuthorization(`Bearer ${key}`, 'svc_live_'), { kind: 'wrong_env' });
    // The request path's hex digest is the stored hash (api_keys.key_hash) in hex.
    assert.deepEqual(parseAuthorization(`Bearer ${key}`, 'svc_test_'), { kind: 'key', hashHex: hashKey(key).toString('hex') });
    // Other spellings of the same credential take the general path to the same answer as the
    // canonical "Bearer <key>" (decided by one test); near misses of the canonical shape do not pass as keys.
    const hashHex = hashKey(key).toString('hex');
    for (const header of [`bearer ${key}`, `Bearer  ${key}`, `Bearer\t${key}`, ` Bearer ${key} `, `BEARER ${key}`]) {
      assert.deepEqual(parseAuthorization(header, 'svc_test_'), { kind: 'key', hashHex }, JSON.stringify(header));
    }
    assert.deepEqual(parseAuthorization(`Bearer ${key.slice(0, -1)}-`, 'svc_test_'), { kind: 'malformed' });
    assert.deepEqual(parseAuthorization(`Bearer ${key.slice(0, -1)}`, 'svc_test_'), { kind: 'malformed' });
    assert.deepEqual(parseAuthorization(`Bearer ${key.replace('svc_test_', 'svc_live_')}`, 'svc_test_'), { kind: 'wrong_env' });
  });
});
