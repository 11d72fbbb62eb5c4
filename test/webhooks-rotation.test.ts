// Secret rotation (POST /v1/webhook-endpoints/{id}/rotate-secret) end to end: real deliveries to
// an HTTPS receiver, checked with Stripe's own verifier (stripe.webhooks.constructEvent) and the
// SDK's, while the old secret is live, once it has expired, and after a second rotation; and the
// route's refusals (scope, role, another team, bad bodies).
import assert from 'node:assert/strict';
import { createHmac, randomUUID } from 'node:crypto';
import { after, before, beforeEach, describe, test } from 'node:test';
import Stripe from 'stripe';
import { Toolrun, verifyWebhook } from '@toolrun/sdk';
import type { TeamFixture } from './helpers/fixtures.js';
import { closeReceivers, Receiver, type Received } from './helpers/receiver.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { extraKey, memberKey } from './helpers/team-objects.js';
import { testRegistry } from './helpers/test-tools.js';
import { createEndpoint, deliveriesOf, eventOf, req, Runs, startWebhookWorker, stopWebhookWorkers, webhookTeam, type EndpointJson } from './helpers/webhooks.js';

const ENV = { TOOLRUN_ALLOW_PRIVATE_NETWORK: '1', TOOLRUN_WEBHOOK_RETRY_DELAYS: '1,1,1', TOOLRUN_WORKER_POLL_MS: '200', TOOLRUN_WEBHOOK_CONCURRENCY: '4' };
const stripe = new Stripe('sk_test_x');
let s: TestServer;
let team: TeamFixture;
let runs: Runs;

before(async () => {
  s = await startTestServer({ tools: testRegistry(), env: ENV });
  await startWebhookWorker(s);
});
beforeEach(async () => {
  team = await webhookTeam(s.database.db);
  runs = await new Runs(s, team.key).init();
});
after(async () => {
  await stopWebhookWorkers();
  await closeReceivers();
  await s.close();
});

type Rotated = EndpointJson & { signing_secret: string; previous_secret_expires_at?: string };

async function rotate(key: string, id: string, body?: unknown): Promise<Rotated> {
  const res = await req(s, key, 'POST', `/v1/webhook-endpoints/${id}/rotate-secret`, body);
  assert.equal(res.statusCode, 200, res.body);
  return res.json<Rotated>();
}

const header = (r: Received) => String(r.headers['service-signature']);
const v1s = (r: Received) => header(r).split(',').filter((p) => p.startsWith('v1=')).map((p) => p.slice(3));
const hmac = (secret: string, r: Received) => createHmac('sha256', secret).update(`${/^t=(\d+)/.exec(header(r))?.[1]}.`).update(r.body).digest('hex');

/** Stripe's verifier accepts the delivery with this secret (and returns its event). */
function stripeAccepts(r: Received, secret: string): void {
  const event = stripe.webhooks.constructEvent(r.body, header(r), secret);
  assert.equal(event.id, eventOf(r).id);
}

function stripeRefuses(r: Received, secret: string): void {
  assert.throws(() => stripe.webhooks.constructEvent(r.body, header(r), secret), Stripe.errors.StripeSignatureVerificationError);
}

/** Ends a run (canceled) and returns its delivery as the receiver got it. */
async function nextDelivery(r: Receiver): Promise<Received> {
  const before = r.requests.length;
  await runs.canceled();
  const got = (await r.waitForRequests(before + 1))[before];
  assert.ok(got);
  assert.equal(got.headers['service-event'], 'run.canceled');
  return got;
}

async function storedSecrets(id: string): Promise<{ signing_secret: string; previous_signing_secret: string | null; previous_secret_expires_at: Date | null }> {
  const { rows } = await s.database.db.pool.query<{ signing_secret: string; previous_signing_secret: string | null; previous_secret_expires_at: Date | null }>(
    'SELECT signing_secret, previous_signing_secret, previous_secret_expires_at FROM webhook_endpoints WHERE id = $1::uuid',
    [id],
  );
  assert.ok(rows[0]);
  return rows[0];
}

describe('rotating a signing secret', () => {
  test('while the old secret is live, every delivery (and ping) carries both, new first, and Stripe accepts either', async () => {
    const r = await Receiver.start();
    const e = await createEndpoint(s, team.key, r.url(), ['run.canceled']);
    const rotated = await rotate(team.key, e.id, { expire_previous_in_seconds: 86_400 });
    assert.match(rotated.signing_secret, /^whsec_[A-Za-z0-9_-]{40}$/);
    assert.notEqual(rotated.signing_secret, e.signing_secret);
    assert.deepEqual(Object.keys(rotated).sort(), ['created_at', 'enabled', 'events', 'id', 'object', 'previous_secret_expires_at', 'signing_secret', 'url']);
    const { signing_secret: _new, ...shown } = rotated;
    const stored = await storedSecrets(e.id);
    assert.equal(stored.signing_secret, rotated.signing_secret);
    assert.equal(stored.previous_signing_secret, e.signing_secret, 'the previous secret is kept as the current one is');
    assert.equal(stored.previous_secret_expires_at?.toISOString(), rotated.previous_secret_expires_at);
    const list = (await req(s, team.key, 'GET', '/v1/webhook-endpoints')).json<{ data: EndpointJson[] }>();
    assert.deepEqual(list.data, [shown], 'the list shows until when the previous secret signs, never a secret');

    const got = await nextDelivery(r);
    assert.match(header(got), /^t=\d+,v1=[0-9a-f]{64},v1=[0-9a-f]{64}$/);
    assert.deepEqual(v1s(got), [hmac(rotated.signing_secret, got), hmac(e.signing_secret, got)], 'one v1 per live secret, the new one first');
    stripeAccepts(got, rotated.signing_secret);
    stripeAccepts(got, e.signing_secret);
    stripeRefuses(got, `whsec_${'x'.repeat(40)}`);
    // The SDK's verifier: any matching v1 is enough.
    assert.equal(verifyWebhook(got.body, header(got), rotated.signing_secret).id, eventOf(got).id);
    assert.equal(verifyWebhook(got.body, header(got), e.signing_secret).id, eventOf(got).id);

    const ping = await req(s, team.key, 'POST', `/v1/webhook-endpoints/${e.id}/test`);
    assert.equal(ping.json<{ delivered: boolean }>().delivered, true, ping.body);
    const pinged = r.requests.find((x) => x.headers['service-event'] === 'ping');
    assert.ok(pinged);
    stripeAccepts(pinged, rotated.signing_secret);
    stripeAccepts(pinged, e.signing_secret);
  });

  test('expire_previous_in_seconds 0: only the new secret signs; an expired previous one stops signing too', async () => {
    const r = await Receiver.start();
    const e = await createEndpoint(s, team.key, r.url(), ['run.canceled']);
    const rotated = await rotate(team.key, e.id, { expire_previous_in_seconds: 0 });
    assert.equal(rotated.previous_secret_expires_at, undefined);
    assert.equal((await storedSecrets(e.id)).previous_signing_secret, null, 'nothing is kept that would never sign');
    const got = await nextDelivery(r);
    assert.match(header(got), /^t=\d+,v1=[0-9a-f]{64}$/);
    stripeAccepts(got, rotated.signing_secret);
    stripeRefuses(got, e.signing_secret);

    // A previous secret whose time has come (its expiry moved to the past rather than waited for).
    const again = await rotate(team.key, e.id, { expire_previous_in_seconds: 3600 });
    assert.ok(again.previous_secret_expires_at);
    assert.equal(v1s(await nextDelivery(r)).length, 2);
    await s.database.db.pool.query(`UPDATE webhook_endpoints SET previous_secret_expires_at = now() - interval '1 second' WHERE id = $1::uuid`, [e.id]);
    const afterExpiry = await nextDelivery(r);
    assert.equal(v1s(afterExpiry).length, 1);
    stripeAccepts(afterExpiry, again.signing_secret);
    stripeRefuses(afterExpiry, rotated.signing_secret);
    const list = (await req(s, team.key, 'GET', '/v1/webhook-endpoints')).json<{ data: Record<string, unknown>[] }>();
    assert.equal(list.data[0]?.previous_secret_expires_at, undefined, 'an expired previous secret is not shown');
  });

  test('a second rotation replaces the previous secret: at most two sign at once', async () => {
    const r = await Receiver.start();
    const e = await createEndpoint(s, team.key, r.url(), ['run.canceled']);
    const first = await rotate(team.key, e.id, { expire_previous_in_seconds: 86_400 });
    const second = await rotate(team.key, e.id);
    const got = await nextDelivery(r);
    assert.deepEqual(v1s(got), [hmac(second.signing_secret, got), hmac(first.signing_secret, got)]);
    stripeAccepts(got, second.signing_secret);
    stripeAccepts(got, first.signing_secret);
    stripeRefuses(got, e.signing_secret);
  });

  test('no body is the default (86400 s); the SDK rotates with expirePreviousInSeconds', async () => {
    const e = await createEndpoint(s, team.key, 'https://93.184.215.14/hooks');
    const bare = await rotate(team.key, e.id);
    // Bounds, not the clock: the expiry is 86400 s after the rotation's transaction began.
    const { rows } = await s.database.db.pool.query<{ ok: boolean }>(
      `SELECT previous_secret_expires_at BETWEEN now() + interval '86400 seconds' - interval '1 hour' AND now() + interval '86400 seconds' AS ok
         FROM webhook_endpoints WHERE id = $1::uuid`,
      [e.id],
    );
    assert.equal(rows[0]?.ok, true);
    const client = new Toolrun({ apiKey: team.key, baseUrl: s.url });
    const viaSdk = await client.webhookEndpoints.rotateSecret(e.id, { expirePreviousInSeconds: 0 });
    assert.match(viaSdk.signing_secret, /^whsec_/);
    const stored = await storedSecrets(e.id);
    assert.equal(stored.signing_secret, viaSdk.signing_secret);
    assert.equal(stored.previous_signing_secret, null);
    assert.notEqual(viaSdk.signing_secret, bare.signing_secret);
    const withDefault = await client.webhookEndpoints.rotateSecret(e.id);
    assert.equal((await storedSecrets(e.id)).previous_signing_secret, viaSdk.signing_secret);
    assert.ok(withDefault.previous_secret_expires_at);
  });
});

describe('rotate-secret refusals', () => {
  const path = (id: string) => `/v1/webhook-endpoints/${id}/rotate-secret`;

  async function fieldErrors(body: unknown): Promise<{ loc: (string | number)[]; code: string | null }[]> {
    const e = await createEndpoint(s, team.key, 'https://93.184.215.14/hooks');
    const res = await req(s, team.key, 'POST', path(e.id), body);
    assert.equal(res.statusCode, 422, res.body);
    const error = res.json<{ error: { code: string; errors: { loc: (string | number)[]; code: string | null }[] } }>().error;
    assert.equal(error.code, 'invalid_request');
    assert.equal((await storedSecrets(e.id)).signing_secret, e.signing_secret, 'a refused rotation changes nothing');
    return error.errors.map(({ loc, code }) => ({ loc, code }));
  }

  test('bad bodies: 422 naming the field', async () => {
    const field = ['body', 'expire_previous_in_seconds'];
    assert.deepEqual(await fieldErrors({ expire_previous_in_seconds: -1 }), [{ loc: field, code: 'out_of_range' }]);
    assert.deepEqual(await fieldErrors({ expire_previous_in_seconds: 86_401 }), [{ loc: field, code: 'out_of_range' }]);
    assert.deepEqual(await fieldErrors({ expire_previous_in_seconds: '60' }), [{ loc: field, code: 'wrong_type' }]);
    assert.deepEqual(await fieldErrors({ expire_previous_in_seconds: 1.5 }), [{ loc: field, code: 'wrong_type' }]);
    assert.deepEqual(await fieldErrors({ expire_previous_in_seconds: null }), [{ loc: field, code: 'wrong_type' }]);
    assert.deepEqual(await fieldErrors({ expire_in: 60 }), [{ loc: ['body', 'expire_in'], code: 'unknown_field' }]);
    assert.deepEqual(await fieldErrors([]), [{ loc: ['body'], code: 'wrong_type' }]);
    const res = await req(s, team.key, 'POST', path('not-a-uuid'), {});
    assert.equal(res.statusCode, 422);
    assert.deepEqual(res.json<{ error: { errors: { loc: unknown }[] } }>().error.errors.map((x) => x.loc), [['path', 'endpoint_id']]);
  });

  test('without the webhooks scope 403 insufficient_scope; a member key 403 insufficient_role', async () => {
    const e = await createEndpoint(s, team.key, 'https://93.184.215.14/hooks');
    const noScope = await extraKey(s.database.db, team, 'no webhooks', ['read', 'run']);
    const res = await req(s, noScope.key, 'POST', path(e.id), {});
    assert.equal(res.statusCode, 403);
    const error = res.json<{ error: { code: string; details: unknown } }>().error;
    assert.equal(error.code, 'insufficient_scope');
    assert.deepEqual(error.details, { required_scope: 'webhooks' });
    const member = await memberKey(s.database.db, team, `member-${randomUUID()}@example.test`);
    const refused = await req(s, member.key, 'POST', path(e.id), {});
    assert.equal(refused.statusCode, 403);
    assert.equal(refused.json<{ error: { code: string } }>().error.code, 'insufficient_role');
    assert.equal((await storedSecrets(e.id)).signing_secret, e.signing_secret);
  });

  test("another team's endpoint is 404 like an unknown id, and its secret is unchanged; so is a deleted one", async () => {
    const e = await createEndpoint(s, team.key, 'https://93.184.215.14/hooks');
    const other = await webhookTeam(s.database.db);
    const theirs = await req(s, other.key, 'POST', path(e.id), { expire_previous_in_seconds: 0 });
    const unknownId = randomUUID();
    const unknown = await req(s, other.key, 'POST', path(unknownId), { expire_previous_in_seconds: 0 });
    assert.equal(theirs.statusCode, 404);
    assert.equal(unknown.statusCode, 404);
    const body = (res: typeof theirs, id: string) => {
      const { error } = res.json<{ error: { code: string; request_id: string | null; message: string } }>();
      return { ...error, request_id: null, message: error.message.replace(id, '<id>') };
    };
    assert.deepEqual(body(theirs, e.id), body(unknown, unknownId));
    assert.equal(body(theirs, e.id).code, 'webhook_endpoint_not_found');
    const stored = await storedSecrets(e.id);
    assert.equal(stored.signing_secret, e.signing_secret);
    assert.equal(stored.previous_signing_secret, null);
    assert.deepEqual(await deliveriesOf(s.database.db, e.id), []);
    assert.equal((await req(s, team.key, 'DELETE', `/v1/webhook-endpoints/${e.id}`)).statusCode, 200);
    assert.equal((await req(s, team.key, 'POST', path(e.id), {})).statusCode, 404);
  });
});
