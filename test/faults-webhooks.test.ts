// Fault: bad webhook receivers, all at once, beside a healthy one. Team A has four endpoints: one
// down (connection refused), one slow (answers only after 11 s), one redirecting (302), one
// answering 500. Team B has one healthy endpoint. Team A's runs end first, then team B's: B's
// deliveries all arrive while the slow endpoint's first attempts still hang (so they never wait
// behind its 10 s deadline), and every bad delivery is tried on the TOOLRUN_WEBHOOK_RETRY_DELAYS
// schedule (1 s, then 2 s), then given up, each attempt recorded with what went wrong.
// (test/webhooks-delivery.test.ts covers each misbehaviour alone, and recovery after it.)
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { listAttempts, type AttemptView } from '../src/webhooks/admin.js';
import { closeReceivers, fail500, Receiver, redirectTo } from './helpers/receiver.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { testRegistry } from './helpers/test-tools.js';
import {
  assertSignedDelivery,
  createEndpoint,
  deliveriesOf,
  eventOf,
  Runs,
  startWebhookWorker,
  stopWebhookWorkers,
  webhookTeam,
} from './helpers/webhooks.js';
import { waitFor } from './helpers/worker.js';

const DELAYS = [1, 2];
const ENV = {
  TOOLRUN_ALLOW_PRIVATE_NETWORK: '1',
  TOOLRUN_WEBHOOK_RETRY_DELAYS: DELAYS.join(','),
  // Two deliveries per endpoint at once: the slow endpoint's two deliveries hang side by side.
  TOOLRUN_WEBHOOK_CONCURRENCY: '8',
  TOOLRUN_WORKER_POLL_MS: '200',
};

let s: TestServer;

before(async () => {
  s = await startTestServer({ tools: testRegistry(), env: ENV });
  await startWebhookWorker(s);
}, { timeout: 60_000 });

after(async () => {
  await stopWebhookWorkers();
  await closeReceivers();
  await s?.close();
}, { timeout: 60_000 });

/** Attempts of an endpoint, grouped by delivery, in order. */
function byDelivery(attempts: AttemptView[]): AttemptView[][] {
  const groups = new Map<string, AttemptView[]>();
  for (const a of attempts) groups.set(a.delivery_id, [...(groups.get(a.delivery_id) ?? []), a]);
  return [...groups.values()];
}

describe('webhook receivers down, slow, redirecting and failing, beside a healthy one', () => {
  test('the healthy endpoint is not held up; the bad ones are retried on schedule, then given up', { timeout: 240_000 }, async () => {
    const db = s.database.db;
    const teamA = await webhookTeam(db);
    const teamB = await webhookTeam(db);
    const runsA = await new Runs(s, teamA.key).init();
    const runsB = await new Runs(s, teamB.key).init();

    const down = await Receiver.start();
    await down.down();
    const slow = (await Receiver.start()).otherwise({ status: 204, delayMs: 11_000 });
    const target = await Receiver.start();
    const redirecting = (await Receiver.start()).otherwise(redirectTo(target.url()));
    const failing = (await Receiver.start()).otherwise(fail500);
    const healthy = await Receiver.start();
    const bad = {
      down: { r: down, e: await createEndpoint(s, teamA.key, down.url('/down')) },
      slow: { r: slow, e: await createEndpoint(s, teamA.key, slow.url('/slow')) },
      redirect: { r: redirecting, e: await createEndpoint(s, teamA.key, redirecting.url('/redirect')) },
      fail: { r: failing, e: await createEndpoint(s, teamA.key, failing.url('/fail')) },
    };
    const good = await createEndpoint(s, teamB.key, healthy.url('/ok'));

    // Team A's runs end first, so their deliveries are due before team B's.
    const aRuns = [(await runsA.canceled()).id, (await runsA.canceled()).id];
    await slow.waitForRequests(2);
    const bRuns: string[] = [];
    for (let i = 0; i < 5; i++) bRuns.push((await runsB.canceled()).id);

    // All of B's deliveries arrive while the slow endpoint's first attempts still hang.
    const got = await healthy.waitForRequests(5, 9_000);
    assert.equal(slow.open.length, 2, 'both deliveries to the slow endpoint are still waiting for an answer');
    assert.deepEqual(await listAttempts(db.pool, bad.slow.e.id), [], 'no attempt to the slow endpoint has ended yet');
    assert.deepEqual(got.map((g) => assertSignedDelivery(g, good.signing_secret, 'run.canceled').event.data.run?.id).sort(), [...bRuns].sort());
    await waitFor('the healthy deliveries to be recorded', async () => {
      const d = await deliveriesOf(db, good.id);
      return d.length === 5 && d.every((x) => x.status === 'delivered') ? true : undefined;
    });
    assert.deepEqual((await deliveriesOf(db, good.id)).map((d) => d.attempts), [1, 1, 1, 1, 1]);

    // Every bad delivery ends given up after the first attempt and one retry per delay.
    for (const [name, { e }] of Object.entries(bad)) {
      await waitFor(
        `the ${name} endpoint's deliveries to be given up`,
        async () => {
          const d = await deliveriesOf(db, e.id);
          return d.length === 2 && d.every((x) => x.status === 'failed') ? true : undefined;
        },
        90_000,
      );
      assert.deepEqual((await deliveriesOf(db, e.id)).map((d) => d.attempts), [3, 3], `${name}: 1 + ${DELAYS.length} attempts per delivery`);
    }

    const expect: Record<keyof typeof bad, (a: AttemptView) => void> = {
      down: (a) => {
        assert.equal(a.status_code, null);
        assert.match(String(a.error), /ECONNREFUSED/);
      },
      slow: (a) => {
        assert.equal(a.status_code, null);
        assert.match(String(a.error), /within 10000 ms/);
        assert.ok(a.duration_ms >= 9_990, `cut off at the 10 s deadline, not before (${a.duration_ms} ms)`);
      },
      redirect: (a) => {
        assert.equal(a.status_code, 302);
        assert.match(String(a.error), /redirect \(302\) not followed/);
      },
      fail: (a) => {
        assert.equal(a.status_code, 500);
        assert.equal(a.error, 'answered 500');
        assert.equal(a.response_excerpt, 'boom');
      },
    };
    for (const [name, { r, e }] of Object.entries(bad) as [keyof typeof bad, (typeof bad)[keyof typeof bad]][]) {
      const deliveries = byDelivery(await listAttempts(db.pool, e.id));
      assert.equal(deliveries.length, 2, `${name}: two deliveries`);
      for (const attempts of deliveries) {
        assert.equal(attempts.length, 3);
        for (const a of attempts) expect[name](a);
        // Each retry waited at least its delay after the previous attempt ended.
        for (const [k, delay] of DELAYS.entries()) {
          const prev = attempts[k]!;
          const ended = Date.parse(prev.attempted_at) + prev.duration_ms;
          const gap = Date.parse(attempts[k + 1]!.attempted_at) - ended;
          assert.ok(gap >= delay * 1000 - 50, `${name}: retry ${k + 1} came ${gap} ms after the attempt before, under its ${delay} s delay`);
        }
      }
      // What reached the receiver: every attempt but the refused ones, only team A's runs.
      assert.equal(r.requests.length, name === 'down' ? 0 : 6, `${name}: requests received`);
      for (const g of r.requests) assert.ok(aRuns.includes(eventOf(g).data.run?.id ?? ''), `${name} got only team A's events`);
    }
    assert.equal(target.requests.length, 0, 'the redirect was never followed');
    assert.equal(healthy.requests.length, 5, 'the healthy endpoint got each delivery once');
  });
});
