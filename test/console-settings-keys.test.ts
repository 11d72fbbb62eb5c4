// The console's settings API over real sockets, for a team's API keys and what the console shows
// of itself: create (the key shown once answers /v1), last used written off the request path at
// most once a minute, revoke, scopes and rates, the active-key limit, a Free team and a member
// refused; the overview; the console's own OpenAPI document. (Webhooks and members are in
// console-settings-team.test.ts.)
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import { MAX_ACTIVE_KEYS_PER_TEAM } from '../src/auth/key-admin.js';
import { signedInMember } from './helpers/console.js';
import { consoleSettingsSuite } from './helpers/console-settings.js';
import { assertError } from './helpers/error-envelope.js';
import { bearer, makeTeam } from './helpers/fixtures.js';
import { startTestServer } from './helpers/server.js';
import { socketRequest } from './helpers/socket-request.js';
import { waitFor } from './helpers/worker.js';

const { database, db, me, ownerOf, url } = consoleSettingsSuite();

interface KeyItem {
  id: string;
  name: string;
  prefix: string;
  scopes: string[];
  rate_limit_per_minute: number;
  created_by: { id: string; email: string };
  created_at: string;
  last_used_at: string | null;
}
interface KeyList {
  data: KeyItem[];
  active_keys: number;
  max_active_keys: number;
  can_manage: boolean;
  plan_allows_keys: boolean;
}

describe('API keys', () => {
  test('create -> the shown key answers GET /v1/me, last used is kept -> revoke -> the key gets 401', async () => {
    const o = await ownerOf();
    const res = await o.client.call('POST', '/console/api/keys', { name: 'CI deploys' });
    assert.equal(res.statusCode, 201, res.body);
    const made = res.json<{ key: string; api_key: KeyItem }>();
    assert.match(made.key, /^svc_test_[A-Za-z0-9]{40}$/);
    assert.deepEqual(
      { ...made.api_key, id: '', created_at: '' },
      {
        id: '',
        name: 'CI deploys',
        prefix: made.key.slice(9, 17),
        scopes: ['read', 'run'],
        rate_limit_per_minute: 60,
        created_by: { id: o.memberId, email: o.email },
        created_at: '',
        last_used_at: null,
      },
    );
    const used = await me(made.key);
    assert.equal(used.statusCode, 200, used.body);
    assert.equal(used.json<{ api_key: { id: string } }>().api_key.id, made.api_key.id);
    // Written off the request path, within about a second.
    const listed = await waitFor('last_used_at to be written', async () => {
      const list = (await o.client.call('GET', '/console/api/keys')).json<KeyList>();
      const item = list.data.find((k) => k.id === made.api_key.id);
      return item?.last_used_at ? item : undefined;
    });
    assert.ok(listed.last_used_at);
    const revoked = await o.client.call('POST', `/console/api/keys/${made.api_key.id}/revoke`);
    assert.equal(revoked.statusCode, 200, revoked.body);
    assert.equal(revoked.json<{ api_key: KeyItem }>().api_key.id, made.api_key.id);
    assertError(await me(made.key), 401, 'invalid_api_key');
    const list = (await o.client.call('GET', '/console/api/keys')).json<KeyList>();
    assert.ok(!list.data.some((k) => k.id === made.api_key.id), 'revoked keys are not listed');
  });

  test('last_used_at is written at most once a minute per key', async () => {
    const o = await ownerOf();
    const made = (await o.client.call('POST', '/console/api/keys', { name: 'busy' })).json<{ key: string; api_key: KeyItem }>();
    await me(made.key);
    const first = await waitFor('the first write', async () => {
      const { rows } = await db().pool.query<{ t: Date | null }>('SELECT last_used_at AS t FROM api_keys WHERE id = $1::uuid', [made.api_key.id]);
      return rows[0]?.t ?? undefined;
    });
    // Another process may also see the key: its write does not move the time within the minute.
    const other = await startTestServer({ database: database() });
    try {
      const res = await socketRequest(other.url, '/v1/me', { headers: bearer(made.key) });
      assert.equal(res.statusCode, 200);
    } finally {
      await other.close();
    }
    await me(made.key);
    const { rows } = await db().pool.query<{ t: Date }>('SELECT last_used_at AS t FROM api_keys WHERE id = $1::uuid', [made.api_key.id]);
    assert.equal(rows[0]?.t.getTime(), first.getTime());
  });

  test('scopes and rates: read always on; bad values are named', async () => {
    const o = await ownerOf();
    const res = await o.client.call('POST', '/console/api/keys', { name: 'hooks', scopes: ['webhooks'], rate_limit_per_minute: 300 });
    assert.equal(res.statusCode, 201, res.body);
    const item = res.json<{ api_key: KeyItem }>().api_key;
    assert.deepEqual([item.scopes, item.rate_limit_per_minute], [['read', 'webhooks'], 300]);
    const rate = assertError(await o.client.call('POST', '/console/api/keys', { name: 'x', rate_limit_per_minute: 45 }), 422, 'invalid_request');
    assert.deepEqual(rate.errors?.map((e) => e.loc), [['body', 'rate_limit_per_minute']]);
    const scope = assertError(await o.client.call('POST', '/console/api/keys', { name: 'x', scopes: ['admin'] }), 422, 'invalid_request');
    assert.deepEqual(scope.errors?.map((e) => e.loc), [['body', 'scopes']]);
    const blank = assertError(await o.client.call('POST', '/console/api/keys', { name: '   ' }), 422, 'invalid_request');
    assert.deepEqual(blank.errors?.map((e) => e.loc), [['body', 'name']]);
    const nul = assertError(await o.client.call('POST', '/console/api/keys', { name: 'a\u0000b' }), 422, 'invalid_request');
    assert.deepEqual(nul.errors?.map((e) => [e.loc, e.code]), [[['body', 'name'], 'invalid_character']]);
  });

  test(`the ${MAX_ACTIVE_KEYS_PER_TEAM}-key limit is 409 key_limit_reached`, async () => {
    const o = await ownerOf();
    let list = (await o.client.call('GET', '/console/api/keys')).json<KeyList>();
    for (let i = list.active_keys; i < MAX_ACTIVE_KEYS_PER_TEAM; i++) {
      assert.equal((await o.client.call('POST', '/console/api/keys', { name: `k${i}` })).statusCode, 201);
    }
    list = (await o.client.call('GET', '/console/api/keys')).json<KeyList>();
    assert.deepEqual([list.active_keys, list.max_active_keys, list.data.length], [25, 25, 25]);
    const e = assertError(await o.client.call('POST', '/console/api/keys', { name: 'one too many' }), 409, 'key_limit_reached');
    assert.deepEqual(e.details, { limit: 25 });
    assert.match(e.message, /Revoke one/);
  });

  test('a Free team: the list says so, and creating is 403 plan_upgrade_required', async () => {
    const o = await ownerOf('free');
    const list = (await o.client.call('GET', '/console/api/keys')).json<KeyList>();
    assert.deepEqual([list.plan_allows_keys, list.can_manage, list.data], [false, true, []]);
    const e = assertError(await o.client.call('POST', '/console/api/keys', { name: 'nope' }), 403, 'plan_upgrade_required');
    assert.deepEqual(e.details, { required_plans: ['plus', 'pro', 'team'] });
  });

  test('a member sees the keys with can_manage false and gets 403 insufficient_role on actions', async () => {
    const o = await ownerOf();
    const made = (await o.client.call('POST', '/console/api/keys', { name: 'shared' })).json<{ api_key: KeyItem }>();
    const m = await signedInMember(url(), db(), o.session.team.id, 'member');
    const list = (await m.client.call('GET', '/console/api/keys')).json<KeyList>();
    assert.equal(list.can_manage, false);
    assert.ok(list.data.some((k) => k.id === made.api_key.id));
    const e = assertError(await m.client.call('POST', '/console/api/keys', { name: 'mine' }), 403, 'insufficient_role');
    assert.deepEqual(e.details, { required_role: 'admin', role: 'member' });
    assertError(await m.client.call('POST', `/console/api/keys/${made.api_key.id}/revoke`), 403, 'insufficient_role');
  });

  test("another team's key, an unknown id and a malformed id", async () => {
    const o = await ownerOf();
    const other = await makeTeam(db());
    assertError(await o.client.call('POST', `/console/api/keys/${other.keyId}/revoke`), 404, 'api_key_not_found');
    assert.equal((await me(other.key)).statusCode, 200, "the other team's key still works");
    assertError(await o.client.call('POST', `/console/api/keys/${randomUUID()}/revoke`), 404, 'api_key_not_found');
    const e = assertError(await o.client.call('POST', '/console/api/keys/not-a-uuid/revoke'), 422, 'invalid_request');
    assert.deepEqual(e.errors?.map((x) => x.loc), [['path', 'id']]);
  });
});

describe('overview', () => {
  test('team, plan, Sparks and runs this hour against the ceiling', async () => {
    const o = await ownerOf();
    const res = await o.client.call('GET', '/console/api/overview');
    assert.equal(res.statusCode, 200, res.body);
    const body = res.json<{ team: { id: string; plan: string }; sparks_available: number; runs_this_hour: number; runs_per_hour: number }>();
    assert.deepEqual([body.team.id, body.team.plan, body.sparks_available, body.runs_this_hour, body.runs_per_hour], [o.session.team.id, 'pro', 100_000, 0, 1000]);
  });
});

describe('the console API document', () => {
  test('GET /console/api/openapi.json documents every console route; /v1/openapi.json has none', async () => {
    const doc = (await socketRequest(url(), '/console/api/openapi.json')).json<{ openapi: string; paths: Record<string, Record<string, unknown>>; components: { schemas: Record<string, unknown> } }>();
    assert.equal(doc.openapi, '3.1.0');
    assert.deepEqual(Object.keys(doc.paths).sort(), [
      '/console/api/files/upload-url',
      '/console/api/files/{file_id}/complete',
      '/console/api/invites',
      '/console/api/invites/accept',
      '/console/api/invites/{id}/revoke',
      '/console/api/keys',
      '/console/api/keys/{id}/revoke',
      '/console/api/ledger',
      '/console/api/members',
      '/console/api/members/{id}',
      '/console/api/members/{id}/invite',
      '/console/api/openapi.json',
      '/console/api/overview',
      '/console/api/password-resets',
      '/console/api/runs',
      '/console/api/runs/{run_id}',
      '/console/api/runs/{run_id}/cancel',
      '/console/api/runs/{run_id}/inputs/{file_id}/url',
      '/console/api/runs/{run_id}/outputs/{asset_id}/url',
      '/console/api/session',
      '/console/api/tools',
      '/console/api/tools/{tool_id}/estimate',
      '/console/api/tools/{tool_id}/runs',
      '/console/api/usage',
      '/console/api/webhooks',
      '/console/api/webhooks/{id}',
      '/console/api/webhooks/{id}/deliveries',
      '/console/api/webhooks/{id}/deliveries/{delivery_id}/redeliver',
      '/console/api/webhooks/{id}/test',
    ]);
    for (const name of ['ErrorResponse', 'WebhookEndpoint', 'CreatedWebhookEndpoint', 'WebhookTest', 'Tool', 'ToolInput', 'FileUpload', 'File', 'Estimate', 'OutputUrl']) {
      assert.ok(doc.components.schemas[name], name);
    }
    const ids = Object.values(doc.paths).flatMap((ops) => Object.values(ops).map((op) => (op as { operationId?: string }).operationId));
    assert.equal(new Set(ids).size, ids.length, 'operation ids are unique');
    const list = doc.paths['/console/api/runs']?.get as { parameters: { name: string; in: string }[] };
    assert.deepEqual(list.parameters.map((p) => `${p.in}:${p.name}`).sort(), ['query:api_key_id', 'query:cursor', 'query:limit', 'query:member_id', 'query:source', 'query:status', 'query:tool_id']);
    const v1 = (await socketRequest(url(), '/v1/openapi.json')).json<{ paths: Record<string, unknown> }>();
    assert.ok(!Object.keys(v1.paths).some((p) => p.startsWith('/console')));
  });
});
