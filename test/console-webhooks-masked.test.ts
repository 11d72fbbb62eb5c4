// Members (not owners or admins) see webhook URLs masked in the console (issue 25 item 9b): the
// scheme and host, never the path or query, which often carry the receiver's own token. /v1
// shows endpoints to owners' and admins' keys only; the console follows, server-side.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { maskedUrl } from '../src/console/routes-webhooks.js';
import { signedInMember } from './helpers/console.js';
import { consoleSettingsSuite } from './helpers/console-settings.js';
import { closeReceivers, Receiver } from './helpers/receiver.js';

let receiver: Receiver;

const { db, ownerOf, url } = consoleSettingsSuite({
  async setUp() {
    receiver = await Receiver.start();
  },
  tearDown: closeReceivers,
});

interface WebhookList {
  data: { id: string; url: string }[];
  can_manage: boolean;
}

describe('webhook URLs in the console', () => {
  test('a member sees scheme and host only; owners and admins see the whole URL', async () => {
    const o = await ownerOf();
    const secretPath = '/hooks/T0KEN-in-path?token=s3cret&x=1';
    const full = receiver.url(secretPath);
    const created = await o.client.call('POST', '/console/api/webhooks', { url: full });
    assert.equal(created.statusCode, 201, created.body);
    const id = created.json<{ id: string }>().id;
    const host = new URL(full).host;

    const member = await signedInMember(url(), db(), o.session.team.id, 'member');
    const res = await member.client.call('GET', '/console/api/webhooks');
    assert.equal(res.statusCode, 200, res.body);
    const seen = res.json<WebhookList>();
    assert.deepEqual(seen.data.map((e) => [e.id, e.url]), [[id, `https://${host}/…`]]);
    assert.doesNotMatch(res.body, /T0KEN|s3cret|token=/);
    // Nothing else a member can read about the endpoint names its URL either.
    const deliveries = await member.client.call('GET', `/console/api/webhooks/${id}/deliveries`);
    assert.equal(deliveries.statusCode, 200, deliveries.body);
    assert.doesNotMatch(deliveries.body, /T0KEN|s3cret|hooks\//);

    for (const role of ['admin'] as const) {
      const manager = await signedInMember(url(), db(), o.session.team.id, role);
      assert.deepEqual((await manager.client.call('GET', '/console/api/webhooks')).json<WebhookList>().data.map((e) => e.url), [full]);
    }
    assert.deepEqual((await o.client.call('GET', '/console/api/webhooks')).json<WebhookList>().data.map((e) => e.url), [full]);
  });

  test('the mask keeps scheme, host and port, and drops credentials, path, query and fragment', () => {
    assert.equal(maskedUrl('https://user:pw@hooks.example.com:8443/a/b?c=d#e'), 'https://hooks.example.com:8443/…');
    assert.equal(maskedUrl('https://hooks.example.com'), 'https://hooks.example.com/…');
    assert.equal(maskedUrl('not a url'), '…');
  });
});
