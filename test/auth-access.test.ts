// API-key authentication on GET /v1/me and the routes behind it: what a valid key gets (its own
// team, the RateLimit headers, a request id; svc_live_ keys on a production app), how the
// Authorization header is read, and every refusal (401 api_key_required and invalid_api_key,
// 403 plan_upgrade_required and insufficient_scope), with the rules for making keys. The tool
// list: auth-tools.test.ts; the 25-key limit and secrecy of keys: auth-keys.test.ts.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createApiKey, listApiKeys, parseScopes, revokeApiKey } from '../src/auth/key-admin.js';
import { AdminError, createTeam, removeMember, updateMember, updateTeam } from '../src/teams/repository.js';
import { answeredWith, createTestApp, type TestApp } from './helpers/app.js';
import { authCalls, SESSION_JWT, startAuthApp, WELL_FORMED_UNKNOWN } from './helpers/auth.js';
import { assertError, assertRequestId } from './helpers/error-envelope.js';
import { bearer, makeTeam, type TeamFixture } from './helpers/fixtures.js';
import { testRoutes } from './helpers/test-routes.js';

let t: TestApp;
let prod: TestApp;
let team: TeamFixture;

before(async () => {
  ({ t, team } = await startAuthApp());
  // A second app on the same database, as a production deployment would run it.
  prod = await createTestApp({ env: { TOOLRUN_ENV: 'production' }, database: t.database, extraRoutes: testRoutes });
});
after(async () => {
  await prod.close();
  await t.close();
});

const { db, me, meWithAuthorization, addTo, newKey, activeKeyCount } = authCalls(() => t);

describe('happy path', () => {
  test('a valid key reaches GET /v1/me, with the RateLimit headers and a request id', async () => {
    const res = await me(team.key);
    assert.equal(res.statusCode, 200, res.body);
    const body = res.json<{ object: string; team: { id: string; plan: string }; api_key: { id: string; prefix: string; scopes: string[] }; sparks_available: number }>();
    assert.equal(body.object, 'me');
    assert.equal(body.team.id, team.teamId);
    assert.equal(body.team.plan, 'pro');
    assert.equal(body.api_key.id, team.keyId);
    assert.equal(body.api_key.prefix, team.key.slice(9, 17));
    assert.deepEqual(body.api_key.scopes, ['read', 'run']);
    assert.equal(body.sparks_available, 40);
    assert.equal(res.headers['ratelimit-limit'], '300');
    assert.match(String(res.headers['ratelimit-remaining']), /^\d+$/);
    assert.match(String(res.headers['ratelimit-reset']), /^\d+$/);
    assertRequestId(res);
  });

  test('the Bearer scheme is case-insensitive and surrounding whitespace is tolerated', async () => {
    for (const authorization of [`bearer ${team.key}`, `BEARER ${team.key}`, `Bearer   ${team.key}  `, `Bearer\t${team.key}`]) {
      const res = await meWithAuthorization(authorization);
      assert.equal(res.statusCode, 200, `${JSON.stringify(authorization)}: ${res.body}`);
    }
  });

  test('each key sees its own team', async () => {
    const other = await makeTeam(db(), { plan: 'team', sparks: 7 });
    const a = (await me(team.key)).json<{ team: { id: string } }>();
    const b = (await me(other.key)).json<{ team: { id: string; plan: string }; sparks_available: number }>();
    assert.equal(a.team.id, team.teamId);
    assert.equal(b.team.id, other.teamId);
    assert.equal(b.team.plan, 'team');
    assert.equal(b.sparks_available, 7);
  });

  test('a key whose member is demoted to member keeps working on /v1/me', async () => {
    const f = await makeTeam(db(), { role: 'admin' });
    await updateMember(db(), f.memberId, 'member');
    const res = await me(f.key);
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json<{ api_key: { id: string } }>().api_key.id, f.keyId);
    // ...but that member can no longer make keys.
    await assert.rejects(newKey(f.memberId), AdminError);
  });

  test('a key with the webhooks scope passes a webhooks route', async () => {
    const f = await makeTeam(db(), { scopes: ['read', 'run', 'webhooks'] });
    const res = await t.app.inject({ method: 'GET', url: '/test/webhooks-only', headers: bearer(f.key) });
    assert.equal(res.statusCode, 200, res.body);
  });

  test('a svc_live_ key works against a production app', async () => {
    const f = await makeTeam(db(), { envPrefix: 'svc_live_' });
    assert.match(f.key, /^svc_live_[A-Za-z0-9]{40}$/);
    const res = await me(f.key, prod);
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json<{ api_key: { id: string } }>().api_key.id, f.keyId);
  });

  test('/healthz, /readyz and /v1/openapi.json answer 200 without a key (and ignore a bad one)', async () => {
    for (const url of ['/healthz', '/readyz', '/v1/openapi.json']) {
      for (const headers of [{}, { authorization: 'Bearer svc_test_garbage' }, { authorization: `Bearer ${SESSION_JWT}` }]) {
        const res = await t.app.inject({ method: 'GET', url, headers });
        assert.equal(res.statusCode, 200, `${url}: ${res.body.slice(0, 200)}`);
        assertRequestId(res);
        assert.equal(res.headers['ratelimit-limit'], undefined, 'unauthenticated routes have no rate headers');
      }
    }
    assert.deepEqual((await t.app.inject({ method: 'GET', url: '/healthz' })).json(), { status: 'ok' });
    assert.deepEqual((await t.app.inject({ method: 'GET', url: '/readyz' })).json(), { status: 'ok' });
    assert.equal((await t.app.inject({ method: 'GET', url: '/v1/openapi.json' })).json<{ openapi: string }>().openapi, '3.1.0');
  });
});

describe('error cases', () => {
  test('no Authorization header -> 401 api_key_required', async () => {
    assertError(await me(null), 401, 'api_key_required');
    assertError(await t.app.inject({ method: 'GET', url: '/v1/tools' }), 401, 'api_key_required');
  });

  test('a session token (Bearer, not svc_) -> 401 api_key_required', async () => {
    assertError(await meWithAuthorization(`Bearer ${SESSION_JWT}`), 401, 'api_key_required');
    assertError(await meWithAuthorization('Bearer sess_01HZX3J5Q8K4W2'), 401, 'api_key_required');
  });

  test('another scheme, or an empty Bearer -> 401 api_key_required', async () => {
    for (const authorization of [
      `Basic ${Buffer.from('owner@example.test:password').toString('base64')}`,
      `Basic ${Buffer.from(`${team.key}:`).toString('base64')}`,
      `Token ${team.key}`,
      team.key,
      'Bearer',
      'Bearer    ',
      '',
    ]) {
      assertError(await meWithAuthorization(authorization), 401, 'api_key_required');
    }
  });

  test('a malformed svc_ key -> 401 invalid_api_key', async () => {
    const valid = team.key;
    const malformed = [
      'svc_test_',
      'svc_test_short',
      valid.slice(0, -1), // 39 characters after the environment prefix
      `${valid}A`, // 41
      `${valid.slice(0, -1)}-`, // a character outside letters and digits
      `${valid.slice(0, -1)}!`,
      `${valid.slice(0, -1)}\u00e9`,
      `svc_prod_${valid.slice(9)}`, // unknown environment
      `svc_${valid.slice(9)}`,
      `svc_test__${valid.slice(10)}`,
      `${valid} trailing`, // one key and then something else
      `${valid},${valid}`,
    ];
    for (const key of malformed) {
      assertError(await meWithAuthorization(`Bearer ${key}`), 401, 'invalid_api_key');
    }
  });

  test('an unknown, well-formed key -> 401 invalid_api_key', async () => {
    assertError(await me(WELL_FORMED_UNKNOWN), 401, 'invalid_api_key');
    // One character changed in a real key's secret.
    const last = team.key.at(-1) === 'a' ? 'b' : 'a';
    assertError(await me(`${team.key.slice(0, -1)}${last}`), 401, 'invalid_api_key');
    // Keys are case-sensitive.
    const flipped = team.key.slice(0, 17) + [...team.key.slice(17)].map((c) => (c === c.toLowerCase() ? c.toUpperCase() : c.toLowerCase())).join('');
    assert.notEqual(flipped, team.key);
    assertError(await me(flipped), 401, 'invalid_api_key');
  });

  test('a revoked key -> 401 invalid_api_key, on every route', async () => {
    const f = await makeTeam(db());
    assert.equal((await me(f.key)).statusCode, 200);
    const revoked = await revokeApiKey(db().pool, f.keyId);
    assert.equal(revoked.active, false);
    assert.ok(revoked.revoked_at);
    assertError(await answeredWith(401, () => me(f.key)), 401, 'invalid_api_key');
    assertError(await t.app.inject({ method: 'GET', url: '/v1/tools', headers: bearer(f.key) }), 401, 'invalid_api_key');
    // Revoking twice keeps the first time.
    assert.equal((await revokeApiKey(db().pool, f.keyId)).revoked_at, revoked.revoked_at);
    assertError(await me(f.key), 401, 'invalid_api_key');
  });

  test('a svc_live_ key against a non-production app -> 401 invalid_api_key', async () => {
    const live = await makeTeam(db(), { envPrefix: 'svc_live_' });
    const error = assertError(await me(live.key), 401, 'invalid_api_key');
    assert.match(error.message, /svc_test_/);
  });

  test('a svc_test_ key against a production app -> 401 invalid_api_key', async () => {
    assert.equal(prod.config.keyEnvPrefix, 'svc_live_');
    const error = assertError(await me(team.key, prod), 401, 'invalid_api_key');
    assert.match(error.message, /svc_live_/);
    // The same key still works in its own environment.
    assert.equal((await me(team.key)).statusCode, 200);
  });

  test('the key of a removed member -> 401 invalid_api_key; re-adding the email does not revive it', async () => {
    const owner = await makeTeam(db());
    const admin = await addTo(owner.teamId, 'admin', 'leaver@example.test');
    const leaverKey = await newKey(admin.id);
    assert.equal((await me(leaverKey.key)).statusCode, 200);

    await removeMember(db(), admin.id);
    assertError(await answeredWith(401, () => me(leaverKey.key)), 401, 'invalid_api_key');
    const listed = (await listApiKeys(db().pool, owner.teamId)).find((k) => k.id === leaverKey.api_key.id);
    assert.equal(listed?.active, false);

    const back = await addTo(owner.teamId, 'admin', 'LEAVER@example.test');
    assert.notEqual(back.id, admin.id, 'a re-added email is a new member');
    assertError(await me(leaverKey.key), 401, 'invalid_api_key');
    // The returning member's new key works; the old one stays dead.
    const fresh = await newKey(back.id);
    assert.equal((await me(fresh.key)).statusCode, 200);
    assertError(await me(leaverKey.key), 401, 'invalid_api_key');
    // The owner's key was never affected.
    assert.equal((await me(owner.key)).statusCode, 200);
  });

  test('a Free team key -> 403 plan_upgrade_required on /v1/me and /v1/tools; upgrading restores it', async () => {
    const f = await makeTeam(db(), { plan: 'pro' });
    await updateTeam(db().pool, f.teamId, { plan: 'free' });
    for (const url of ['/v1/me', '/v1/tools', '/test/webhooks-only']) {
      const res = await t.app.inject({ method: 'GET', url, headers: bearer(f.key) });
      const error = assertError(res, 403, 'plan_upgrade_required');
      assert.equal(error.details?.plan, 'free');
    }
    await updateTeam(db().pool, f.teamId, { plan: 'plus' });
    assert.equal((await answeredWith(200, () => me(f.key))).statusCode, 200);
  });

  test('a key without the scope a route needs -> 403 insufficient_scope with details.required_scope', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/test/webhooks-only', headers: bearer(team.key) });
    const error = assertError(res, 403, 'insufficient_scope');
    assert.deepEqual(error.details, { required_scope: 'webhooks' });
  });

  test('key creation is refused for a Free team', async () => {
    const free = await createTeam(db(), { name: 'Free team', plan: 'free' });
    const owner = await addTo(free.id, 'owner');
    await assert.rejects(newKey(owner.id), (err: unknown) => err instanceof AdminError && /Free/.test(err.message));
    assert.equal((await listApiKeys(db().pool, free.id)).length, 0);
  });

  test('key creation is refused for a member with role member, allowed for admin and owner', async () => {
    const f = await makeTeam(db());
    const plain = await addTo(f.teamId, 'member');
    await assert.rejects(newKey(plain.id), (err: unknown) => err instanceof AdminError && /owners and admins/.test(err.message));
    const admin = await addTo(f.teamId, 'admin');
    const made = await newKey(admin.id);
    assert.equal((await me(made.key)).statusCode, 200);
  });

  test('key creation is refused for a removed member, a bad rate, an unknown scope or a bad name', async () => {
    const f = await makeTeam(db());
    const gone = await addTo(f.teamId, 'admin');
    await removeMember(db(), gone.id);
    await assert.rejects(newKey(gone.id), AdminError);
    await assert.rejects(newKey(f.memberId, { rate: 100 }), AdminError);
    await assert.rejects(
      createApiKey(db(), { memberId: f.memberId, name: 'x', scopes: ['read', 'admin' as 'read'], rate: 60, envPrefix: 'svc_test_' }),
      AdminError,
    );
    await assert.rejects(createApiKey(db(), { memberId: f.memberId, name: '  ', scopes: ['read'], rate: 60, envPrefix: 'svc_test_' }), AdminError);
    assert.equal(await activeKeyCount(f.teamId), 1);
  });

  test('parseScopes: read is always on, run is on by default, unknown scopes are refused', () => {
    assert.deepEqual(parseScopes(undefined), ['read', 'run']);
    assert.deepEqual(parseScopes('run'), ['read', 'run']);
    assert.deepEqual(parseScopes('webhooks'), ['read', 'webhooks']);
    assert.deepEqual(parseScopes('webhooks, run ,read'), ['read', 'run', 'webhooks']);
    assert.deepEqual(parseScopes(''), ['read']);
    assert.deepEqual(parseScopes('read,read'), ['read']);
    assert.throws(() => parseScopes('read,admin'), (err: unknown) => err instanceof AdminError && /unknown scope "admin"/.test(err.message));
    assert.throws(() => parseScopes('Read'), AdminError);
    // The default is not a shared array a caller could change.
    const a = parseScopes(undefined);
    a.push('webhooks');
    assert.deepEqual(parseScopes(undefined), ['read', 'run']);
  });

  test('createApiKey keeps read on even when a caller leaves it out', async () => {
    const f = await makeTeam(db(), { scopes: ['run'] });
    const res = await me(f.key);
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json<{ api_key: { scopes: string[] } }>().api_key.scopes, ['read', 'run']);
    const { rows } = await db().pool.query<{ scopes: string[] }>('SELECT scopes FROM api_keys WHERE id = $1::uuid', [f.keyId]);
    assert.deepEqual(rows[0]?.scopes, ['read', 'run']);
  });
});
