// GET /v1/openapi.json: a valid OpenAPI 3.1 document that covers every route of the app, and the
// response checker that test/openapi-responses.test.ts holds real responses to (which it shows can
// fail).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { compileErrors, validate } from '@readme/openapi-parser';
import { createTestApp, type TestApp } from './helpers/app.js';
import { registeredRoutes, servedContract } from './helpers/openapi-app.js';
import { isObject, type Contract, type Json } from './helpers/openapi-contract.js';

let t: TestApp;
let doc: Json;
let contract: Contract;

before(async () => {
  t = await createTestApp();
  ({ doc, contract } = await servedContract(t.app));
});
after(() => t.close());

describe('GET /v1/openapi.json: the document', () => {
  test('is served without a key, with X-Request-Id, and the same document every time', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/v1/openapi.json' });
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers['content-type']), /^application\/json/);
    assert.match(String(res.headers['x-request-id']), /^[0-9a-f-]{36}$/);
    assert.deepEqual(res.json(), doc);
    contract.check('GET', '/v1/openapi.json', res);
  });

  test('passes a standard OpenAPI 3.1 validator', async () => {
    const result = await validate(structuredClone(doc) as Parameters<typeof validate>[0]);
    assert.ok(result.valid, result.valid ? '' : compileErrors(result));
    assert.equal(result.specification, 'OpenAPI');
    assert.deepEqual(result.warnings, []);
  });

  test('is OpenAPI 3.1.0 with the bearer security scheme and a server', () => {
    assert.equal(doc.openapi, '3.1.0');
    assert.ok(isObject(doc.info) && typeof doc.info.title === 'string' && typeof doc.info.version === 'string');
    const components = isObject(doc.components) ? doc.components : {};
    const schemes = isObject(components.securitySchemes) ? components.securitySchemes : {};
    assert.deepEqual(
      Object.fromEntries(Object.entries(schemes).map(([name, s]) => [name, isObject(s) ? { type: s.type, scheme: s.scheme } : s])),
      { bearerAuth: { type: 'http', scheme: 'bearer' } },
    );
    assert.ok(Array.isArray(doc.servers) && doc.servers.length > 0);
    assert.deepEqual(doc.servers[0], { url: t.config.publicBaseUrl });
  });

  test('documents every /v1 route the app registered, and no route the app lacks', () => {
    const routes = registeredRoutes(t.app);
    const inApp = routes.map((r) => `${r.method} ${r.path}`).sort();
    const inDoc = contract.ops.map((o) => `${o.method} ${o.path}`).sort();
    const v1 = inApp.filter((r) => r.split(' ')[1]?.startsWith('/v1/'));
    assert.ok(v1.length >= 3, `too few /v1 routes found: ${JSON.stringify(routes)}`);
    assert.deepEqual(
      v1.filter((r) => !inDoc.includes(r)),
      [],
      'routes under /v1 missing from the document',
    );
    assert.deepEqual(
      inDoc.filter((r) => !inApp.includes(r)),
      [],
      'documented operations the app does not have',
    );
    // Outside /v1 only the probes are API; storage URLs and the like need not be documented.
    for (const want of ['GET /v1/me', 'GET /v1/tools', 'GET /v1/openapi.json', 'GET /healthz', 'GET /readyz']) {
      assert.ok(inDoc.includes(want), `${want} missing from the document`);
    }
  });

  test('every /v1 operation needs the bearer key, except the document itself', () => {
    for (const op of contract.ops) {
      if (!op.path.startsWith('/v1/')) continue;
      const expected = !(op.method === 'GET' && op.path === '/v1/openapi.json');
      assert.equal(op.secured, expected, `${op.method} ${op.path}: security`);
      if (op.secured) assert.deepEqual(op.op.security, [{ bearerAuth: [] }], `${op.method} ${op.path}`);
    }
  });

  test('operation ids are unique and every path parameter is declared', () => {
    const ids = contract.ops.map((o) => o.op.operationId);
    for (const id of ids) assert.equal(typeof id, 'string');
    assert.equal(new Set(ids).size, ids.length);
    for (const op of contract.ops) {
      const declared = (Array.isArray(op.op.parameters) ? op.op.parameters : [])
        .filter((p): p is Json => isObject(p) && p.in === 'path')
        .map((p) => p.name);
      assert.deepEqual(declared.sort(), [...op.pathParams].sort(), `${op.method} ${op.path}`);
    }
  });

  test('every response of every operation documents X-Request-Id', () => {
    const headers = isObject(doc.components) && isObject(doc.components.headers) ? doc.components.headers : {};
    for (const op of contract.ops) {
      const responses = isObject(op.op.responses) ? op.op.responses : {};
      assert.ok(Object.keys(responses).length > 0, `${op.method} ${op.path}: no responses`);
      for (const [status, r] of Object.entries(responses)) {
        assert.ok(isObject(r) && typeof r.description === 'string', `${op.method} ${op.path} ${status}: description`);
        const h = isObject(r.headers) ? r.headers['X-Request-Id'] : undefined;
        assert.ok(isObject(h), `${op.method} ${op.path} ${status}: no X-Request-Id header`);
        const target = typeof h.$ref === 'string' ? headers[h.$ref.replace('#/components/headers/', '')] : h;
        assert.ok(isObject(target) && isObject(target.schema) && target.schema.type === 'string', `${op.method} ${op.path} ${status}`);
      }
    }
  });

  test('secured operations document 401, 403 and 429 (with Retry-After) and the RateLimit headers', () => {
    const secured = contract.ops.filter((o) => o.secured);
    assert.ok(secured.length >= 2);
    for (const op of secured) {
      const responses = isObject(op.op.responses) ? op.op.responses : {};
      for (const status of ['401', '403', '429']) {
        const r = responses[status];
        assert.ok(isObject(r), `${op.method} ${op.path}: no ${status} response`);
        assert.ok(isObject(r.content) && isObject(r.content['application/json']), `${op.method} ${op.path} ${status}: content`);
        assert.deepEqual(r.content['application/json'].schema, { $ref: '#/components/schemas/ErrorResponse' });
      }
      const r429 = responses['429'];
      assert.ok(isObject(r429) && isObject(r429.headers) && r429.headers['Retry-After'], `${op.method} ${op.path}: 429 Retry-After`);
      const success = Object.entries(responses).filter(([s]) => s.startsWith('2'));
      assert.ok(success.length > 0, `${op.method} ${op.path}: no success response`);
      for (const [status, r] of [...success, ['429', r429] as const]) {
        const h = isObject(r) && isObject(r.headers) ? r.headers : {};
        for (const name of ['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset']) {
          assert.ok(h[name], `${op.method} ${op.path} ${status}: ${name} not documented`);
        }
      }
    }
  });

  test('error responses use the ErrorResponse component, which is the spec envelope', () => {
    const schemas = isObject(doc.components) && isObject(doc.components.schemas) ? doc.components.schemas : {};
    const env = schemas.ErrorResponse;
    assert.ok(isObject(env) && isObject(env.properties) && isObject(env.properties.error));
    const inner = env.properties.error;
    assert.deepEqual([...(Array.isArray(inner.required) ? inner.required : [])].sort(), ['code', 'details', 'errors', 'message', 'request_id']);
    for (const op of contract.ops) {
      const responses = isObject(op.op.responses) ? op.op.responses : {};
      for (const [status, r] of Object.entries(responses)) {
        if (Number(status) < 400) continue;
        assert.ok(isObject(r) && isObject(r.content) && isObject(r.content['application/json']));
        assert.deepEqual(r.content['application/json'].schema, { $ref: '#/components/schemas/ErrorResponse' }, `${op.method} ${op.path} ${status}`);
      }
    }
  });
});

describe('the response checker can fail', () => {
  const base = { headers: { 'x-request-id': randomUUID(), 'content-type': 'application/json; charset=utf-8' } };
  test('a body that does not match the schema', () => {
    assert.throws(() => contract.check('GET', '/healthz', { ...base, statusCode: 200, body: '{"status":1}' }), /does not match/);
    assert.throws(() => contract.check('GET', '/healthz', { ...base, statusCode: 200, body: '{"status":"ok","extra":true}' }), /does not match/);
  });
  test('an undocumented status', () => {
    assert.throws(() => contract.check('GET', '/healthz', { ...base, statusCode: 418, body: '{}' }), /not documented/);
  });
  test('a missing X-Request-Id, an unlisted service header, an unknown route answering 200', () => {
    assert.throws(() => contract.check('GET', '/healthz', { statusCode: 200, headers: {}, body: '{"status":"ok"}' }), /X-Request-Id/);
    const withRetry = { ...base.headers, 'retry-after': '5' };
    assert.throws(() => contract.check('GET', '/healthz', { statusCode: 200, headers: withRetry, body: '{"status":"ok"}' }), /does not list/);
    assert.throws(() => contract.check('GET', '/v1/nope', { ...base, statusCode: 200, body: '{}' }), /no documented operation/);
  });
});
