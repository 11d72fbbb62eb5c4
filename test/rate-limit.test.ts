import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { createApiKey, revokeApiKey } from '../src/auth/key-admin.js';
import { createTestApp, type TestApp } from './helpers/app.js';
import { createTestDatabase, type TestDatabase } from './helpers/db.js';
import { assertError } from './helpers/error-envelope.js';
import { bearer, makeTeam, type TeamFixture } from './helpers/fixtures.js';
import { testRoutes } from './helpers/test-routes.js';

let database: TestDatabase;
let a: TestApp;
let b: TestApp;

before(async () => {
  database = await createTestDatabase();
  // Two app instances on one database: two API processes as far as the limiter can tell.
  // Reservations that outlive a slow burst on a loaded machine: a lapsed one counts as spent, which
  // would make "exactly the bucket size" undershoot.
  const env = { TOOLRUN_RATE_RESERVATION_MS: '60000' };
  a = await createTestApp({ database, extraRoutes: testRoutes, env });
  b = await createTestApp({ database, extraRoutes: testRoutes, env });
});
after(async () => {
  await a.close();
  await b.close();
  await database.db.close();
});

const db = () => database.db;

function me(key: string, app: TestApp = a): Promise<LightMyRequestResponse> {
  return app.app.inject({ method: 'GET', url: '/v1/me', headers: bearer(key) });
}

function burst(key: string, n: number, apps: TestApp[] = [a]): Promise<LightMyRequestResponse[]> {
  return Promise.all(Array.from({ length: n }, (_, i) => me(key, apps[i % apps.length])));
}

function countStatus(responses: LightMyRequestResponse[], status: number): number {
  return responses.filter((r) => r.statusCode === status).length;
}

/**
 * Stops the refill, so counts are exact however slow the machine: the refill adds tokens for the
 * time since refilled_at, which is nothing while refilled_at lies in the future.
 */
async function freeze(keyId: string): Promise<void> {
  const { rowCount } = await db().pool.query(
    "UPDATE rate_buckets SET refilled_at = clock_timestamp() + interval '1 day' WHERE key_id = $1::uuid",
    [keyId],
  );
  assert.equal(rowCount, 1);
}

/** Puts `tokens` in the bucket, last refilled `secondsAgo` seconds ago (so the refill runs from then). */
async function setBucket(keyId: string, tokens: number, secondsAgo: number): Promise<void> {
  const { rowCount } = await db().pool.query(
    'UPDATE rate_buckets SET tokens = $2::float8, refilled_at = clock_timestamp() - make_interval(secs => $3::float8) WHERE key_id = $1::uuid',
    [keyId, tokens, secondsAgo],
  );
  assert.equal(rowCount, 1);
}

async function tokensOf(keyId: string): Promise<number> {
  const { rows } = await db().pool.query<{ tokens: number }>('SELECT tokens FROM rate_buckets WHERE key_id = $1::uuid', [keyId]);
  assert.ok(rows[0]);
  return rows[0].tokens;
}

function assertRateLimited(res: LightMyRequestResponse, limit: number): number {
  const error = assertError(res, 429, 'rate_limited');
  assert.deepEqual(error.details, { limit_per_minute: limit });
  const retryAfter = String(res.headers['retry-after']);
  assert.match(retryAfter, /^[1-9]\d*$/, 'Retry-After is a whole number of seconds, never 0');
  assert.equal(res.headers['ratelimit-limit'], String(limit));
  assert.equal(res.headers['ratelimit-remaining'], '0');
  return Number(retryAfter);
}

describe('token bucket', () => {
  test('a fresh key with rate 30 gets exactly 30 requests in a burst, then 429 rate_limited', async () => {
    const f = await makeTeam(db(), { rate: 30 });
    // 40 concurrent requests take well under the 2 s one token takes to refill at 30/min.
    const responses = await burst(f.key, 40);
    assert.equal(countStatus(responses, 200), 30);
    assert.equal(countStatus(responses, 429), 10);
    for (const res of responses.filter((r) => r.statusCode === 429)) {
      const retryAfter = assertRateLimited(res, 30);
      assert.ok(retryAfter <= 2, `at 30/min one token takes 2 s, Retry-After was ${retryAfter}`);
    }
  });

  test('successes carry RateLimit-Limit/Remaining/Reset, Remaining counting down to 0', async () => {
    const f = await makeTeam(db(), { rate: 30 });
    await freeze(f.keyId);
    for (let i = 1; i <= 30; i++) {
      const res = await me(f.key);
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.headers['ratelimit-limit'], '30');
      assert.equal(res.headers['ratelimit-remaining'], String(30 - i));
      // Seconds until full again: i tokens missing at one per 2 s.
      assert.equal(res.headers['ratelimit-reset'], String(2 * i));
    }
    const refused = await me(f.key);
    assert.equal(assertRateLimited(refused, 30), 2);
    assert.equal(refused.headers['ratelimit-reset'], '60');
    // Refusals take nothing: the bucket stays at zero, not below.
    assert.equal(await tokensOf(f.keyId), 0);
    assertRateLimited(await me(f.key), 30);
    assert.equal(await tokensOf(f.keyId), 0);
  });

  test('Retry-After rounds up to whole seconds and is at least 1', async () => {
    const fast = await makeTeam(db(), { rate: 300 });
    await setBucket(fast.keyId, 0, 0);
    await freeze(fast.keyId);
    // One token takes 0.2 s at 300/min: still 1 s, never 0.
    assert.equal(assertRateLimited(await me(fast.key), 300), 1);

    const slow = await makeTeam(db(), { rate: 30 });
    await db().pool.query("UPDATE rate_buckets SET tokens = 0.25, refilled_at = clock_timestamp() + interval '1 day' WHERE key_id = $1::uuid", [slow.keyId]);
    // 0.75 of a token at 0.5 tokens/s is 1.5 s: 2.
    assert.equal(assertRateLimited(await me(slow.key), 30), 2);
  });

  test('waiting Retry-After seconds is enough, and one second less is not', async () => {
    const f = await makeTeam(db(), { rate: 30 });
    await setBucket(f.keyId, 0, 0);
    await freeze(f.keyId);
    const retryAfter = assertRateLimited(await me(f.key), 30);
    assert.equal(retryAfter, 2);
    await setBucket(f.keyId, 0, retryAfter - 1);
    assertRateLimited(await me(f.key), 30);
    await setBucket(f.keyId, 0, retryAfter);
    assert.equal((await me(f.key)).statusCode, 200);
  });

  test('the bucket refills continuously: 30 s at 30/min gives exactly 15 tokens', async () => {
    const f = await makeTeam(db(), { rate: 30 });
    await freeze(f.keyId);
    assert.equal(countStatus(await burst(f.key, 35), 200), 30);
    assert.equal(await tokensOf(f.keyId), 0);

    // Half a minute passes.
    await setBucket(f.keyId, 0, 30);
    const first = await me(f.key);
    assert.equal(first.statusCode, 200, first.body);
    assert.equal(first.headers['ratelimit-remaining'], '14');
    const rest = await burst(f.key, 20);
    assert.equal(countStatus(rest, 200), 14, 'the other 14 of the 15 refilled tokens');
    assert.equal(countStatus(rest, 429), 6);
  });

  test('the refill stops at one minute of requests, however long the key was idle', async () => {
    const f = await makeTeam(db(), { rate: 60 });
    await setBucket(f.keyId, 10, 3600);
    const res = await me(f.key);
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers['ratelimit-remaining'], '59');
    const tokens = await tokensOf(f.keyId);
    assert.ok(tokens >= 59 && tokens < 59.1, `bucket holds ${tokens}`);
  });

  test('two keys of one team have independent buckets', async () => {
    const f = await makeTeam(db(), { rate: 30 });
    const second = await createApiKey(db(), { memberId: f.memberId, name: 'second', scopes: ['read'], rate: 30, envPrefix: 'svc_test_' });
    await freeze(f.keyId);
    assert.equal(countStatus(await burst(f.key, 31), 200), 30);
    assertRateLimited(await me(f.key), 30);

    const other = await me(second.key);
    assert.equal(other.statusCode, 200);
    assert.equal(other.headers['ratelimit-remaining'], '29');
    assertRateLimited(await me(f.key), 30);
  });
});

describe('limits hold across processes and under concurrency', () => {
  test('a burst split across two app instances passes exactly the bucket size in total', async () => {
    const f = await makeTeam(db(), { rate: 60 });
    await freeze(f.keyId);
    const responses = await burst(f.key, 90, [a, b]);
    assert.equal(countStatus(responses, 200), 60);
    assert.equal(countStatus(responses, 429), 30);
    const okA = responses.filter((r, i) => i % 2 === 0 && r.statusCode === 200).length;
    const okB = responses.filter((r, i) => i % 2 === 1 && r.statusCode === 200).length;
    assert.ok(okA > 0 && okB > 0, `both instances served some (${okA} + ${okB})`);
    assert.equal(await tokensOf(f.keyId), 0);
    // Either instance now refuses.
    assertRateLimited(await me(f.key, a), 60);
    assertRateLimited(await me(f.key, b), 60);
  });

  test('concurrent requests never spend a token twice: every success sees a different Remaining', async () => {
    // At 60/min a take is one token, so every success is one row update and Remaining is exact.
    const f = await makeTeam(db(), { rate: 60 });
    await freeze(f.keyId);
    const responses = await burst(f.key, 90, [a, b]);
    const ok = responses.filter((r) => r.statusCode === 200);
    assert.equal(ok.length, 60);
    const remaining = ok.map((r) => Number(r.headers['ratelimit-remaining'])).sort((x, y) => x - y);
    assert.deepEqual(
      remaining,
      Array.from({ length: 60 }, (_, i) => i),
    );
    for (const res of responses.filter((r) => r.statusCode === 429)) assertRateLimited(res, 60);
  });

  test('batched takes (120/min takes 2 at a time) never pass more than the bucket under concurrency', async () => {
    // Each process reserves part of a batch; Remaining is then approximate across processes, and
    // the total admitted can never exceed what the shared bucket gave out. It can fall short by at
    // most one unspent reserved token per process (batch 2 - 1), when that process's requests run
    // out while another's are refused.
    const f = await makeTeam(db(), { rate: 120 });
    await freeze(f.keyId);
    const responses = await burst(f.key, 150, [a, b]);
    const ok = responses.filter((r) => r.statusCode === 200);
    assert.ok(ok.length <= 120 && ok.length >= 118, `admitted ${ok.length}`);
    for (const r of ok) {
      const left = Number(r.headers['ratelimit-remaining']);
      assert.ok(left >= 0 && left <= 119, `Remaining ${left}`);
    }
    assert.equal(await tokensOf(f.keyId), 0);
    for (const res of responses.filter((r) => r.statusCode === 429)) assertRateLimited(res, 120);
  });

  test('a fresh key split across two instances without any freezing still gets its bucket and no more', async () => {
    const f = await makeTeam(db(), { rate: 30 });
    const responses = await burst(f.key, 45, [a, b]);
    assert.equal(countStatus(responses, 200), 30);
    assert.equal(countStatus(responses, 429), 15);
  });
});

describe('what does not spend tokens', () => {
  test('401 answers, unknown routes and wrong methods take no token', async () => {
    const f = await makeTeam(db(), { rate: 30 });
    await freeze(f.keyId);
    assert.equal((await me(f.key)).statusCode, 200);
    const before = await tokensOf(f.keyId);
    assert.equal(before, 29);

    // 401: a key that fails to parse, an unknown key, a missing key.
    assertError(await me(`${f.key}0`), 401, 'invalid_api_key');
    assertError(await a.app.inject({ method: 'GET', url: '/v1/me' }), 401, 'api_key_required');
    assert.equal(await tokensOf(f.keyId), before);

    // 404 and 405 never reach the limiter either.
    assertError(await a.app.inject({ method: 'GET', url: '/v1/nope', headers: bearer(f.key) }), 404, 'not_found');
    assertError(await a.app.inject({ method: 'POST', url: '/v1/me', headers: bearer(f.key) }), 405, 'method_not_allowed');
    assert.equal(await tokensOf(f.keyId), before);

    const res = await me(f.key);
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers['ratelimit-remaining'], '28');
  });

  test('a revoked key is refused with 401 and its bucket is left alone', async () => {
    const f = await makeTeam(db(), { rate: 30 });
    await freeze(f.keyId);
    await revokeApiKey(db().pool, f.keyId);
    const results = await burst(f.key, 10);
    for (const res of results) assertError(res, 401, 'invalid_api_key');
    assert.equal(await tokensOf(f.keyId), 30);
  });

  test('a 429 answer takes no token: a drained bucket is not pushed below zero', async () => {
    const f = await makeTeam(db(), { rate: 30 });
    await setBucket(f.keyId, 0, 0);
    await freeze(f.keyId);
    const responses = await burst(f.key, 20, [a, b]);
    assert.equal(countStatus(responses, 429), 20);
    assert.equal(await tokensOf(f.keyId), 0);
    // A moment later exactly one token is back, and one request passes.
    await setBucket(f.keyId, 0, 2);
    assert.equal(countStatus(await burst(f.key, 5, [a, b]), 200), 1);
  });
});
