// GET /v1/openapi.json: a valid OpenAPI 3.1 document that covers every route of the app, and that
// real responses (successes and errors, made through the app) match, status by status.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { compileErrors, validate } from '@readme/openapi-parser';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import pino from 'pino';
import { revokeApiKey } from '../src/auth/key-admin.js';
import { createDb } from '../src/db/pool.js';
import { updateTeam } from '../src/teams/repository.js';
import { createTestApp, type TestApp } from './helpers/app.js';
import { bearer, makeTeam, type TeamFixture } from './helpers/fixtures.js';
import { Contract, isObject, type Json, type Operation } from './helpers/openapi-contract.js';

interface Route {
  method: string;
  /** OpenAPI form: /v1/runs/{run_id} */
  path: string;
}

/**
 * The routes Fastify registered, read from its radix tree (each line a segment under its parent;
 * HEAD twins of GET routes left out). Every route read is confirmed with app.hasRoute.
 */
function registeredRoutes(app: FastifyInstance): Route[] {
  const tree = app.printRoutes({ commonPrefix: true });
  const stack: string[] = [];
  const found = new Map<string, Set<string>>();
  for (const line of tree.split('\n')) {
    if (!line.trim()) continue;
    const m = /^((?:│ {3}| {4})*)(?:├── |└── )(\S+?)(?: \(([A-Z, ]+)\))?$/.exec(line);
    assert.ok(m, `unexpected line in app.printRoutes(): ${JSON.stringify(line)}`);
    const depth = (m[1] ?? '').length / 4;
    const url = (depth > 0 ? (stack[depth - 1] ?? '') : '') + (m[2] ?? '');
    stack[depth] = url;
    stack.length = depth + 1;
    if (!m[3]) continue;
    const methods = found.get(url) ?? new Set<string>();
    for (const method of m[3].split(',')) methods.add(method.trim());
    found.set(url, methods);
  }
  const routes: Route[] = [];
  for (const [url, methods] of found) {
    for (const method of methods) {
      assert.ok(app.hasRoute({ method: method as 'GET', url }), `parsed a route Fastify does not know: ${method} ${url}`);
      if (method === 'HEAD' && methods.has('GET')) continue;
      routes.push({ method, path: url.replace(/:([A-Za-z0-9_]+)/g, '{$1}') });
    }
  }
  return routes;
}

/** A TCP proxy to target; close() refuses new connections and cuts the open ones. */
async function tcpProxy(target: URL): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const track = (s: net.Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => s.destroy());
  };
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port), target.hostname);
    track(client);
    track(upstream);
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  assert.ok(address && typeof address === 'object');
  let closed: Promise<void> | null = null;
  return {
    port: address.port,
    close() {
      closed ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
      });
      return closed;
    },
  };
}

let t: TestApp;
let doc: Json;
let contract: Contract;
let full: TeamFixture;

before(async () => {
  t = await createTestApp();
  full = await makeTeam(t.database.db, { scopes: ['read', 'run', 'webhooks'], rate: 300, sparks: 500 });
  const res = await t.app.inject({ method: 'GET', url: '/v1/openapi.json' });
  assert.equal(res.statusCode, 200);
  doc = res.json<Json>();
  contract = new Contract(doc);
});
after(() => t.close());

/** The methods inject takes (the document's operations use a few of them). */
type InjectMethod = NonNullable<InjectOptions['method']>;

/** A request for an operation: made-up ids for path parameters, an empty JSON object as body. */
function requestFor(op: Operation, headers: Record<string, string>): InjectOptions & { method: InjectMethod; url: string } {
  let url = op.path;
  for (const p of op.pathParams) url = url.replace(`{${p}}`, randomUUID());
  const req: InjectOptions & { method: InjectMethod; url: string } = { method: op.method as InjectMethod, url, headers: { ...headers } };
  if (op.hasBody) {
    req.headers = { ...headers, 'content-type': 'application/json' };
    req.payload = '{}';
  }
  return req;
}

/** Operations answering server-sent events: their 200 never ends, so only its first bytes are read. */
function streams(method: string, url: string): boolean {
  const ok = contract.find(method, url)?.op.responses;
  return isObject(ok) && isObject(ok['200']) && isObject(ok['200'].content) && isObject(ok['200'].content['text/event-stream']);
}

async function firstBytes(req: InjectOptions & { method: InjectMethod; url: string }, app: FastifyInstance): Promise<LightMyRequestResponse> {
  const res = await app.inject({ ...req, payloadAsStream: true });
  const stream = res.stream();
  let body = '';
  if (res.statusCode === 200) {
    body = await new Promise<string>((resolve) => {
      stream.once('data', (c: Buffer) => resolve(c.toString('utf8')));
      stream.once('end', () => resolve(''));
    });
    stream.destroy();
  } else {
    for await (const c of stream) body += (c as Buffer).toString('utf8');
  }
  return Object.assign(Object.create(res) as LightMyRequestResponse, { body, payload: body, json: <T>() => JSON.parse(body) as T });
}

async function call(req: InjectOptions & { method: InjectMethod; url: string }, app: FastifyInstance = t.app): Promise<LightMyRequestResponse> {
  const res = streams(req.method, req.url) ? await firstBytes(req, app) : await app.inject(req);
  contract.check(req.method, req.url, res);
  return res;
}

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
