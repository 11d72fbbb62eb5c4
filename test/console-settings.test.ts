import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { MAX_ACTIVE_KEYS_PER_TEAM } from '../src/auth/key-admin.js';
import { createInvite } from '../src/console/invites.js';
import { addMember, createTeam } from '../src/teams/repository.js';
import { recordAttempt } from '../src/webhooks/repository.js';
import { ConsoleClient, inviteAndSignIn, signedInMember, tokenOf, type SignedInMember } from './helpers/console.js';
import { assertError } from './helpers/error-envelope.js';
import { bearer, makeTeam } from './helpers/fixtures.js';
import { closeReceivers, fail500, Receiver } from './helpers/receiver.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { socketRequest } from './helpers/socket-request.js';
import { testRegistry } from './helpers/test-tools.js';
import { deliveriesOf, eventOfRun, Runs, startWebhookWorker, stopWebhookWorkers, webhookTeam } from './helpers/webhooks.js';
import { waitFor } from './helpers/worker.js';

const ENV = { TOOLRUN_ALLOW_PRIVATE_NETWORK: '1', TOOLRUN_WEBHOOK_RETRY_DELAYS: '1,1,1', TOOLRUN_WORKER_POLL_MS: '200' };
let s: TestServer;
let receiver: Receiver;

before(async () => {
  s = await startTestServer({ tools: testRegistry(), env: ENV });
  receiver = await Receiver.start();
});
after(async () => {
  await stopWebhookWorkers();
  await closeReceivers();
  await s.close();
});

const db = () => s.database.db;

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

async function ownerOf(plan: 'pro' | 'free' = 'pro'): Promise<SignedInMember> {
  if (plan === 'free') {
    const team = await createTeam(db(), { name: 'Free team', plan: 'free' });
    const m = await addMember(db(), { teamId: team.id, email: `free-owner-${randomUUID()}@example.test`, role: 'owner' });
    return inviteAndSignIn(s.url, db(), m.id);
  }
  const team = await webhookTeam(db());
  return inviteAndSignIn(s.url, db(), team.memberId);
}

const me = (key: string) => socketRequest(s.url, '/v1/me', { headers: bearer(key) });

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
    const other = await startTestServer({ database: s.database });
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
    const m = await signedInMember(s.url, db(), o.session.team.id, 'member');
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

interface EndpointJson {
  id: string;
  url: string;
  events: string[];
  enabled: boolean;
}

describe('webhooks', () => {
  test('create (secret once), list, pause, change events, send test, delete', async () => {
    const o = await ownerOf();
    const created = await o.client.call('POST', '/console/api/webhooks', { url: receiver.url('/console'), events: ['run.failed'] });
    assert.equal(created.statusCode, 201, created.body);
    const ep = created.json<EndpointJson & { signing_secret: string; object: string }>();
    assert.match(ep.signing_secret, /^whsec_/);
    assert.equal(ep.object, 'webhook_endpoint');
    const list = (await o.client.call('GET', '/console/api/webhooks')).json<{ data: (EndpointJson & { signing_secret?: string })[]; can_manage: boolean }>();
    assert.equal(list.can_manage, true);
    assert.deepEqual(list.data.map((e) => [e.id, e.signing_secret]), [[ep.id, undefined]]);
    const paused = await o.client.call('PATCH', `/console/api/webhooks/${ep.id}`, { enabled: false, events: ['run.succeeded', 'run.failed'] });
    assert.equal(paused.statusCode, 200, paused.body);
    assert.deepEqual([paused.json<EndpointJson>().enabled, paused.json<EndpointJson>().events], [false, ['run.succeeded', 'run.failed']]);
    const tested = await o.client.call('POST', `/console/api/webhooks/${ep.id}/test`);
    assert.equal(tested.statusCode, 200, tested.body);
    const result = tested.json<{ object: string; delivered: boolean; response_code: number }>();
    assert.deepEqual([result.object, result.delivered, result.response_code], ['webhook_test', true, 204]);
    assert.ok(receiver.requests.some((r) => r.path === '/console' && r.headers['service-event'] === 'ping'));
    const bad = assertError(await o.client.call('POST', '/console/api/webhooks', { url: 'http://example.com/x' }), 422, 'invalid_request');
    assert.deepEqual(bad.errors?.map((e) => [e.loc, e.code]), [[['body', 'url'], 'url_not_https']]);
    const deleted = await o.client.call('DELETE', `/console/api/webhooks/${ep.id}`);
    assert.deepEqual(deleted.json(), { id: ep.id, deleted: true });
    assertError(await o.client.call('DELETE', `/console/api/webhooks/${ep.id}`), 404, 'webhook_endpoint_not_found');
  });

  test('a member reads the endpoints but changes nothing; another team\'s ids are 404', async () => {
    const o = await ownerOf();
    const ep = (await o.client.call('POST', '/console/api/webhooks', { url: receiver.url('/read') })).json<EndpointJson>();
    const m = await signedInMember(s.url, db(), o.session.team.id, 'member');
    const list = (await m.client.call('GET', '/console/api/webhooks')).json<{ data: EndpointJson[]; can_manage: boolean }>();
    assert.deepEqual([list.can_manage, list.data.map((e) => e.id)], [false, [ep.id]]);
    assert.equal((await m.client.call('GET', `/console/api/webhooks/${ep.id}/deliveries`)).statusCode, 200);
    assertError(await m.client.call('POST', '/console/api/webhooks', { url: receiver.url('/x') }), 403, 'insufficient_role');
    assertError(await m.client.call('PATCH', `/console/api/webhooks/${ep.id}`, { enabled: false }), 403, 'insufficient_role');
    assertError(await m.client.call('POST', `/console/api/webhooks/${ep.id}/test`), 403, 'insufficient_role');
    assertError(await m.client.call('DELETE', `/console/api/webhooks/${ep.id}`), 403, 'insufficient_role');
    const stranger = await ownerOf();
    for (const [method, path] of [
      ['PATCH', `/console/api/webhooks/${ep.id}`],
      ['DELETE', `/console/api/webhooks/${ep.id}`],
      ['POST', `/console/api/webhooks/${ep.id}/test`],
      ['GET', `/console/api/webhooks/${ep.id}/deliveries`],
      ['POST', `/console/api/webhooks/${ep.id}/deliveries/${randomUUID()}/redeliver`],
    ] as const) {
      assertError(await stranger.client.call(method, path, method === 'PATCH' ? { enabled: false } : undefined), 404, 'webhook_endpoint_not_found');
    }
    assert.equal((await o.client.call('GET', '/console/api/webhooks')).json<{ data: EndpointJson[] }>().data[0]?.enabled, true);
  });

  test('the delivery log shows each delivery with its attempts; a given-up delivery is sent again', async () => {
    const o = await ownerOf();
    const ep = (await o.client.call('POST', '/console/api/webhooks', { url: receiver.url('/log') })).json<EndpointJson>();
    // A run of the team ends (canceled): its event becomes a delivery to the endpoint.
    const key = await o.client.call('POST', '/console/api/keys', { name: 'runs' });
    const run = await (await new Runs(s, key.json<{ key: string }>().key).init()).canceled();
    const event = await eventOfRun(db(), run.id);
    const [delivery] = await deliveriesOf(db(), ep.id);
    assert.ok(delivery);
    // As if every retry had failed: one recorded attempt, given up.
    await recordAttempt(db().pool, {
      deliveryId: delivery.id,
      endpointId: ep.id,
      eventType: 'run.canceled',
      statusCode: 500,
      error: 'HTTP 500',
      durationMs: 12,
      excerpt: 'boom',
      attemptedAt: new Date(),
    });
    await db().pool.query("UPDATE webhook_deliveries SET status = 'failed', attempts = 6, finished_at = now() WHERE id = $1::uuid", [delivery.id]);
    const log = await o.client.call('GET', `/console/api/webhooks/${ep.id}/deliveries`);
    assert.equal(log.statusCode, 200, log.body);
    const data = log.json<{ data: { id: string; event_id: string; event_type: string; status: string; attempts: { status_code: number; duration_ms: number; error: string; attempted_at: string }[] }[] }>().data;
    assert.equal(data.length, 1);
    assert.deepEqual(
      { ...data[0], attempts: data[0]?.attempts.map((a) => ({ ...a, attempted_at: typeof a.attempted_at })), created_at: undefined },
      {
        id: delivery.id,
        event_id: event.id,
        event_type: 'run.canceled',
        status: 'failed',
        created_at: undefined,
        attempts: [{ attempted_at: 'string', status_code: 500, duration_ms: 12, error: 'HTTP 500' }],
      },
    );
    const m = await signedInMember(s.url, db(), o.session.team.id, 'member');
    assertError(await m.client.call('POST', `/console/api/webhooks/${ep.id}/deliveries/${delivery.id}/redeliver`), 403, 'insufficient_role');
    assertError(await o.client.call('POST', `/console/api/webhooks/${ep.id}/deliveries/${randomUUID()}/redeliver`), 404, 'delivery_not_found');
    receiver.program(fail500);
    const again = await o.client.call('POST', `/console/api/webhooks/${ep.id}/deliveries/${delivery.id}/redeliver`);
    assert.equal(again.statusCode, 200, again.body);
    assert.deepEqual(again.json(), { delivery_id: delivery.id });
    assertError(await o.client.call('POST', `/console/api/webhooks/${ep.id}/deliveries/${delivery.id}/redeliver`), 409, 'delivery_not_redeliverable');
    // The worker sends it: once refused (500), then delivered on its retry.
    await startWebhookWorker(s);
    await waitFor('the redelivery to arrive', async () => ((await deliveriesOf(db(), ep.id))[0]?.status === 'delivered' ? true : undefined), 30_000);
    const after = (await o.client.call('GET', `/console/api/webhooks/${ep.id}/deliveries`)).json<{ data: { status: string; attempts: { status_code: number }[] }[] }>();
    assert.deepEqual(after.data[0]?.attempts.map((a) => a.status_code), [500, 500, 204]);
    assert.equal(after.data[0]?.status, 'delivered');
  });
});

interface MemberJson {
  id: string;
  email: string;
  role: string;
  has_password: boolean;
}

describe('members', () => {
  test('invite a new member: the link sets their password; list, change role, remove', async () => {
    const o = await ownerOf();
    const res = await o.client.call('POST', '/console/api/members', { email: 'new.person@example.test', role: 'admin' });
    assert.equal(res.statusCode, 201, res.body);
    const added = res.json<{ member: MemberJson; invite_url: string; expires_at: string }>();
    assert.deepEqual({ ...added.member, id: '' }, { id: '', email: 'new.person@example.test', role: 'admin', has_password: false, created_at: (added.member as unknown as { created_at: string }).created_at });
    const joined = new ConsoleClient(s.url);
    assert.equal((await joined.accept(tokenOf(added.invite_url))).member.id, added.member.id);
    const list = (await o.client.call('GET', '/console/api/members')).json<{ data: MemberJson[]; can_manage: boolean }>();
    assert.equal(list.can_manage, true);
    assert.deepEqual(list.data.find((m) => m.id === added.member.id)?.has_password, true);
    const changed = await o.client.call('PATCH', `/console/api/members/${added.member.id}`, { role: 'member' });
    assert.equal(changed.json<MemberJson>().role, 'member');
    assertError(await o.client.call('POST', '/console/api/members', { email: 'NEW.person@example.test', role: 'member' }), 409, 'member_exists');
    const bad = assertError(await o.client.call('POST', '/console/api/members', { email: 'not an email', role: 'boss' }), 422, 'invalid_request');
    assert.deepEqual(bad.errors?.map((e) => e.loc), [['body', 'email'], ['body', 'role']]);
    const removed = await o.client.call('DELETE', `/console/api/members/${added.member.id}`);
    assert.deepEqual(removed.json(), { id: added.member.id, removed: true });
    assertError(await joined.call('GET', '/console/api/session'), 401, 'session_required');
    assertError(await o.client.call('DELETE', `/console/api/members/${added.member.id}`), 404, 'member_not_found');
  });

  test("a new link for a member replaces the earlier one; the removed member's keys stop for good", async () => {
    const o = await ownerOf();
    const admin = await signedInMember(s.url, db(), o.session.team.id, 'admin');
    const key = (await admin.client.call('POST', '/console/api/keys', { name: 'admin key' })).json<{ key: string }>().key;
    assert.equal((await me(key)).statusCode, 200);
    const first = (await o.client.call('POST', `/console/api/members/${admin.memberId}/invite`)).json<{ invite_url: string }>();
    const second = await o.client.call('POST', `/console/api/members/${admin.memberId}/invite`);
    assert.equal(second.statusCode, 201, second.body);
    assertError(await new ConsoleClient(s.url).call('POST', '/console/api/invites/accept', { token: tokenOf(first.invite_url), password: 'another long password' }), 404, 'invite_invalid');
    await new ConsoleClient(s.url).accept(tokenOf(second.json<{ invite_url: string }>().invite_url), 'another long password');
    assert.equal((await o.client.call('DELETE', `/console/api/members/${admin.memberId}`)).statusCode, 200);
    assertError(await me(key), 401, 'invalid_api_key');
  });

  test('the last owner can be neither removed nor demoted; admins cannot touch owners', async () => {
    const o = await ownerOf();
    assertError(await o.client.call('DELETE', `/console/api/members/${o.memberId}`), 409, 'last_owner');
    assertError(await o.client.call('PATCH', `/console/api/members/${o.memberId}`, { role: 'admin' }), 409, 'last_owner');
    const admin = await signedInMember(s.url, db(), o.session.team.id, 'admin');
    const e = assertError(await admin.client.call('PATCH', `/console/api/members/${o.memberId}`, { role: 'member' }), 403, 'insufficient_role');
    assert.equal(e.details?.required_role, 'owner');
    assertError(await admin.client.call('POST', '/console/api/members', { email: 'boss@example.test', role: 'owner' }), 403, 'insufficient_role');
    assertError(await admin.client.call('DELETE', `/console/api/members/${o.memberId}`), 403, 'insufficient_role');
    // With a second owner, the first may step down.
    const second = await o.client.call('PATCH', `/console/api/members/${admin.memberId}`, { role: 'owner' });
    assert.equal(second.statusCode, 200, second.body);
    assert.equal((await o.client.call('PATCH', `/console/api/members/${o.memberId}`, { role: 'admin' })).statusCode, 200);
  });

  test("a member reads the list and acts on nothing; another team's member is 404", async () => {
    const o = await ownerOf();
    const m = await signedInMember(s.url, db(), o.session.team.id, 'member');
    const list = (await m.client.call('GET', '/console/api/members')).json<{ data: MemberJson[]; can_manage: boolean }>();
    assert.equal(list.can_manage, false);
    assert.equal(list.data.length, 2);
    assertError(await m.client.call('POST', '/console/api/members', { email: 'x@example.test', role: 'member' }), 403, 'insufficient_role');
    assertError(await m.client.call('POST', `/console/api/members/${o.memberId}/invite`), 403, 'insufficient_role');
    assertError(await m.client.call('PATCH', `/console/api/members/${m.memberId}`, { role: 'admin' }), 403, 'insufficient_role');
    const stranger = await ownerOf();
    for (const [method, path, body] of [
      ['POST', `/console/api/members/${m.memberId}/invite`, undefined],
      ['PATCH', `/console/api/members/${m.memberId}`, { role: 'admin' }],
      ['DELETE', `/console/api/members/${m.memberId}`, undefined],
    ] as const) {
      assertError(await stranger.client.call(method, path, body), 404, 'member_not_found');
    }
    assert.equal((await m.client.call('GET', '/console/api/session')).statusCode, 200, 'nothing happened to the member');
    // An invite made by the CLI works the same.
    const cli = await createInvite(db(), s.url, m.memberId);
    assert.equal((await new ConsoleClient(s.url).accept(tokenOf(cli.invite_url), 'the cli made this link')).member.id, m.memberId);
  });
});

describe('the console API document', () => {
  test('GET /console/api/openapi.json documents every console route; /v1/openapi.json has none', async () => {
    const doc = (await socketRequest(s.url, '/console/api/openapi.json')).json<{ openapi: string; paths: Record<string, Record<string, unknown>>; components: { schemas: Record<string, unknown> } }>();
    assert.equal(doc.openapi, '3.1.0');
    assert.deepEqual(Object.keys(doc.paths).sort(), [
      '/console/api/files/upload-url',
      '/console/api/files/{file_id}/complete',
      '/console/api/invites/accept',
      '/console/api/keys',
      '/console/api/keys/{id}/revoke',
      '/console/api/ledger',
      '/console/api/members',
      '/console/api/members/{id}',
      '/console/api/members/{id}/invite',
      '/console/api/openapi.json',
      '/console/api/overview',
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
    const v1 = (await socketRequest(s.url, '/v1/openapi.json')).json<{ paths: Record<string, unknown> }>();
    assert.ok(!Object.keys(v1.paths).some((p) => p.startsWith('/console')));
  });
});
