// Webhook deliveries over kept-alive TLS connections: consecutive deliveries to an endpoint reuse
// one connection, endpoints on other hosts or ports never share one, an idle connection is closed
// after the idle time and every one when the worker stops, and a receiver that answers past the
// deadline or closes the connection does not spoil the next delivery. The receivers keep idle
// connections for a minute, so a connection that closes sooner was closed by the sender.
// (test/outbound-keepalive.test.ts covers the pool itself: DNS changes, vetting, bounds.)
import assert from 'node:assert/strict';
import { after, afterEach, before, beforeEach, describe, test } from 'node:test';
import type { RunWorker } from '../src/runs/worker.js';
import { listAttempts } from '../src/webhooks/admin.js';
import type { TeamFixture } from './helpers/fixtures.js';
import { closeReceivers, ok, Receiver, type Received } from './helpers/receiver.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { testRegistry } from './helpers/test-tools.js';
import { startTestWorker, waitFor } from './helpers/worker.js';
import {
  assertSignedDelivery,
  createEndpoint,
  deliveriesOf,
  Runs,
  startWebhookWorker,
  stopWebhookWorker,
  stopWebhookWorkers,
  webhookTeam,
} from './helpers/webhooks.js';

const tools = testRegistry();
// One delivery per endpoint at a time, so consecutive deliveries can reuse one connection.
const ENV = { TOOLRUN_ALLOW_PRIVATE_NETWORK: '1', TOOLRUN_WEBHOOK_RETRY_DELAYS: '1,1,1', TOOLRUN_WORKER_POLL_MS: '200', TOOLRUN_WEBHOOK_CONCURRENCY: '4' };
const MINUTE = 60_000;
let s: TestServer;
let runWorker: RunWorker;
let team: TeamFixture;
let runs: Runs;

before(async () => {
  s = await startTestServer({ tools, env: ENV });
  runWorker = await startTestWorker(s, tools);
});
beforeEach(async () => {
  team = await webhookTeam(s.database.db);
  runs = await new Runs(s, team.key).init();
});
// Each test runs its own worker (its own pool bounds), stopped before the next test starts.
afterEach(() => stopWebhookWorkers());
after(async () => {
  await stopWebhookWorkers();
  await runWorker.stop(1000);
  await closeReceivers();
  await s.close();
});

/** A receiver that keeps idle connections open for a minute. */
const receiver = async () => (await Receiver.start()).keepAliveFor(MINUTE);

async function delivered(endpointId: string, n: number): Promise<void> {
  await waitFor(`${n} deliveries to ${endpointId}`, async () => {
    const rows = await deliveriesOf(s.database.db, endpointId);
    return rows.length === n && rows.every((r) => r.status === 'delivered') ? true : undefined;
  });
}

const connectionsOf = (got: Received[]) => new Set(got.map((g) => g.connection));

describe('kept-alive connections', () => {
  test('consecutive deliveries to an endpoint go over one TLS connection; stopping the worker closes it', async () => {
    const w = await startWebhookWorker(s, {}, { idleMs: MINUTE });
    const r = await receiver();
    const e = await createEndpoint(s, team.key, r.url('/hook'));
    for (let i = 1; i <= 4; i++) {
      await runs.canceled();
      await r.waitForRequests(i);
    }
    await delivered(e.id, 4);
    for (const g of r.requests) assertSignedDelivery(g, e.signing_secret, 'run.canceled');
    assert.equal(r.connections, 1, 'one TLS handshake for four deliveries');
    assert.deepEqual(connectionsOf(r.requests), new Set([1]));
    assert.equal(r.openConnections, 1, 'kept open between deliveries');
    await stopWebhookWorker(w);
    await waitFor('the stopped worker to close its connection', async () => (r.openConnections === 0 ? true : undefined));
  });

  test('endpoints on other hosts or ports never share a connection', async () => {
    await startWebhookWorker(s, {}, { idleMs: MINUTE });
    const r1 = await receiver();
    const r2 = await receiver();
    // The same receiver under two host names (one address and port), and another port.
    const byIp = await createEndpoint(s, team.key, `https://127.0.0.1:${r1.portNumber}/ip`);
    const byName = await createEndpoint(s, team.key, `https://localhost:${r1.portNumber}/name`);
    const other = await createEndpoint(s, team.key, r2.url('/other'));
    for (let i = 1; i <= 3; i++) {
      await runs.canceled();
      await r1.waitForRequests(2 * i);
      await r2.waitForRequests(i);
    }
    for (const e of [byIp, byName, other]) await delivered(e.id, 3);
    const ip = r1.requests.filter((g) => g.path === '/ip');
    const name = r1.requests.filter((g) => g.path === '/name');
    assert.equal(ip.length, 3);
    assert.equal(name.length, 3);
    for (const g of ip) assert.equal(g.headers.host, `127.0.0.1:${r1.portNumber}`);
    for (const g of name) assert.equal(g.headers.host, `localhost:${r1.portNumber}`);
    const ipConnections = connectionsOf(ip);
    const nameConnections = connectionsOf(name);
    assert.deepEqual([...ipConnections].filter((c) => nameConnections.has(c)), [], 'no connection carried both host names');
    assert.deepEqual([ipConnections.size, nameConnections.size], [1, 1], 'each host name kept its own connection');
    assert.equal(r1.connections, 2);
    assert.equal(r2.connections, 1);
    assert.ok(r2.requests.every((g) => g.path === '/other'));
  });

  test('an idle connection is closed after the idle time; the next delivery opens a new one', async () => {
    const w = await startWebhookWorker(s, {}, { idleMs: 300 });
    const r = await receiver();
    const e = await createEndpoint(s, team.key, r.url('/hook'));
    await runs.canceled();
    await r.waitForRequests(1);
    await waitFor('the idle connection to close', async () => (r.openConnections === 0 && w.agents.idleSockets === 0 ? true : undefined), 10_000);
    await runs.canceled();
    await r.waitForRequests(2);
    await delivered(e.id, 2);
    assert.deepEqual(
      r.requests.map((g) => g.connection),
      [1, 2],
    );
  });
});

describe('a bad receiver does not spoil the pool', () => {
  test('an answer past the deadline: that connection is dropped and the retry is delivered on a new one', async () => {
    await startWebhookWorker(s, { timeoutMs: 1000 }, { idleMs: MINUTE });
    const r = (await receiver()).program(ok, { status: 204, delayMs: 3000 }, ok);
    const e = await createEndpoint(s, team.key, r.url('/hook'));
    await runs.canceled();
    await r.waitForRequests(1);
    await delivered(e.id, 1);
    await runs.canceled();
    await r.waitForRequests(3);
    await delivered(e.id, 2);
    const attempts = await listAttempts(s.database.db.pool, e.id);
    assert.deepEqual(
      attempts.map((a) => [a.status_code, a.error]),
      [
        [204, null],
        [null, 'no complete answer within 1000 ms'],
        [204, null],
      ],
    );
    assert.deepEqual(
      r.requests.map((g) => g.connection),
      [1, 1, 2],
      'the slow answer came on the kept connection; the retry on a new one',
    );
    await waitFor('the cut-off connection to be closed', async () => (r.openConnections === 1 ? true : undefined));
  });

  test('a receiver that closes the connection unanswered: the attempt fails, the retry is delivered', async () => {
    await startWebhookWorker(s, {}, { idleMs: MINUTE });
    const r = (await receiver()).program(ok, 'close', 'close', ok);
    const e = await createEndpoint(s, team.key, r.url('/hook'));
    await runs.canceled();
    await r.waitForRequests(1);
    await delivered(e.id, 1);
    await runs.canceled();
    await r.waitForRequests(4);
    await delivered(e.id, 2);
    const attempts = await listAttempts(s.database.db.pool, e.id);
    assert.equal(attempts.length, 3);
    assert.deepEqual(attempts[0]?.status_code, 204);
    assert.equal(attempts[1]?.status_code, null);
    assert.match(String(attempts[1]?.error), /^connection failed: ECONNRESET/);
    assert.equal(attempts[2]?.status_code, 204);
    // The kept connection was cut: the attempt went once more on a new connection (also cut),
    // and the retry found no spoiled connection to reuse.
    assert.deepEqual(
      r.requests.map((g) => g.connection),
      [1, 1, 2, 3],
    );
    for (const g of r.requests) assertSignedDelivery(g, e.signing_secret, 'run.canceled');
  });
});
