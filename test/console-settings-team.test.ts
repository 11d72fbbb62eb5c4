// The console's settings API over real sockets, for a team's webhook endpoints and members:
// endpoints created (secret shown once), paused, tested and deleted, their delivery log and a
// given-up delivery sent again by a real webhook worker; members invited by link, their role
// changed, removed (their keys stop), the last owner kept; what a member may only read, and
// another team's ids answering 404. (API keys and the overview are in
// console-settings-keys.test.ts.)
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import { createInvite } from '../src/console/invites.js';
import { recordAttempt } from '../src/webhooks/repository.js';
import { ConsoleClient, signedInMember, tokenOf } from './helpers/console.js';
import { consoleSettingsSuite } from './helpers/console-settings.js';
import { assertError } from './helpers/error-envelope.js';
import { closeReceivers, fail500, Receiver } from './helpers/receiver.js';
import { deliveriesOf, eventOfRun, Runs, startWebhookWorker, stopWebhookWorkers } from './helpers/webhooks.js';
import { waitFor } from './helpers/worker.js';

let receiver: Receiver;

const { db, me, ownerOf, server, url } = consoleSettingsSuite({
  async setUp() {
    receiver = await Receiver.start();
  },
  async tearDown() {
    await stopWebhookWorkers();
    await closeReceivers();
  },
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
    const m = await signedInMember(url(), db(), o.session.team.id, 'member');
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
    const run = await (await new Runs(server(), key.json<{ key: string }>().key).init()).canceled();
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
    const m = await signedInMember(url(), db(), o.session.team.id, 'member');
    assertError(await m.client.call('POST', `/console/api/webhooks/${ep.id}/deliveries/${delivery.id}/redeliver`), 403, 'insufficient_role');
    assertError(await o.client.call('POST', `/console/api/webhooks/${ep.id}/deliveries/${randomUUID()}/redeliver`), 404, 'delivery_not_found');
    receiver.program(fail500);
    const again = await o.client.call('POST', `/console/api/webhooks/${ep.id}/deliveries/${delivery.id}/redeliver`);
    assert.equal(again.statusCode, 200, again.body);
    assert.deepEqual(again.json(), { delivery_id: delivery.id });
    assertError(await o.client.call('POST', `/console/api/webhooks/${ep.id}/deliveries/${delivery.id}/redeliver`), 409, 'delivery_not_redeliverable');
    // The worker sends it: once refused (500), then delivered on its retry.
    await startWebhookWorker(server());
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
    const joined = new ConsoleClient(url());
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
    const admin = await signedInMember(url(), db(), o.session.team.id, 'admin');
    const key = (await admin.client.call('POST', '/console/api/keys', { name: 'admin key' })).json<{ key: string }>().key;
    assert.equal((await me(key)).statusCode, 200);
    const first = (await o.client.call('POST', `/console/api/members/${admin.memberId}/invite`)).json<{ invite_url: string }>();
    const second = await o.client.call('POST', `/console/api/members/${admin.memberId}/invite`);
    assert.equal(second.statusCode, 201, second.body);
    assertError(await new ConsoleClient(url()).call('POST', '/console/api/invites/accept', { token: tokenOf(first.invite_url), password: 'another long password for tests' }), 404, 'invite_invalid');
    await new ConsoleClient(url()).accept(tokenOf(second.json<{ invite_url: string }>().invite_url), 'another long password for tests');
    assert.equal((await o.client.call('DELETE', `/console/api/members/${admin.memberId}`)).statusCode, 200);
    assertError(await me(key), 401, 'invalid_api_key');
  });

  test('the last owner can be neither removed nor demoted; admins cannot touch owners', async () => {
    const o = await ownerOf();
    assertError(await o.client.call('DELETE', `/console/api/members/${o.memberId}`), 409, 'last_owner');
    assertError(await o.client.call('PATCH', `/console/api/members/${o.memberId}`, { role: 'admin' }), 409, 'last_owner');
    const admin = await signedInMember(url(), db(), o.session.team.id, 'admin');
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
    const m = await signedInMember(url(), db(), o.session.team.id, 'member');
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
    const cli = await createInvite(db(), url(), m.memberId);
    assert.equal((await new ConsoleClient(url()).accept(tokenOf(cli.invite_url), 'the cli made this link')).member.id, m.memberId);
  });
});
