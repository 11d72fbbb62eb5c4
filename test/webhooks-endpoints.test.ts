import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { ConfigError, loadConfig } from '../src/config/config.js';
import { addMember, updateMember } from '../src/teams/repository.js';
import { listAttempts } from '../src/webhooks/admin.js';
import { answeredWith, createTestApp, type TestApp } from './helpers/app.js';
import { createTestDatabase, type TestDatabase } from './helpers/db.js';
import { assertError } from './helpers/error-envelope.js';
import { makeTeam } from './helpers/fixtures.js';
import { closeReceivers, fail500, Receiver, redirectTo } from './helpers/receiver.js';
import { assertFieldErrors } from './helpers/runs.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { testRegistry } from './helpers/test-tools.js';
import {
  ALL_EVENTS,
  assertSignedDelivery,
  createEndpoint,
  deliveriesOf,
  patchEndpoint,
  req,
  stopWebhookWorkers,
  UUID,
  webhookTeam,
  type EndpointJson,
  type Method,
} from './helpers/webhooks.js';

let database: TestDatabase;
/** Private networks not allowed, as in production. */
let pub: TestServer;
/** TOOLRUN_ALLOW_PRIVATE_NETWORK=1: loopback receivers are accepted. */
let priv: TestApp;

before(async () => {
  database = await createTestDatabase();
  pub = await startTestServer({ database, tools: testRegistry() });
  priv = await createTestApp({ database, env: { TOOLRUN_ALLOW_PRIVATE_NETWORK: '1' } });
});
after(async () => {
  await stopWebhookWorkers();
  await closeReceivers();
  await priv.close();
  await pub.close();
  await database.db.close();
});

const PUBLIC_URL = 'https://93.184.215.14/hooks';
const SECRET = /^whsec_[A-Za-z0-9_-]{32,}$/;

function operations(id: string): [Method, string, unknown][] {
  return [
    ['GET', '/v1/webhook-endpoints', undefined],
    ['POST', '/v1/webhook-endpoints', { url: PUBLIC_URL }],
    ['PATCH', `/v1/webhook-endpoints/${id}`, { enabled: false }],
    ['DELETE', `/v1/webhook-endpoints/${id}`, undefined],
    ['POST', `/v1/webhook-endpoints/${id}/test`, undefined],
  ];
}

describe('webhook endpoints: who may manage them', () => {
  test('every operation needs the webhooks scope', async () => {
    const team = await makeTeam(database.db, { scopes: ['read', 'run'] });
    for (const [method, url, body] of operations(randomUUID())) {
      const e = assertError(await req(pub, team.key, method, url, body), 403, 'insufficient_scope');
      assert.deepEqual(e.details, { required_scope: 'webhooks' }, `${method} ${url}`);
    }
    assertError(await req(pub, null, 'GET', '/v1/webhook-endpoints'), 401, 'api_key_required');
  });

  test("a key whose member is demoted to member is refused with insufficient_role; admin is enough", async () => {
    const team = await webhookTeam(database.db);
    const { signing_secret: _secret, ...created } = await createEndpoint(pub, team.key, PUBLIC_URL);
    // A team keeps at least one owner: another one takes over before the key's owner is demoted.
    await addMember(database.db, { teamId: team.teamId, email: `second-owner-${team.teamId}@example.test`, role: 'owner' });
    await updateMember(database.db, team.memberId, 'member');
    // Changed around the app, as the operator CLI would: the app hears of it from PostgreSQL.
    await answeredWith(403, () => req(pub, team.key, 'GET', '/v1/webhook-endpoints'));
    for (const [method, url, body] of operations(created.id)) {
      const e = assertError(await req(pub, team.key, method, url, body), 403, 'insufficient_role');
      assert.equal(e.details?.required_role, 'admin', `${method} ${url}`);
    }
    // Nothing was changed by the refused calls.
    await updateMember(database.db, team.memberId, 'admin');
    const list = await answeredWith(200, () => req(pub, team.key, 'GET', '/v1/webhook-endpoints'));
    assert.equal(list.statusCode, 200, list.body);
    assert.deepEqual(list.json<{ data: EndpointJson[] }>().data, [created]);
  });
});

describe('webhook endpoints: create, list, update, delete', () => {
  test('create answers 201 with a secret shown only there; events default to all three', async () => {
    const team = await webhookTeam(database.db);
    const omitted = await req(pub, team.key, 'POST', '/v1/webhook-endpoints', { url: PUBLIC_URL });
    assert.equal(omitted.statusCode, 201, omitted.body);
    const a = omitted.json<EndpointJson>();
    assert.deepEqual(Object.keys(a).sort(), ['created_at', 'enabled', 'events', 'id', 'object', 'signing_secret', 'url']);
    assert.equal(a.object, 'webhook_endpoint');
    assert.match(a.id, UUID);
    assert.equal(a.url, PUBLIC_URL);
    assert.deepEqual(a.events, ALL_EVENTS);
    assert.equal(a.enabled, true);
    assert.ok(Math.abs(Date.parse(a.created_at) - Date.now()) < 60_000);
    assert.match(String(a.signing_secret), SECRET);

    const b = await createEndpoint(pub, team.key, PUBLIC_URL, null);
    assert.deepEqual(b.events, ALL_EVENTS);
    const c = await createEndpoint(pub, team.key, PUBLIC_URL, ['run.failed']);
    assert.deepEqual(c.events, ['run.failed']);
    assert.equal(new Set([a.signing_secret, b.signing_secret, c.signing_secret]).size, 3);

    const list = await req(pub, team.key, 'GET', '/v1/webhook-endpoints');
    assert.equal(list.statusCode, 200);
    const body = list.json<{ object: string; data: EndpointJson[] }>();
    assert.equal(body.object, 'list');
    assert.deepEqual(body.data.map((e) => e.id), [a.id, b.id, c.id]);
    for (const e of body.data) assert.deepEqual(Object.keys(e).sort(), ['created_at', 'enabled', 'events', 'id', 'object', 'url']);
    const patched = await req(pub, team.key, 'PATCH', `/v1/webhook-endpoints/${a.id}`, { events: ['run.succeeded'] });
    for (const secret of [a.signing_secret, b.signing_secret, c.signing_secret]) {
      assert.ok(!list.body.includes(String(secret)) && !patched.body.includes(String(secret)), 'the secret is shown only at creation');
    }
    // Another team sees none of them.
    const other = await webhookTeam(database.db);
    assert.deepEqual((await req(pub, other.key, 'GET', '/v1/webhook-endpoints')).json<{ data: unknown[] }>().data, []);
  });

  test('events: duplicates, unknown names, empty lists and wrong types are 422 on the entry at fault', async () => {
    const team = await webhookTeam(database.db);
    const post = (body: unknown) => req(pub, team.key, 'POST', '/v1/webhook-endpoints', body);
    assertFieldErrors(await post({ url: PUBLIC_URL, events: ['run.failed', 'run.failed'] }), [{ loc: ['body', 'events'], code: 'duplicate' }]);
    assertFieldErrors(await post({ url: PUBLIC_URL, events: ['run.failed', 'run.started'] }), [{ loc: ['body', 'events'], code: 'invalid_choice' }]);
    assertFieldErrors(await post({ url: PUBLIC_URL, events: ['ping'] }), [{ loc: ['body', 'events'], code: 'invalid_choice' }]);
    assertFieldErrors(await post({ url: PUBLIC_URL, events: [] }), [{ loc: ['body', 'events'], code: 'too_few' }]);
    assertFieldErrors(await post({ url: PUBLIC_URL, events: 'run.failed' }), [{ loc: ['body', 'events'], code: 'wrong_type' }]);
    assertFieldErrors(await post({ events: null }), [{ loc: ['body', 'url'], code: 'missing' }]);
    assertFieldErrors(await post({ url: PUBLIC_URL, secret: 'x' }), [{ loc: ['body', 'secret'], code: 'unknown_field' }]);
    const e = await createEndpoint(pub, team.key, PUBLIC_URL);
    const patch = (body: unknown) => req(pub, team.key, 'PATCH', `/v1/webhook-endpoints/${e.id}`, body);
    assertFieldErrors(await patch({ events: ['run.canceled', 'run.canceled'] }), [{ loc: ['body', 'events'], code: 'duplicate' }]);
    assertFieldErrors(await patch({ events: ['nope'], enabled: 'no' }), [
      { loc: ['body', 'events'], code: 'invalid_choice' },
      { loc: ['body', 'enabled'], code: 'wrong_type' },
    ]);
    assertFieldErrors(await patch({ url: PUBLIC_URL }), [{ loc: ['body', 'url'], code: 'unknown_field' }]);
    // urn:uuid:... passes Ajv's uuid format but not PostgreSQL's uuid type.
    for (const bad of ['not-a-uuid', `urn:uuid:${e.id}`, `${e.id}0`]) {
      for (const [method, url, body] of operations(bad).slice(2)) {
        assertFieldErrors(await req(pub, team.key, method, url, body), [{ loc: ['path', 'endpoint_id'], code: 'invalid_format' }]);
      }
    }
    const list = await req(pub, team.key, 'GET', '/v1/webhook-endpoints');
    assert.deepEqual(list.json<{ data: EndpointJson[] }>().data.map((x) => x.events), [ALL_EVENTS], 'only the valid create went through');
  });

  test('url: https only, at most 2048 characters, public hosts unless private networks are allowed', async () => {
    const team = await webhookTeam(database.db);
    const post = (t: TestApp, url: unknown) => req(t, team.key, 'POST', '/v1/webhook-endpoints', { url });
    const malformed = ['not a url', '/relative', 'https://user:pw@93.184.215.14/', 'https://93.184.215.14/a\nb', ' https://93.184.215.14/'];
    for (const url of ['http://93.184.215.14/hooks', 'ftp://93.184.215.14/x', 'http://127.0.0.1:1/', ...malformed]) {
      assertFieldErrors(await post(pub, url), [{ loc: ['body', 'url'], code: 'url_not_https' }]);
    }
    assertFieldErrors(await post(priv, 'http://127.0.0.1:1/'), [{ loc: ['body', 'url'], code: 'url_not_https' }]);
    // NUL is refused for every string of every body, before this check (test/inputs-strings.test.ts).
    assertFieldErrors(await post(pub, 'https://93.184.215.14/a\u0000b'), [{ loc: ['body', 'url'], code: 'invalid_character' }]);
    const longest = `https://93.184.215.14/${'a'.repeat(2048 - 'https://93.184.215.14/'.length)}`;
    assert.equal(longest.length, 2048);
    assert.equal((await post(pub, longest)).statusCode, 201);
    assertFieldErrors(await post(pub, `${longest}b`), [{ loc: ['body', 'url'], code: 'url_too_long' }]);
    assertFieldErrors(await post(pub, `http://${'a'.repeat(2100)}`), [{ loc: ['body', 'url'], code: 'url_too_long' }]);
    const internal = [
      'https://127.0.0.1/',
      'https://127.1.2.3:8443/x',
      'https://10.1.2.3/',
      'https://172.16.5.4/',
      'https://192.168.0.1/',
      'https://169.254.169.254/latest/meta-data/',
      'https://100.64.0.1/',
      'https://0.0.0.0/',
      'https://[::1]/',
      'https://[fe80::1]/',
      'https://[fc00::1]/',
      'https://[::ffff:127.0.0.1]/',
      'https://[::ffff:a9fe:a9fe]/',
      'https://localhost/',
      'https://LOCALHOST.:8443/',
      'https://does-not-exist.invalid/',
    ];
    for (const url of internal) {
      const res = await post(pub, url);
      assertFieldErrors(res, [{ loc: ['body', 'url'], code: 'url_not_public' }]);
    }
    for (const url of ['https://127.0.0.1:1/', 'https://localhost:1/x', 'https://[::1]:1/']) {
      const res = await post(priv, url);
      assert.equal(res.statusCode, 201, `${url} with private networks allowed: ${res.body}`);
    }
  });

  test('at most 10 endpoints per team, also under concurrent creates; deleted ones do not count', async () => {
    const team = await webhookTeam(database.db);
    const created: EndpointJson[] = [];
    for (let i = 0; i < 10; i++) created.push(await createEndpoint(pub, team.key, `${PUBLIC_URL}/${i}`));
    const e = assertError(await req(pub, team.key, 'POST', '/v1/webhook-endpoints', { url: PUBLIC_URL }), 409, 'webhook_endpoint_limit_reached');
    assert.equal(e.details?.limit, 10);
    const del = await req(pub, team.key, 'DELETE', `/v1/webhook-endpoints/${created[0]!.id}`);
    assert.equal(del.statusCode, 200);
    assert.equal((await req(pub, team.key, 'POST', '/v1/webhook-endpoints', { url: PUBLIC_URL })).statusCode, 201);

    const racer = await webhookTeam(database.db);
    const answers = await Promise.all(Array.from({ length: 16 }, () => req(pub, racer.key, 'POST', '/v1/webhook-endpoints', { url: PUBLIC_URL })));
    const codes = answers.map((a) => a.statusCode).sort();
    assert.deepEqual(codes, [...Array(10).fill(201), ...Array(6).fill(409)]);
    for (const a of answers.filter((x) => x.statusCode === 409)) assertError(a, 409, 'webhook_endpoint_limit_reached');
    const list = await req(pub, racer.key, 'GET', '/v1/webhook-endpoints');
    assert.equal(list.json<{ data: unknown[] }>().data.length, 10);
  });

  test("unknown or another team's endpoint: 404 webhook_endpoint_not_found, and nothing changes", async () => {
    const team = await webhookTeam(database.db);
    const other = await webhookTeam(database.db);
    const theirs = await createEndpoint(pub, other.key, PUBLIC_URL);
    for (const id of [randomUUID(), theirs.id]) {
      for (const [method, url, body] of operations(id).slice(2)) {
        const e = assertError(await req(pub, team.key, method, url, body), 404, 'webhook_endpoint_not_found');
        assert.ok(e.message.includes(id), e.message);
      }
    }
    const list = await req(pub, other.key, 'GET', '/v1/webhook-endpoints');
    assert.deepEqual(list.json<{ data: EndpointJson[] }>().data.map((x) => [x.id, x.enabled]), [[theirs.id, true]]);
  });

  test('PATCH with {} or no body changes nothing; enabled and events change what they name', async () => {
    const team = await webhookTeam(database.db);
    const { signing_secret: _secret, ...e } = await createEndpoint(pub, team.key, PUBLIC_URL, ['run.failed', 'run.succeeded']);
    const url = `/v1/webhook-endpoints/${e.id}`;
    assert.deepEqual(await patchEndpoint(pub, team.key, e.id, {}), e);
    const bare = await pub.app.inject({ method: 'PATCH', url, headers: { authorization: `Bearer ${team.key}` } });
    assert.equal(bare.statusCode, 200, bare.body);
    assert.deepEqual(bare.json(), e);
    assert.deepEqual(await patchEndpoint(pub, team.key, e.id, ''), e, 'an empty JSON body is no change');
    assert.deepEqual(await patchEndpoint(pub, team.key, e.id, { enabled: null, events: null }), e);
    assert.deepEqual(await patchEndpoint(pub, team.key, e.id, { enabled: false }), { ...e, enabled: false });
    assert.deepEqual(await patchEndpoint(pub, team.key, e.id, { events: ['run.canceled'] }), { ...e, enabled: false, events: ['run.canceled'] });
    assert.deepEqual(await patchEndpoint(pub, team.key, e.id, { enabled: true, events: ALL_EVENTS }), { ...e, events: ALL_EVENTS });
  });

  test('DELETE answers the deleted object, then the endpoint is gone', async () => {
    const team = await webhookTeam(database.db);
    const e = await createEndpoint(pub, team.key, PUBLIC_URL);
    const keep = await createEndpoint(pub, team.key, PUBLIC_URL);
    const del = await req(pub, team.key, 'DELETE', `/v1/webhook-endpoints/${e.id}`);
    assert.equal(del.statusCode, 200, del.body);
    assert.deepEqual(del.json(), { object: 'deleted', id: e.id, deleted: true });
    for (const [method, url, body] of operations(e.id).slice(2)) {
      assertError(await req(pub, team.key, method, url, body), 404, 'webhook_endpoint_not_found');
    }
    const list = await req(pub, team.key, 'GET', '/v1/webhook-endpoints');
    assert.deepEqual(list.json<{ data: EndpointJson[] }>().data.map((x) => x.id), [keep.id]);
  });
});

describe('webhook endpoints: test ping', () => {
  test('a signed ping is sent now, to an enabled and to a paused endpoint', async () => {
    const team = await webhookTeam(priv.database.db);
    const r = await Receiver.start();
    const e = await createEndpoint(priv, team.key, r.url('/ping'), ['run.failed']);
    for (const paused of [false, true]) {
      if (paused) await patchEndpoint(priv, team.key, e.id, { enabled: false });
      const res = await req(priv, team.key, 'POST', `/v1/webhook-endpoints/${e.id}/test`);
      assert.equal(res.statusCode, 200, res.body);
      const out = res.json<{ object: string; delivery_id: string; delivered: boolean; response_code: number | null; duration_ms: number; error: string | null }>();
      assert.deepEqual(Object.keys(out).sort(), ['delivered', 'delivery_id', 'duration_ms', 'error', 'object', 'response_code']);
      const got = r.requests.at(-1);
      assert.ok(got && r.requests.length === (paused ? 2 : 1), 'the ping arrived before the answer');
      assert.equal(got.path, '/ping');
      const { event, deliveryId } = assertSignedDelivery(got, e.signing_secret, 'ping');
      assert.equal(out.object, 'webhook_test');
      assert.equal(out.delivery_id, deliveryId);
      assert.equal(out.delivered, true);
      assert.equal(out.response_code, 204);
      assert.equal(out.error, null);
      assert.ok(Number.isInteger(out.duration_ms) && out.duration_ms >= 0 && out.duration_ms < 10_000);
      assert.deepEqual(event.data, { webhook_endpoint_id: e.id });
    }
    const [first, second] = r.requests;
    assert.notEqual(first?.headers['service-delivery'], second?.headers['service-delivery']);
    const attempts = await listAttempts(priv.database.db.pool, e.id);
    assert.deepEqual(attempts.map((a) => [a.event_type, a.status_code, a.delivery_id]), [
      ['ping', 204, first?.headers['service-delivery']],
      ['ping', 204, second?.headers['service-delivery']],
    ]);
    assert.deepEqual(await deliveriesOf(priv.database.db, e.id), [], 'a ping is no delivery to retry');
  });

  test('a ping answered 500, 302 or not at all reports delivered false and why', async () => {
    const team = await webhookTeam(priv.database.db);
    const target = await Receiver.start();
    const r = await Receiver.start();
    r.program(fail500, redirectTo(target.url()), { status: 200, body: 'ok\u0000' });
    const e = await createEndpoint(priv, team.key, r.url());
    const ping = async () => {
      const res = await req(priv, team.key, 'POST', `/v1/webhook-endpoints/${e.id}/test`);
      assert.equal(res.statusCode, 200, res.body);
      return res.json<{ delivery_id: string; delivered: boolean; response_code: number | null; error: string | null }>();
    };
    const failed = await ping();
    assert.deepEqual([failed.delivered, failed.response_code], [false, 500]);
    assert.match(String(failed.error), /500/);
    const redirected = await ping();
    assert.deepEqual([redirected.delivered, redirected.response_code], [false, 302]);
    assert.match(String(redirected.error), /redirect/);
    assert.equal(target.requests.length, 0, 'the redirect was not followed');
    const nul = await ping();
    assert.deepEqual([nul.delivered, nul.response_code, nul.error], [true, 200, null], 'a NUL in the answer is recorded, not a 500');
    await r.down();
    const down = await ping();
    assert.deepEqual([down.delivered, down.response_code], [false, null]);
    assert.match(String(down.error), /ECONNREFUSED|connection/);
    assert.equal(r.requests.length, 3);
    assert.deepEqual(r.requests.map((x) => x.headers['service-delivery']), [failed.delivery_id, redirected.delivery_id, nul.delivery_id]);
    const attempts = await listAttempts(priv.database.db.pool, e.id);
    assert.deepEqual(attempts.map((a) => [a.delivery_id, a.status_code, a.response_excerpt]), [
      [failed.delivery_id, 500, 'boom'],
      [redirected.delivery_id, 302, null],
      [nul.delivery_id, 200, 'ok\uFFFD'],
      [down.delivery_id, null, null],
    ]);
  });
});

describe('webhook settings', () => {
  test('the shortened retry schedule and private networks are refused in production', () => {
    const base = { TOOLRUN_DATA_DIR: '/tmp/unused' };
    assert.deepEqual(loadConfig(base).webhooks.retryDelaysSeconds, [60, 300, 1800, 7200, 43200]);
    assert.deepEqual(loadConfig({ ...base, TOOLRUN_WEBHOOK_RETRY_DELAYS: '1, 2,3' }).webhooks.retryDelaysSeconds, [1, 2, 3]);
    assert.throws(() => loadConfig({ ...base, TOOLRUN_WEBHOOK_RETRY_DELAYS: '1,x' }), /TOOLRUN_WEBHOOK_RETRY_DELAYS/);
    const production = { ...base, TOOLRUN_ENV: 'production' };
    assert.throws(() => loadConfig({ ...production, TOOLRUN_WEBHOOK_RETRY_DELAYS: '1' }), (err: unknown) => err instanceof ConfigError && err.variable === 'TOOLRUN_WEBHOOK_RETRY_DELAYS');
    assert.throws(() => loadConfig({ ...production, TOOLRUN_ALLOW_PRIVATE_NETWORK: '1' }), (err: unknown) => err instanceof ConfigError && err.variable === 'TOOLRUN_ALLOW_PRIVATE_NETWORK');
    assert.equal(loadConfig(base).webhooks.timeoutMs, 10_000);
  });
});
