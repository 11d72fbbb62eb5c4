// Cache-Control: no-store (issue 25 item 9a) on every answer that carries an API key, a signing
// secret or an invite link, on /v1 and in the console, and on every console answer behind a
// session: no browser or proxy cache may keep them. Over real sockets.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { AnsweredRequest } from './helpers/error-envelope.js';
import { signedInMember } from './helpers/console.js';
import { consoleSettingsSuite } from './helpers/console-settings.js';
import { bearer } from './helpers/fixtures.js';
import { closeReceivers, Receiver } from './helpers/receiver.js';
import { socketRequest } from './helpers/socket-request.js';
import { webhookTeam } from './helpers/webhooks.js';

let receiver: Receiver;

const { db, ownerOf, url } = consoleSettingsSuite({
  async setUp() {
    receiver = await Receiver.start();
  },
  tearDown: closeReceivers,
});

function assertNoStore(res: AnsweredRequest, what: string): void {
  assert.ok(res.statusCode < 300, `${what}: ${res.statusCode} ${res.body}`);
  assert.equal(res.headers['cache-control'], 'no-store', `${what}: Cache-Control`);
}

describe('no-store', () => {
  test('/v1: creating a webhook endpoint and rotating its secret', async () => {
    const team = await webhookTeam(db());
    const call = (method: string, path: string, body?: unknown) =>
      socketRequest(url(), path, {
        method,
        headers: { ...bearer(team.key), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    const created = await call('POST', '/v1/webhook-endpoints', { url: receiver.url('/v1') });
    assertNoStore(created, 'POST /v1/webhook-endpoints');
    assert.match(created.json<{ signing_secret: string }>().signing_secret, /^whsec_/);
    const id = created.json<{ id: string }>().id;
    const rotated = await call('POST', `/v1/webhook-endpoints/${id}/rotate-secret`, {});
    assertNoStore(rotated, 'rotate-secret');
    assert.match(rotated.json<{ signing_secret: string }>().signing_secret, /^whsec_/);
  });

  test('console: key and webhook creation, invite links, and every GET behind a session', async () => {
    const o = await ownerOf();
    const key = await o.client.call('POST', '/console/api/keys', { name: 'cached?' });
    assertNoStore(key, 'POST /console/api/keys');
    assert.match(key.json<{ key: string }>().key, /^svc_test_/);
    const hook = await o.client.call('POST', '/console/api/webhooks', { url: receiver.url('/console') });
    assertNoStore(hook, 'POST /console/api/webhooks');
    const endpointId = hook.json<{ id: string }>().id;
    const added = await o.client.call('POST', '/console/api/members', { email: `cache-${Date.now()}@example.test`, role: 'member' });
    assertNoStore(added, 'POST /console/api/members');
    const memberId = added.json<{ member: { id: string }; invite_url: string }>().member.id;
    const link = await o.client.call('POST', `/console/api/members/${memberId}/invite`);
    assertNoStore(link, 'POST /console/api/members/:id/invite');
    assert.match(link.json<{ invite_url: string }>().invite_url, /#token=/);
    const member = await signedInMember(url(), db(), o.session.team.id, 'member');
    for (const path of [
      '/console/api/session',
      '/console/api/overview',
      '/console/api/keys',
      '/console/api/webhooks',
      `/console/api/webhooks/${endpointId}/deliveries`,
      '/console/api/members',
      '/console/api/runs',
      '/console/api/tools',
      '/console/api/ledger',
      '/console/api/usage',
    ]) {
      assertNoStore(await o.client.call('GET', path), `GET ${path} (owner)`);
      assertNoStore(await member.client.call('GET', path), `GET ${path} (member)`);
    }
  });
});
