// Real responses (successes and errors, made through the app) match GET /v1/openapi.json, status
// by status: every operation with a full key, without one, with bad keys, on a Free plan, over its
// rate limit, with made-up ids, and with the database gone (test/openapi.test.ts checks the
// document itself).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import pino from 'pino';
import { revokeApiKey } from '../src/auth/key-admin.js';
import { createDb } from '../src/db/pool.js';
import { updateTeam } from '../src/teams/repository.js';
import { createTestApp, type TestApp } from './helpers/app.js';
import { bearer, makeTeam, type TeamFixture } from './helpers/fixtures.js';
import { contractCaller, requestFor, servedContract, type Caller } from './helpers/openapi-app.js';
import type { Contract } from './helpers/openapi-contract.js';
import { tcpProxy } from './helpers/tcp-proxy.js';

let t: TestApp;
let contract: Contract;
let call: Caller;
let full: TeamFixture;

before(async () => {
  t = await createTestApp();
  full = await makeTeam(t.database.db, { scopes: ['read', 'run', 'webhooks'], rate: 300, sparks: 500 });
  ({ contract } = await servedContract(t.app));
  call = contractCaller(contract, t.app);
});
after(() => t.close());

describe('real responses match the document', () => {
  test('every GET without path parameters succeeds with a full key and matches', async () => {
    const gets = contract.ops.filter((o) => o.method === 'GET' && o.pathParams.length === 0);
    assert.ok(gets.length >= 5);
    for (const op of gets) {
      const res = await call(requestFor(op, op.secured ? bearer(full.key) : {}));
      assert.ok(res.statusCode >= 200 && res.statusCode < 300, `${op.method} ${op.path}: ${res.statusCode} ${res.body.slice(0, 300)}`);
      if (op.secured) {
        assert.equal(res.headers['ratelimit-limit'], '300', `${op.method} ${op.path}: RateLimit-Limit`);
        assert.match(String(res.headers['ratelimit-remaining']), /^\d+$/);
        assert.match(String(res.headers['ratelimit-reset']), /^\d+$/);
      }
    }
  });

  test('GET /v1/me and GET /v1/tools bodies, on Pro and on Plus', async () => {
    const me = await call({ method: 'GET', url: '/v1/me', headers: bearer(full.key) });
    assert.equal(me.json<{ team: { plan: string } }>().team.plan, 'pro');
    const plus = await makeTeam(t.database.db, { plan: 'plus', rate: 120 });
    const tools = await call({ method: 'GET', url: '/v1/tools', headers: bearer(plus.key) });
    const list = tools.json<{ data: { id: string; allowed: boolean }[] }>();
    assert.equal(list.data.find((x) => x.id === 'video_upscale')?.allowed, false);
    assert.equal(list.data.find((x) => x.id === 'image_upscale')?.allowed, true);
  });

  test('every secured operation: 401 api_key_required without a key or with a session token', async () => {
    for (const op of contract.ops.filter((o) => o.secured)) {
      const variants: Record<string, string>[] = [{}, { authorization: 'Bearer eyJhbGciOiJIUzI1NiJ9.session.token' }];
      for (const headers of variants) {
        const res = await call(requestFor(op, headers));
        assert.equal(res.statusCode, 401, `${op.method} ${op.path}`);
        assert.equal(res.json<{ error: { code: string } }>().error.code, 'api_key_required');
      }
    }
  });

  test('every secured operation: 401 invalid_api_key for malformed, unknown, revoked and other-environment keys', async () => {
    const revoked = await makeTeam(t.database.db);
    await revokeApiKey(t.database.db.pool, revoked.keyId);
    const live = await makeTeam(t.database.db, { envPrefix: 'svc_live_' });
    const keys = ['svc_test_short', `svc_test_${'A'.repeat(40)}`, revoked.key, live.key];
    for (const op of contract.ops.filter((o) => o.secured)) {
      for (const key of keys) {
        const res = await call(requestFor(op, bearer(key)));
        assert.equal(res.statusCode, 401, `${op.method} ${op.path} with ${key.slice(0, 12)}`);
        assert.equal(res.json<{ error: { code: string } }>().error.code, 'invalid_api_key');
      }
    }
  });

  test('every secured operation: 403 plan_upgrade_required for a Free team', async () => {
    const free = await makeTeam(t.database.db, { scopes: ['read', 'run', 'webhooks'] });
    await updateTeam(t.database.db.pool, free.teamId, { plan: 'free' });
    for (const op of contract.ops.filter((o) => o.secured)) {
      const res = await call(requestFor(op, bearer(free.key)));
      assert.equal(res.statusCode, 403, `${op.method} ${op.path}`);
      assert.equal(res.json<{ error: { code: string } }>().error.code, 'plan_upgrade_required');
    }
  });

  test('every secured operation: 429 rate_limited with Retry-After once the bucket is empty', async () => {
    const limited = await makeTeam(t.database.db, { scopes: ['read', 'run', 'webhooks'], rate: 30 });
    for (const op of contract.ops.filter((o) => o.secured)) {
      // Drain the bucket through the API (it refills continuously, so drain before each operation).
      let drained = false;
      for (let i = 0; i < 40 && !drained; i++) {
        const r = await t.app.inject({ method: 'GET', url: '/v1/me', headers: bearer(limited.key) });
        drained = r.statusCode === 429;
      }
      assert.ok(drained, 'the bucket never emptied');
      const res = await call(requestFor(op, bearer(limited.key)));
      assert.equal(res.statusCode, 429, `${op.method} ${op.path}`);
      const body = res.json<{ error: { code: string; details: { limit_per_minute: number } } }>();
      assert.equal(body.error.code, 'rate_limited');
      assert.equal(body.error.details.limit_per_minute, 30);
      const retryAfter = Number(res.headers['retry-after']);
      assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60, `Retry-After ${res.headers['retry-after']}`);
      assert.equal(res.headers['ratelimit-limit'], '30');
      assert.equal(res.headers['ratelimit-remaining'], '0');
    }
  });

  test('every operation, with made-up ids and an empty body, answers a documented status and shape', async () => {
    const readOnly = await makeTeam(t.database.db, { scopes: ['read'], rate: 300 });
    for (const op of contract.ops) {
      for (const key of [full.key, readOnly.key]) {
        const res = await call(requestFor(op, op.secured ? bearer(key) : {}));
        assert.ok(res.statusCode < 500, `${op.method} ${op.path}: ${res.statusCode} ${res.body.slice(0, 300)}`);
      }
    }
  });

  test('unknown routes (404 not_found) and wrong methods (405) carry the envelope and X-Request-Id', async () => {
    const notFound = await call({ method: 'GET', url: '/v1/no-such-thing', headers: bearer(full.key) });
    assert.equal(notFound.statusCode, 404);
    const slash = await call({ method: 'GET', url: '/v1/me/', headers: bearer(full.key) });
    assert.equal(slash.statusCode, 404);
    for (const op of contract.ops) {
      const other = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'].find((m) => !contract.find(m, op.path.replace(/\{[^}]+\}/g, 'x')));
      if (!other) continue;
      const req = requestFor({ ...op, method: other, hasBody: other !== 'GET' && other !== 'DELETE' }, bearer(full.key));
      const res = await call(req);
      assert.equal(res.statusCode, 405, `${other} ${op.path}`);
      assert.ok(String(res.headers.allow).includes(op.method), `${other} ${op.path}: Allow ${res.headers.allow}`);
    }
  });

  test('a malformed URL answers 422 in the envelope with X-Request-Id', async () => {
    const res = await call({ method: 'GET', url: '/v1/me%', headers: bearer(full.key) });
    assert.equal(res.statusCode, 422);
  });

  test('with the database down: /readyz and secured operations answer 503 as documented, /healthz 200', async () => {
    // The app reaches the test database through a TCP proxy, which is then shut: the database is gone.
    const proxy = await tcpProxy(new URL(t.database.url));
    const viaProxy = new URL(t.database.url);
    viaProxy.port = String(proxy.port);
    const db = createDb({ connectionString: viaProxy.toString(), logger: pino({ level: 'silent' }), max: 2 });
    const down = await createTestApp({ database: { name: t.database.name, url: viaProxy.toString(), db } });
    try {
      assert.equal((await call({ method: 'GET', url: '/readyz' }, down.app)).statusCode, 200);
      await proxy.close();
      const health = await call({ method: 'GET', url: '/healthz' }, down.app);
      assert.equal(health.statusCode, 200);
      const ready = await call({ method: 'GET', url: '/readyz' }, down.app);
      assert.equal(ready.statusCode, 503);
      assert.equal(ready.json<{ error: { code: string } }>().error.code, 'service_unavailable');
      for (const op of contract.ops.filter((o) => o.secured)) {
        const res = await call(requestFor(op, bearer(full.key)), down.app);
        assert.equal(res.statusCode, 503, `${op.method} ${op.path}: ${res.body}`);
        assert.ok(Number(res.headers['retry-after']) >= 1, 'Retry-After on 503');
      }
    } finally {
      await proxy.close();
      await down.close();
      await db.close();
    }
  });
});
