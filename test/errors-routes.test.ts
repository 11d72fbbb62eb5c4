// Errors of the request's route and of the service itself, through the real app and error
// handler: unknown routes (404 not_found) and wrong methods (405 method_not_allowed, with Allow)
// decided before any body is read, a server-made X-Request-Id on every answer, a handler's
// failure as a 500 internal_error that leaks nothing but is logged under its request id, and a
// battery of malformed requests that each get a 4xx envelope, never a 5xx.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { InjectOptions } from 'fastify';
import { assertError, assertRequestId } from './helpers/error-envelope.js';
import { BODY_LIMIT, GOOD_BODY, JSON_HEADERS, startErrorsApp, t, team } from './helpers/errors-app.js';
import { bearer } from './helpers/fixtures.js';
import { SECRET_FAILURE } from './helpers/test-routes.js';

before(startErrorsApp);
after(() => t.close());

describe('routes the app does not have', () => {
  test('GET /v1/nope answers 404 not_found in the envelope, with X-Request-Id', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/v1/nope' });
    const error = assertError(res, 404, 'not_found');
    assert.equal(error.errors, null);
    assert.equal(error.details, null);
  });

  test('an unknown route needs no key and is 404 with or without one', async () => {
    assertError(await t.app.inject({ method: 'GET', url: '/v1/jobs' }), 404, 'not_found');
    assertError(await t.app.inject({ method: 'GET', url: '/v1/jobs', headers: bearer(team.key) }), 404, 'not_found');
    assertError(await t.app.inject({ method: 'DELETE', url: '/nothing/here' }), 404, 'not_found');
  });

  test('the 404 message does not echo the query string (it may carry secrets)', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/v1/nope?token=sekrit-value' });
    const error = assertError(res, 404, 'not_found');
    assert.doesNotMatch(error.message, /sekrit/);
  });

  test('a known path with the wrong method is 405 method_not_allowed with an Allow header', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/v1/me' });
    const error = assertError(res, 405, 'method_not_allowed');
    assert.equal(res.headers.allow, 'GET, HEAD');
    assert.deepEqual(error.details, { allowed_methods: ['GET', 'HEAD'] });

    const del = await t.app.inject({ method: 'DELETE', url: '/v1/tools', headers: bearer(team.key) });
    assertError(del, 405, 'method_not_allowed');
    assert.equal(del.headers.allow, 'GET, HEAD');

    const get = await t.app.inject({ method: 'GET', url: '/test/echo' });
    assertError(get, 405, 'method_not_allowed');
    assert.equal(get.headers.allow, 'POST');
  });

  test('405 also for a path with parameters, and 404 once the path itself does not match', async () => {
    const res = await t.app.inject({ method: 'DELETE', url: '/test/runs/7b0c6a7e-4a51-4b7e-9a3c-0d7c7f2b9c11' });
    assertError(res, 405, 'method_not_allowed');
    assert.equal(res.headers.allow, 'GET, HEAD');
    assertError(await t.app.inject({ method: 'GET', url: '/test/runs/a/b' }), 404, 'not_found');
    assertError(await t.app.inject({ method: 'GET', url: '/v1/me/' }), 404, 'not_found');
  });

  test(
    'the route decides before the body: 404 and 405 win over a malformed or oversized body',
    async () => {
      assertError(await t.app.inject({ method: 'POST', url: '/v1/nope', headers: JSON_HEADERS, payload: '{' }), 404, 'not_found');
      assertError(await t.app.inject({ method: 'POST', url: '/v1/me', headers: JSON_HEADERS, payload: '{' }), 405, 'method_not_allowed');
      const big = 'x'.repeat(BODY_LIMIT * 2);
      assertError(await t.app.inject({ method: 'POST', url: '/v1/nope', headers: JSON_HEADERS, payload: big }), 404, 'not_found');
      assertError(await t.app.inject({ method: 'PUT', url: '/v1/tools', headers: { 'content-type': 'application/xml' }, payload: '<a/>' }), 405, 'method_not_allowed');
    },
  );

  test('every response gets its own server-made request id; a client-sent one is not echoed', async () => {
    const a = await t.app.inject({ method: 'GET', url: '/v1/nope', headers: { 'x-request-id': 'client-chosen', 'request-id': 'client-chosen' } });
    const b = await t.app.inject({ method: 'GET', url: '/v1/nope' });
    const idA = assertRequestId(a);
    const idB = assertRequestId(b);
    assert.notEqual(idA, 'client-chosen');
    assert.notEqual(idA, idB);
    const ok = await t.app.inject({ method: 'GET', url: '/healthz' });
    assert.equal(ok.statusCode, 200);
    assertRequestId(ok);
  });
});

describe('failures inside the service', () => {
  test('a handler that throws a plain Error is 500 internal_error and does not leak the message', async () => {
    for (const res of [
      await t.app.inject({ method: 'GET', url: '/test/boom' }),
      await t.app.inject({ method: 'POST', url: '/test/boom', headers: JSON_HEADERS, payload: JSON.stringify(GOOD_BODY) }),
    ]) {
      const error = assertError(res, 500, 'internal_error');
      assert.equal(error.errors, null);
      assert.equal(error.details, null);
      assert.ok(!res.body.includes('hunter2'), res.body);
      assert.ok(!res.body.includes('db-internal'), res.body);
      assert.ok(!res.body.includes('TypeError'), res.body);
      assert.ok(!res.body.includes('at '), 'no stack trace');
      // The operator's log has the failure, under the same request id.
      const line = t.logs.lines.find((l) => l.includes(String(res.headers['x-request-id'])) && l.includes('request failed'));
      assert.ok(line, 'the failure is logged with its request id');
      assert.ok(line.includes(SECRET_FAILURE.slice(0, 20)));
    }
  });
});

describe('malformed requests never produce a 5xx', () => {
  test('a battery of malformed requests each get a 4xx envelope with X-Request-Id', async () => {
    const cases: { name: string; req: InjectOptions }[] = [
      { name: 'truncated JSON', req: { method: 'POST', url: '/test/echo', headers: JSON_HEADERS, payload: '{"a":' } },
      { name: 'deeply nested JSON', req: { method: 'POST', url: '/test/echo', headers: JSON_HEADERS, payload: '['.repeat(2000) + ']'.repeat(2000) } },
      { name: 'invalid UTF-8', req: { method: 'POST', url: '/test/echo', headers: JSON_HEADERS, payload: Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x7d]) } },
      { name: 'huge number', req: { method: 'POST', url: '/test/echo', headers: JSON_HEADERS, payload: '{"upload_id":"u","parts":[{"part_number":1e400,"etag":"e"}]}' } },
      { name: 'NUL in JSON string', req: { method: 'POST', url: '/test/echo', headers: JSON_HEADERS, payload: '{"upload_id":"\\u0000","parts":[],"x":1}' } },
      { name: 'body on a GET route', req: { method: 'GET', url: '/v1/nope', headers: JSON_HEADERS, payload: '{' } },
      { name: 'garbage Content-Type', req: { method: 'POST', url: '/test/echo', headers: { 'content-type': ';;;==' }, payload: '{}' } },
      { name: 'no body at all', req: { method: 'POST', url: '/test/echo' } },
      { name: 'overlong unknown path', req: { method: 'GET', url: `/v1/${'a'.repeat(20000)}` } },
      { name: 'encoded slash in uuid param', req: { method: 'GET', url: '/test/runs/..%2F..%2Fetc%2Fpasswd' } },
      { name: 'garbage Authorization', req: { method: 'GET', url: '/v1/me', headers: { authorization: `Bearer svc_test_${'\u00e9'.repeat(40)}` } } },
      { name: 'huge Authorization', req: { method: 'GET', url: '/v1/me', headers: { authorization: `Bearer svc_test_${'a'.repeat(8000)}` } } },
      { name: 'bad body on a key route with a key', req: { method: 'POST', url: '/test/runs', headers: { ...JSON_HEADERS, ...bearer(team.key) }, payload: '[' } },
    ];
    for (const c of cases) {
      const res = await t.app.inject(c.req);
      assert.ok(res.statusCode >= 400 && res.statusCode < 500, `${c.name}: ${res.statusCode} ${res.body.slice(0, 200)}`);
      const body = res.json<{ error: { request_id: string } }>();
      assert.equal(body.error.request_id, assertRequestId(res), c.name);
    }
  });

  test(
    'URLs Fastify cannot route (bad percent-encoding, overlong parameter) get the envelope and X-Request-Id',
    async () => {
      for (const url of ['/v1/%zz', '/test/runs/%E0%A4%A', `/test/runs/${'a'.repeat(500)}`]) {
        const res = await t.app.inject({ method: 'GET', url });
        assert.ok(res.statusCode >= 400 && res.statusCode < 500, `${url}: ${res.statusCode}`);
        const error = assertError(res, res.statusCode, res.json<{ error: { code: string } }>().error.code);
        assert.ok(['invalid_request', 'not_found'].includes(error.code), url);
      }
    },
  );
});
