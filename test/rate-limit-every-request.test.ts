// The spec's per-key rate applies to every request: calls refused for scope or plan take a token
// like any other, and once the bucket is empty every call of the key answers 429 rate_limited
// (with details.limit_per_minute) before any other verdict on it.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createApiKey } from '../src/auth/key-admin.js';
import { updateTeam } from '../src/teams/repository.js';
import { assertError, type AnsweredRequest } from './helpers/error-envelope.js';
import { bearer, makeTeam } from './helpers/fixtures.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { socketRequest } from './helpers/socket-request.js';

let s: TestServer;

before(async () => {
  s = await startTestServer();
});
after(() => s.close());

const db = () => s.database.db;

function call(key: string, path: string): Promise<AnsweredRequest> {
  return socketRequest(s.url, path, { headers: bearer(key) });
}

/** Stops the refill (refilled_at in the future), so counts are exact however slow the machine. */
async function freeze(keyId: string): Promise<void> {
  const { rowCount } = await db().pool.query("UPDATE rate_buckets SET refilled_at = clock_timestamp() + interval '1 day' WHERE key_id = $1::uuid", [keyId]);
  assert.equal(rowCount, 1);
}

async function tokensOf(keyId: string): Promise<number> {
  const { rows } = await db().pool.query<{ tokens: number }>('SELECT tokens FROM rate_buckets WHERE key_id = $1::uuid', [keyId]);
  assert.ok(rows[0]);
  return rows[0].tokens;
}

function assertRateLimited(res: AnsweredRequest, limit: number): void {
  assert.deepEqual(assertError(res, 429, 'rate_limited').details, { limit_per_minute: limit });
  assert.match(String(res.headers['retry-after']), /^[1-9]\d*$/);
  assert.equal(res.headers['ratelimit-limit'], String(limit));
  assert.equal(res.headers['ratelimit-remaining'], '0');
}

describe('every request of a known key counts', { timeout: 120_000 }, () => {
  test('a read-only key at 30/min: 200 calls to GET /v1/webhook-endpoints answer 30 x 403 insufficient_scope, then 170 x 429', async () => {
    const f = await makeTeam(db(), { scopes: ['read'], rate: 30 });
    await freeze(f.keyId);
    const statuses: number[] = [];
    for (let i = 1; i <= 200; i++) {
      const res = await call(f.key, '/v1/webhook-endpoints');
      statuses.push(res.statusCode);
      if (i <= 30) {
        assert.deepEqual(assertError(res, 403, 'insufficient_scope').details, { required_scope: 'webhooks' });
        // The refusal spent a token, as the header says.
        assert.equal(res.headers['ratelimit-remaining'], String(30 - i));
      } else {
        // Over the limit and lacking the scope: the rate answers first.
        assertRateLimited(res, 30);
      }
    }
    assert.equal(statuses.filter((x) => x === 403).length, 30);
    assert.equal(statuses.filter((x) => x === 429).length, 170);
    assert.equal(await tokensOf(f.keyId), 0);
    // The key's calls within its scope are limited too: the bucket is shared by all its calls.
    assertRateLimited(await call(f.key, '/v1/me'), 30);
  });

  test('a 403 spends the token a 200 would have: 29 refused calls leave one for /v1/me', async () => {
    const f = await makeTeam(db(), { scopes: ['read'], rate: 30 });
    await freeze(f.keyId);
    for (let i = 0; i < 29; i++) assertError(await call(f.key, '/v1/webhook-endpoints'), 403, 'insufficient_scope');
    const last = await call(f.key, '/v1/me');
    assert.equal(last.statusCode, 200, last.body);
    assert.equal(last.headers['ratelimit-remaining'], '0');
    assertRateLimited(await call(f.key, '/v1/me'), 30);
  });

  test('a Free team key: plan_upgrade_required spends tokens, then 429 rate_limited', async () => {
    const f = await makeTeam(db(), { rate: 30 });
    await updateTeam(db().pool, f.teamId, { plan: 'free' });
    await freeze(f.keyId);
    for (let i = 1; i <= 30; i++) {
      const res = await call(f.key, i % 2 ? '/v1/me' : '/v1/tools');
      assert.equal(assertError(res, 403, 'plan_upgrade_required').details?.plan, 'free');
      assert.equal(res.headers['ratelimit-remaining'], String(30 - i));
    }
    for (let i = 0; i < 10; i++) assertRateLimited(await call(f.key, '/v1/me'), 30);
    assert.equal(await tokensOf(f.keyId), 0);
  });

  test('concurrent out-of-scope calls of a 60/min key: exactly 60 answered 403, the rest 429', async () => {
    const f = await makeTeam(db(), { scopes: ['read', 'run'], rate: 60 });
    const other = await createApiKey(db(), { memberId: f.memberId, name: 'other', scopes: ['read', 'run'], rate: 60, envPrefix: 'svc_test_' });
    await freeze(f.keyId);
    const answers = await Promise.all(Array.from({ length: 90 }, () => call(f.key, '/v1/webhook-endpoints')));
    assert.equal(answers.filter((r) => r.statusCode === 403).length, 60);
    for (const r of answers.filter((x) => x.statusCode !== 403)) assertRateLimited(r, 60);
    // Another key of the same team has its own bucket, untouched.
    const res = await call(other.key, '/v1/me');
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.headers['ratelimit-remaining'], '59');
  });
});
