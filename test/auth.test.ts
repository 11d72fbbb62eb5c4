import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { createApiKey, listApiKeys, MAX_ACTIVE_KEYS_PER_TEAM, parseScopes, revokeApiKey } from '../src/auth/key-admin.js';
import { hashKey, parseAuthorization } from '../src/auth/keys.js';
import type { Plan, Role } from '../src/auth/repository.js';
import { addMember, AdminError, createTeam, removeMember, updateMember, updateTeam } from '../src/teams/repository.js';
import { answeredWith, createTestApp, type TestApp } from './helpers/app.js';
import { assertError, assertRequestId } from './helpers/error-envelope.js';
import { bearer, makeTeam, type TeamFixture } from './helpers/fixtures.js';
import { testRoutes } from './helpers/test-routes.js';

const SESSION_JWT =
  'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJ1c2VyXzEiLCJ0ZWFtIjoidGVhbV8xIiwiaWF0IjoxNzAwMDAwMDAwfQ.c2lnbmF0dXJlLW5vdC1jaGVja2Vk';
const WELL_FORMED_UNKNOWN = `svc_test_${'A1b2C3d4'}${'Zz9Yy8Xx7Ww6Vv5Uu4Tt3Ss2Rr1Qq0Pp'}`;

let t: TestApp;
let prod: TestApp;
let team: TeamFixture;
let emailCounter = 0;

before(async () => {
  t = await createTestApp({ extraRoutes: testRoutes });
  // A second app on the same database, as a production deployment would run it.
  prod = await createTestApp({ env: { TOOLRUN_ENV: 'production' }, database: t.database, extraRoutes: testRoutes });
  team = await makeTeam(t.database.db, { sparks: 40, rate: 300 });
});
after(async () => {
  await prod.close();
  await t.close();
});

const db = () => t.database.db;

function me(key: string | null, app: TestApp = t): Promise<LightMyRequestResponse> {
  return app.app.inject({ method: 'GET', url: '/v1/me', headers: key === null ? {} : bearer(key) });
}

function meWithAuthorization(authorization: string): Promise<LightMyRequestResponse> {
  return t.app.inject({ method: 'GET', url: '/v1/me', headers: { authorization } });
}

async function addTo(teamId: string, role: Role, email?: string) {
  emailCounter++;
  return addMember(db(), { teamId, email: email ?? `person${emailCounter}@example.test`, role });
}

async function newKey(memberId: string, opts: { rate?: number; envPrefix?: 'svc_test_' | 'svc_live_' } = {}) {
  return createApiKey(db(), {
    memberId,
    name: `key for ${memberId.slice(0, 8)}`,
    scopes: ['read', 'run'],
    rate: opts.rate ?? 300,
    envPrefix: opts.envPrefix ?? 'svc_test_',
  });
}

async function activeKeyCount(teamId: string): Promise<number> {
  return (await listApiKeys(db().pool, teamId)).filter((k) => k.active).length;
}

interface ToolBody {
  object: string;
  id: string;
  name: string;
  description: string;
  family: string;
  inputs: {
    name: string;
    kind: string;
    required: boolean;
    min: number;
    max: number;
    constraints?: Record<string, unknown>;
    choices?: string[] | null;
    default?: unknown;
  }[];
  output_kind: string;
  consent: string;
  allowed: boolean;
  estimate_hint: { sparks_min: number; sparks_max: number };
}

async function listTools(key: string): Promise<ToolBody[]> {
  const res = await t.app.inject({ method: 'GET', url: '/v1/tools', headers: bearer(key) });
  assert.equal(res.statusCode, 200, res.body);
  const body = res.json<{ object: string; data: ToolBody[] }>();
  assert.deepEqual(Object.keys(body).sort(), ['data', 'object']);
  assert.equal(body.object, 'list');
  return body.data;
}

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

describe('GET /v1/tools', () => {
  const SPEC: Record<string, { name: string; family: string; output_kind: string; slots: [string, string, boolean, string[] | null][] }> = {
    image_upscale: { name: 'Upscale image', family: 'enhance', output_kind: 'image', slots: [['image', 'image', true, null]] },
    video_transition: {
      name: 'Video transition',
      family: 'edit',
      output_kind: 'video',
      slots: [
        ['clips', 'video', true, null],
        ['style', 'enum', false, ['fade', 'dissolve', 'wipe_left', 'wipe_right']],
        ['duration_seconds', 'number', false, null],
      ],
    },
    image_color_grade: {
      name: 'Colour grade',
      family: 'edit',
      output_kind: 'image',
      slots: [
        ['image', 'image', true, null],
        ['temperature', 'number', false, null],
        ['contrast', 'number', false, null],
        ['saturation', 'number', false, null],
        ['exposure', 'number', false, null],
        ['grain', 'number', false, null],
        ['preset', 'enum', false, ['natural', 'warm_film', 'cool_matte', 'bw_16mm', 'none']],
      ],
    },
    video_upscale: {
      name: 'Upscale video',
      family: 'enhance',
      output_kind: 'video',
      slots: [
        ['video', 'video', true, null],
        ['target', 'enum', false, ['1080p', '4k']],
      ],
    },
    brand_kit_extract: {
      name: 'Extract brand kit',
      family: 'analyze',
      output_kind: 'json',
      slots: [
        ['url', 'text', false, null],
        ['files', 'image', false, null],
        ['save', 'bool', false, null],
      ],
    },
  };

  test('lists the five tools of the spec with every field', async () => {
    const tools = await listTools(team.key);
    assert.deepEqual(
      tools.map((x) => x.id),
      ['image_upscale', 'video_transition', 'image_color_grade', 'video_upscale', 'brand_kit_extract'],
    );
    for (const tool of tools) {
      const spec = SPEC[tool.id];
      assert.ok(spec, tool.id);
      assert.deepEqual(Object.keys(tool).sort(), [
        'allowed',
        'consent',
        'description',
        'estimate_hint',
        'family',
        'id',
        'inputs',
        'name',
        'object',
        'output_kind',
      ]);
      assert.equal(tool.object, 'tool');
      assert.equal(tool.name, spec.name);
      assert.equal(tool.family, spec.family);
      assert.equal(tool.output_kind, spec.output_kind);
      assert.equal(tool.consent, 'none');
      assert.ok(tool.description.length > 10, `${tool.id} has a description`);
      assert.equal(tool.allowed, true, `${tool.id} is allowed on pro`);

      assert.deepEqual(Object.keys(tool.estimate_hint).sort(), ['sparks_max', 'sparks_min']);
      const { sparks_min, sparks_max } = tool.estimate_hint;
      assert.ok(Number.isInteger(sparks_min) && Number.isInteger(sparks_max), `${tool.id} hint is integers`);
      assert.ok(sparks_min >= 1, `${tool.id} sparks_min >= 1`);
      assert.ok(sparks_min <= sparks_max, `${tool.id} sparks_min <= sparks_max`);

      assert.deepEqual(
        tool.inputs.map((s) => [s.name, s.kind, s.required, s.choices ?? null]),
        spec.slots,
        `${tool.id} slots`,
      );
      for (const slot of tool.inputs) {
        const where = `${tool.id}.${slot.name}`;
        for (const k of Object.keys(slot)) {
          assert.ok(['name', 'kind', 'required', 'min', 'max', 'constraints', 'choices', 'default'].includes(k), `${where} has no field ${k}`);
        }
        assert.ok(Number.isInteger(slot.min) && Number.isInteger(slot.max), `${where} min/max are integers`);
        assert.ok(slot.min >= 0 && slot.min <= slot.max, `${where} 0 <= min <= max`);
        assert.equal(slot.min >= 1, slot.required, `${where}: required exactly when min >= 1`);
        if (!['image', 'video', 'audio'].includes(slot.kind)) assert.equal(slot.max, 1, `${where}: a value slot takes one value`);
        if (slot.kind === 'number') {
          const c = slot.constraints;
          assert.ok(c && typeof c.minimum === 'number' && typeof c.maximum === 'number', `${where} has a number range`);
          assert.ok(c.minimum < c.maximum, `${where} range is not empty`);
          if (slot.default !== undefined) {
            assert.equal(typeof slot.default, 'number');
            assert.ok(Number(slot.default) >= c.minimum && Number(slot.default) <= c.maximum, `${where} default in range`);
          }
        }
        if (slot.kind === 'enum') {
          assert.ok(Array.isArray(slot.choices) && slot.choices.length > 0, `${where} has choices`);
          if (slot.default !== undefined) assert.ok(slot.choices.includes(String(slot.default)), `${where} default is a choice`);
        } else {
          assert.ok(slot.choices === undefined || slot.choices === null, `${where} has no choices`);
        }
        if (slot.kind === 'bool' && slot.default !== undefined) assert.equal(typeof slot.default, 'boolean');
      }
    }
    // Media slots that take a list say how long the list may be.
    const clips = tools.find((x) => x.id === 'video_transition')?.inputs.find((s) => s.name === 'clips');
    assert.deepEqual([clips?.min, clips?.max], [2, 10]);
    const files = tools.find((x) => x.id === 'brand_kit_extract')?.inputs.find((s) => s.name === 'files');
    assert.deepEqual([files?.min, files?.max], [0, 10]);
  });

  test('allowed follows the plan: video_upscale needs pro or team', async () => {
    const expectations: [Plan, boolean][] = [
      ['plus', false],
      ['pro', true],
      ['team', true],
    ];
    for (const [plan, videoUpscale] of expectations) {
      const f = await makeTeam(db(), { plan });
      const allowed = Object.fromEntries((await listTools(f.key)).map((x) => [x.id, x.allowed]));
      assert.deepEqual(
        allowed,
        {
          image_upscale: true,
          video_transition: true,
          image_color_grade: true,
          video_upscale: videoUpscale,
          brand_kit_extract: true,
        },
        plan,
      );
    }
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
  });
});
