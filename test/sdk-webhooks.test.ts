// webhookEndpoints.* against the real server, and verifyWebhook on real deliveries (a ping and a
// run.succeeded sent by a WebhookWorker to an HTTPS receiver), plus tampered, re-serialized,
// wrongly keyed, old, future and malformed signatures.
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { Toolrun, ToolrunError, verifyWebhook, WebhookVerificationError, type WebhookVerificationReason } from '@toolrun/sdk';
import type { RunWorker } from '../src/runs/worker.js';
import type { TeamFixture } from './helpers/fixtures.js';
import { makePng } from './helpers/media.js';
import { closeReceivers, Receiver, type Received } from './helpers/receiver.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { testRegistry } from './helpers/test-tools.js';
import { startTestWorker } from './helpers/worker.js';
import { startWebhookWorker, stopWebhookWorkers, webhookTeam } from './helpers/webhooks.js';

const tools = testRegistry();
let s: TestServer;
let runWorker: RunWorker;
let team: TeamFixture;
let receiver: Receiver;

before(async () => {
  s = await startTestServer({ tools, env: { TOOLRUN_ALLOW_PRIVATE_NETWORK: '1', TOOLRUN_WORKER_POLL_MS: '200' } });
  runWorker = await startTestWorker(s, tools);
  await startWebhookWorker(s);
  team = await webhookTeam(s.database.db);
  receiver = await Receiver.start();
});
after(async () => {
  await stopWebhookWorkers();
  await runWorker.stop(1000);
  await closeReceivers();
  await s.close();
});

const sdk = () => new Toolrun({ apiKey: team.key, baseUrl: s.url, testing: { minPollIntervalMs: 50 } });
const header = (r: Received) => String(r.headers['service-signature']);
const sign = (secret: string, t: number, body: string | Buffer) => createHmac('sha256', secret).update(`${t}.`).update(body).digest('hex');

function rejects(reason: WebhookVerificationReason, fn: () => unknown): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof WebhookVerificationError, String(err));
    assert.equal(err.reason, reason, err.message);
    return true;
  });
}

describe('webhook endpoints and real deliveries', () => {
  let secret = '';
  let endpointId = '';
  let ping: Received;
  let delivery: Received;

  test('create, list, update, test: a real ping verifies', async () => {
    const created = await sdk().webhookEndpoints.create({ url: receiver.url('/sdk'), events: ['run.succeeded'] });
    assert.equal(created.object, 'webhook_endpoint');
    assert.match(created.signing_secret, /^whsec_/);
    assert.deepEqual(created.events, ['run.succeeded']);
    secret = created.signing_secret;
    endpointId = created.id;

    const list = await sdk().webhookEndpoints.list();
    assert.deepEqual(list.data.map((e) => e.id), [endpointId]);
    assert.equal('signing_secret' in (list.data[0] ?? {}), false, 'the secret is shown only once');

    const paused = await sdk().webhookEndpoints.update(endpointId, { enabled: false });
    assert.equal(paused.enabled, false);
    const resumed = await sdk().webhookEndpoints.update(endpointId, { enabled: true, events: ['run.succeeded', 'run.failed'] });
    assert.equal(resumed.enabled, true);
    assert.deepEqual(resumed.events, ['run.succeeded', 'run.failed']);

    const result = await sdk().webhookEndpoints.test(endpointId);
    assert.equal(result.object, 'webhook_test');
    assert.equal(result.delivered, true);
    assert.equal(result.response_code, 204);
    const first = (await receiver.waitForRequests(1))[0];
    assert.ok(first);
    ping = first;
    assert.equal(ping.headers['service-delivery'], result.delivery_id);
    const event = verifyWebhook(ping.body, header(ping), secret);
    assert.equal(event.type, 'ping');
    assert.equal(event.object, 'event');
    assert.equal(event.data.webhook_endpoint_id, endpointId);
  });

  test('a run.succeeded delivery verifies and carries the run', async () => {
    const file = await sdk().files.upload(await makePng(16, 16));
    const run = await sdk().runs.wait(await sdk().runs.start('test_copy', { inputs: { image: [file.id] } }));
    assert.equal(run.status, 'succeeded');
    const second = (await receiver.waitForRequests(2))[1];
    assert.ok(second);
    delivery = second;
    assert.equal(delivery.headers['service-event'], 'run.succeeded');
    const event = verifyWebhook(delivery.body, header(delivery), secret);
    assert.equal(event.type, 'run.succeeded');
    assert.equal(event.data.run?.id, run.id);
    assert.equal(event.data.run?.status, 'succeeded');
    assert.deepEqual(event.data.run?.outputs, run.outputs);
    // The raw body as a string works as well as the bytes.
    assert.equal(verifyWebhook(delivery.body.toString('utf8'), header(delivery), secret).id, event.id);
  });

  test('tampered, re-serialized or wrongly keyed deliveries are refused', () => {
    const tampered = Buffer.from(delivery.body.toString('utf8').replace('"succeeded"', '"failed"'));
    assert.notDeepEqual(tampered, delivery.body);
    rejects('signature_mismatch', () => verifyWebhook(tampered, header(delivery), secret));
    const reserialized = JSON.stringify(JSON.parse(delivery.body.toString('utf8')), null, 2);
    rejects('signature_mismatch', () => verifyWebhook(reserialized, header(delivery), secret));
    rejects('signature_mismatch', () => verifyWebhook(delivery.body, header(delivery), `${secret}x`));
    rejects('signature_mismatch', () => verifyWebhook(ping.body, header(delivery), secret));
  });

  test('old and future timestamps are refused beyond the tolerance, accepted within it', () => {
    const t = Number(/t=(\d+)/.exec(header(delivery))?.[1]);
    assert.ok(t > 0);
    const at = (seconds: number) => new Date(seconds * 1000);
    assert.equal(verifyWebhook(delivery.body, header(delivery), secret, { now: at(t + 299) }).type, 'run.succeeded');
    rejects('timestamp_too_old', () => verifyWebhook(delivery.body, header(delivery), secret, { now: at(t + 301) }));
    rejects('timestamp_in_future', () => verifyWebhook(delivery.body, header(delivery), secret, { now: at(t - 301) }));
    rejects('timestamp_too_old', () => verifyWebhook(delivery.body, header(delivery), secret, { now: (t + 61) * 1000, toleranceSeconds: 60 }));
    assert.equal(verifyWebhook(delivery.body, header(delivery), secret, { now: (t + 3000) * 1000, toleranceSeconds: 3600 }).type, 'run.succeeded');
  });

  test('any one of several v1 values may match; malformed and missing headers are refused', () => {
    const t = Math.floor(Date.now() / 1000);
    const body = '{"id":"evt_1","object":"event","type":"run.exploded","created_at":"2030-01-01T00:00:00Z","data":{"whatever":1},"extra":true}';
    const good = sign(secret, t, body);
    const event = verifyWebhook(body, `t=${t},v1=${'0'.repeat(64)},v0=ignored,v1=${good}`, secret);
    assert.equal(event.type, 'run.exploded', 'an unknown event type is passed through');
    assert.equal(event.extra, true, 'unknown fields too');
    assert.equal(verifyWebhook(body, [`t=${t}`, `v1=${good}`], secret).id, 'evt_1', 'a header given as a list');
    rejects('missing_signature', () => verifyWebhook(body, undefined, secret));
    rejects('missing_signature', () => verifyWebhook(body, '', secret));
    rejects('malformed_signature', () => verifyWebhook(body, `v1=${good}`, secret));
    rejects('malformed_signature', () => verifyWebhook(body, `t=${t}`, secret));
    rejects('malformed_signature', () => verifyWebhook(body, `t=${t},t=${t},v1=${good}`, secret));
    rejects('malformed_signature', () => verifyWebhook(body, `t=soon,v1=${good}`, secret));
    rejects('signature_mismatch', () => verifyWebhook(body, `t=${t},v1=${good.slice(0, 63)}`, secret));
    const notJson = 'not json';
    rejects('invalid_payload', () => verifyWebhook(notJson, `t=${t},v1=${sign(secret, t, notJson)}`, secret));
  });

  test('delete; then the endpoint is gone', async () => {
    const deleted = await sdk().webhookEndpoints.delete(endpointId);
    assert.deepEqual(deleted, { object: 'deleted', id: endpointId, deleted: true });
    assert.deepEqual((await sdk().webhookEndpoints.list()).data, []);
    const err = await sdk().webhookEndpoints.test(endpointId).catch((e: unknown) => e);
    assert.ok(err instanceof ToolrunError);
    assert.equal(err.code, 'webhook_endpoint_not_found');
  });
});
