// The delivery log and redelivery on /v1 (issue 18), built on the console's queries
// (src/webhooks/admin.ts): GET /v1/webhook-endpoints/{id}/deliveries pages an endpoint's
// deliveries newest first with their attempts, filtered by state; POST .../redeliver sends a
// given-up delivery again with the same event id and body, which a real HTTPS receiver then gets.
// Happy, error and security cases (another team's endpoint, a key without the webhooks scope, a
// member's key), through the SDK and over real sockets.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { Toolrun, ToolrunError } from '@toolrun/sdk';
import { addMember, updateMember } from '../src/teams/repository.js';
import { recordAttempt } from '../src/webhooks/repository.js';
import { answeredWith } from './helpers/app.js';
import { assertError } from './helpers/error-envelope.js';
import { bearer, makeTeam, type TeamFixture } from './helpers/fixtures.js';
import { closeReceivers, Receiver } from './helpers/receiver.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { socketRequest } from './helpers/socket-request.js';
import { testRegistry } from './helpers/test-tools.js';
import { createEndpoint, deliveriesOf, eventOf, Runs, startWebhookWorker, stopWebhookWorkers, webhookTeam, type EndpointJson } from './helpers/webhooks.js';
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

interface DeliveryJson {
  object: string;
  id: string;
  event_id: string;
  event_type: string;
  status: string;
  attempts: { status_code: number | null; duration_ms: number; error: string | null }[];
}

/** A team with an endpoint and three canceled runs: three pending deliveries, the oldest given up after a 500. */
async function withDeliveries(): Promise<{ team: TeamFixture; ep: EndpointJson; ids: string[] }> {
  const team = await webhookTeam(s.database.db);
  const ep = await createEndpoint(s, team.key, receiver.url(`/d-${randomUUID()}`));
  const runs = await new Runs(s, team.key).init();
  for (let i = 0; i < 3; i++) await runs.canceled();
  const rows = await deliveriesOf(s.database.db, ep.id);
  assert.equal(rows.length, 3);
  const oldest = rows[0]!;
  // As if every retry of the oldest had failed: one recorded attempt, given up.
  await recordAttempt(s.database.db.pool, {
    deliveryId: oldest.id,
    endpointId: ep.id,
    eventType: 'run.canceled',
    statusCode: 500,
    error: 'HTTP 500',
    durationMs: 9,
    excerpt: 'boom',
    attemptedAt: new Date(),
  });
  await s.database.db.pool.query("UPDATE webhook_deliveries SET status = 'failed', attempts = 6, finished_at = now() WHERE id = $1::uuid", [oldest.id]);
  return { team, ep, ids: rows.map((r) => r.id) };
}

const client = (key: string) => new Toolrun({ apiKey: key, baseUrl: s.url });

describe('delivery log and redelivery: happy', () => {
  test('newest first with attempts; pages by starting_after; filters by state', async () => {
    const { team, ep, ids } = await withDeliveries();
    const c = client(team.key);
    const all = await c.webhookEndpoints.deliveries(ep.id);
    assert.equal(all.object, 'list');
    assert.equal(all.has_more, false);
    assert.deepEqual(all.data.map((d) => d.id), [...ids].reverse());
    assert.deepEqual(all.data.map((d) => d.status), ['pending', 'pending', 'failed']);
    const failed = all.data[2]!;
    assert.equal(failed.object, 'webhook_delivery');
    assert.equal(failed.event_type, 'run.canceled');
    assert.deepEqual(failed.attempts.map((a) => [a.status_code, a.duration_ms, a.error]), [[500, 9, 'HTTP 500']]);

    const first = await c.webhookEndpoints.deliveries(ep.id, { limit: 2 });
    assert.deepEqual(first.data.map((d) => d.id), [ids[2], ids[1]]);
    assert.equal(first.has_more, true);
    const second = await c.webhookEndpoints.deliveries(ep.id, { limit: 2, starting_after: ids[1] });
    assert.deepEqual(second.data.map((d) => d.id), [ids[0]]);
    assert.equal(second.has_more, false);
    assert.deepEqual((await c.webhookEndpoints.deliveries(ep.id, { status: 'failed' })).data.map((d) => d.id), [ids[0]]);
    assert.deepEqual((await c.webhookEndpoints.deliveries(ep.id, { status: 'pending' })).data.map((d) => d.id), [ids[2], ids[1]]);
    assert.deepEqual((await c.webhookEndpoints.deliveries(ep.id, { status: 'succeeded' })).data, []);
  });

  test('a given-up delivery is sent again with the same event id and body; it then shows succeeded', async () => {
    const { team, ep, ids } = await withDeliveries();
    const c = client(team.key);
    const again = await c.webhookEndpoints.redeliver(ep.id, ids[0]!);
    assert.equal(again.id, ids[0]);
    assert.equal(again.status, 'pending');
    const { rows } = await s.database.db.pool.query<{ event_id: string }>('SELECT event_id FROM webhook_deliveries WHERE id = $1::uuid', [ids[0]]);
    await startWebhookWorker(s);
    await waitFor('the redelivered one to succeed', async () => {
      const list = await c.webhookEndpoints.deliveries(ep.id, { status: 'succeeded' });
      return list.data.some((d) => d.id === ids[0]) ? list : undefined;
    }, 30_000);
    const got = receiver.requests.filter((r) => r.headers['service-delivery'] === ids[0]);
    assert.equal(got.length, 1, 'the receiver got it once, under its delivery id');
    assert.equal(eventOf(got[0]!).id, rows[0]!.event_id, 'with the same event id');
  });
});

describe('delivery log and redelivery: errors', () => {
  test('bad queries are 422 at their loc; a pending delivery is not redeliverable (409); an unknown one is 404', async () => {
    const { team, ep, ids } = await withDeliveries();
    const check = async (query: string, loc: string) => {
      const e = assertError(await socketRequest(s.url, `/v1/webhook-endpoints/${ep.id}/deliveries?${query}`, { headers: bearer(team.key) }), 422, 'invalid_request');
      assert.deepEqual((e.errors ?? []).map((x) => x.loc), [['query', loc]], query);
    };
    await check('limit=0', 'limit');
    await check('limit=101', 'limit');
    await check('status=delivered', 'status');
    await check(`starting_after=${randomUUID()}`, 'starting_after');
    await check(`starting_after=urn:uuid:${randomUUID()}`, 'starting_after');
    const c = client(team.key);
    const pending = await c.webhookEndpoints.redeliver(ep.id, ids[2]!).catch((e: unknown) => e);
    assert.ok(pending instanceof ToolrunError);
    assert.equal(pending.status, 409);
    assert.equal(pending.code, 'delivery_not_redeliverable');
    const unknown = await c.webhookEndpoints.redeliver(ep.id, randomUUID()).catch((e: unknown) => e);
    assert.ok(unknown instanceof ToolrunError);
    assert.equal(unknown.code, 'delivery_not_found');
  });
});

describe('delivery log and redelivery: security', () => {
  test("another team's endpoint answers 404 like an unknown one; no webhooks scope is 403 insufficient_scope; a member's key is 403 insufficient_role", async () => {
    const { ep, ids } = await withDeliveries();
    const stranger = await webhookTeam(s.database.db);
    const noScope = await makeTeam(s.database.db, { scopes: ['read', 'run'] });
    // A member's key: made while the member was an owner, then demoted (another owner takes over).
    const member = await webhookTeam(s.database.db);
    await addMember(s.database.db, { teamId: member.teamId, email: `owner-${member.teamId}@example.test`, role: 'owner' });
    await updateMember(s.database.db, member.memberId, 'member');
    await answeredWith(403, () => s.app.inject({ method: 'GET', url: '/v1/webhook-endpoints', headers: bearer(member.key) }));
    for (const [method, path] of [
      ['GET', `/v1/webhook-endpoints/${ep.id}/deliveries`],
      ['POST', `/v1/webhook-endpoints/${ep.id}/deliveries/${ids[0]}/redeliver`],
    ] as const) {
      const theirs = assertError(await socketRequest(s.url, path, { method, headers: bearer(stranger.key) }), 404, 'webhook_endpoint_not_found');
      const unknown = assertError(
        await socketRequest(s.url, path.replace(ep.id, randomUUID()), { method, headers: bearer(stranger.key) }),
        404,
        'webhook_endpoint_not_found',
      );
      assert.equal(theirs.message.replace(ep.id, 'X'), unknown.message.replace(/[0-9a-f-]{36}/, 'X'));
      assertError(await socketRequest(s.url, path, { method, headers: bearer(noScope.key) }), 403, 'insufficient_scope');
      assertError(await socketRequest(s.url, path.replace(ep.id, randomUUID()), { method, headers: bearer(member.key) }), 403, 'insufficient_role');
    }
  });
});
