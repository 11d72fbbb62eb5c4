import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { createDb } from '../src/db/pool.js';
import type { RunWorker } from '../src/runs/worker.js';
import { AdminError } from '../src/teams/repository.js';
import { listAttempts, redeliverEvent, type AttemptView } from '../src/webhooks/admin.js';
import { createLogger } from '../src/logger.js';
import { createTestDatabase } from './helpers/db.js';
import { cliEnv, killLiveChildren, runCli } from './helpers/process.js';
import type { TeamFixture } from './helpers/fixtures.js';
import { closeReceivers, fail500, ok, Receiver, redirectTo, type Received } from './helpers/receiver.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { testRegistry } from './helpers/test-tools.js';
import { startTestWorker, waitFor } from './helpers/worker.js';
import {
  assertSignedDelivery,
  createEndpoint,
  deliveriesOf,
  eventOfRun,
  patchEndpoint,
  req,
  Runs,
  startWebhookWorker,
  stopWebhookWorker,
  stopWebhookWorkers,
  verifySignature,
  webhookTeam,
  eventOf,
} from './helpers/webhooks.js';

const tools = testRegistry();
const ENV = { TOOLRUN_ALLOW_PRIVATE_NETWORK: '1', TOOLRUN_WEBHOOK_RETRY_DELAYS: '1,1,1', TOOLRUN_WORKER_POLL_MS: '200', TOOLRUN_WEBHOOK_CONCURRENCY: '4' };
let s: TestServer;
let runWorker: RunWorker;
/** The team of the current test (a fresh one each, so the 10-endpoint limit never bites) and its runs. */
let team: TeamFixture;
let runs: Runs;

before(async () => {
  s = await startTestServer({ tools, env: ENV });
  runWorker = await startTestWorker(s, tools);
  await startWebhookWorker(s);
});
beforeEach(async () => {
  team = await webhookTeam(s.database.db);
  runs = await new Runs(s, team.key).init();
});
after(async () => {
  killLiveChildren();
  await stopWebhookWorkers();
  await runWorker.stop(1000);
  await closeReceivers();
  await s.close();
});

const db = () => s.database.db;

/** `toolrun <args>` as a child process on the test database; its one JSON line. */
async function cli<T>(args: string[]): Promise<T> {
  const r = await runCli(args, cliEnv({ DATABASE_URL: s.database.url, TOOLRUN_DATA_DIR: s.config.dataDir }));
  assert.equal(r.code, 0, `toolrun ${args.join(' ')}: ${r.stderr}`);
  return JSON.parse(r.stdout) as T;
}

async function deliveryStatus(endpointId: string, want: string): Promise<void> {
  await waitFor(`delivery of ${endpointId} to be ${want}`, async () => {
    const rows = await deliveriesOf(db(), endpointId);
    return rows.length && rows.every((r) => r.status === want) ? true : undefined;
  });
}

/** Waits until the endpoint has n attempts recorded and its delivery is not leased (between attempts). */
async function attemptsSettled(endpointId: string, n: number) {
  return waitFor(`${n} attempt(s) recorded for ${endpointId}`, async () => {
    const a = await listAttempts(db().pool, endpointId);
    const d = await deliveriesOf(db(), endpointId);
    return a.length >= n && d.every((x) => x.lease_owner === null) ? a : undefined;
  });
}

/**
 * A barrier instead of a sleep: a fresh endpoint (of another team, so the test's endpoints get
 * nothing from it) whose first attempt fails gets its retry only after the worker has passed a
 * due time later than anything scheduled before this call.
 */
async function barrier(): Promise<void> {
  const other = await webhookTeam(db());
  const otherRuns = await new Runs(s, other.key).init();
  const r = (await Receiver.start()).program(fail500, ok);
  await createEndpoint(s, other.key, r.url('/barrier'), ['run.canceled']);
  await otherRuns.canceled();
  await r.waitForRequests(2);
}

describe('webhook deliveries', () => {
  test('a finished run is POSTed once, signed over the raw bytes, with the run as GET shows it', async () => {
    const r = await Receiver.start();
    const e = await createEndpoint(s, team.key, r.url('/hooks/in?source=toolrun'));
    const other = await webhookTeam(db());
    const elsewhere = await createEndpoint(s, other.key, (await Receiver.start()).url());
    const run = await runs.canceled();
    const [got] = await r.waitForRequests(1);
    assert.ok(got);
    const { event, deliveryId } = assertSignedDelivery(got, e.signing_secret, 'run.canceled');
    assert.equal(got.path, '/hooks/in?source=toolrun');
    assert.deepEqual(event.data, { run: await runs.get(run.id) });
    assert.deepEqual(event.data.run, run, 'the run as the cancel answer showed it');
    assert.equal(event.id, (await eventOfRun(db(), run.id)).id);
    await deliveryStatus(e.id, 'delivered');
    const [row] = await deliveriesOf(db(), e.id);
    assert.equal(row?.id, deliveryId);
    assert.equal(r.requests.length, 1);
    assert.deepEqual(await deliveriesOf(db(), elsewhere.id), [], "another team's endpoint gets nothing");

    // The test's own verifier refuses what it must.
    const header = String(got.headers['service-signature']);
    const t = Number(/t=(\d+)/.exec(header)?.[1]);
    const tampered = Buffer.from(got.body);
    const i = tampered.indexOf('"canceled"') + 1;
    tampered[i] = 'C'.charCodeAt(0); // "Canceled": one byte changed, still valid JSON
    assert.deepEqual(verifySignature(e.signing_secret, tampered, header), { ok: false, reason: 'signature mismatch' });
    assert.deepEqual(verifySignature(e.signing_secret, Buffer.from(JSON.stringify(eventOf(got), null, 1)), header).ok, false);
    assert.equal(verifySignature(e.signing_secret.replace(/.$/, (c) => (c === 'a' ? 'b' : 'a')), got.body, header).ok, false);
    assert.equal(verifySignature(e.signing_secret, got.body, header.replace(/t=\d+/, `t=${t + 1}`)).ok, false);
    assert.deepEqual(verifySignature(e.signing_secret, got.body, header, { nowSeconds: t + 301 }), { ok: false, reason: 'timestamp outside the tolerance' });
    assert.equal(verifySignature(e.signing_secret, got.body, header, { nowSeconds: t + 299 }).ok, true);
  });

  test('each endpoint gets the events it subscribed to: succeeded, failed, canceled', async () => {
    const all = await Receiver.start();
    const onlyFailed = await Receiver.start();
    const onlySucceeded = await Receiver.start();
    const eAll = await createEndpoint(s, team.key, all.url());
    const eFailed = await createEndpoint(s, team.key, onlyFailed.url(), ['run.failed']);
    const eSucceeded = await createEndpoint(s, team.key, onlySucceeded.url(), ['run.succeeded']);
    const canceled = await runs.canceled();
    const succeeded = await runs.start('ok');
    const failed = await runs.start('fail');
    const got = await all.waitForRequests(3);
    const byType = new Map(got.map((g) => [String(g.headers['service-event']), g] as const));
    assert.deepEqual([...byType.keys()].sort(), ['run.canceled', 'run.failed', 'run.succeeded']);
    const expectRun = { 'run.canceled': canceled.id, 'run.failed': failed.id, 'run.succeeded': succeeded.id };
    for (const [type, runId] of Object.entries(expectRun)) {
      const { event } = assertSignedDelivery(byType.get(type) as Received, eAll.signing_secret, type);
      assert.deepEqual(event.data.run, await runs.get(runId));
    }
    const [f] = await onlyFailed.waitForRequests(1);
    assert.equal(assertSignedDelivery(f as Received, eFailed.signing_secret, 'run.failed').event.data.run?.id, failed.id);
    const [sc] = await onlySucceeded.waitForRequests(1);
    const succ = assertSignedDelivery(sc as Received, eSucceeded.signing_secret, 'run.succeeded').event.data.run;
    assert.equal(succ?.status, 'succeeded');
    assert.equal(succ?.outputs.length, 1);
    await deliveryStatus(eAll.id, 'delivered');
    // Fan-out happens in the run's transaction: no delivery row means never sent.
    const failedEvent = (await eventOfRun(db(), failed.id)).id;
    assert.deepEqual((await deliveriesOf(db(), eFailed.id)).map((d) => d.event_id), [failedEvent]);
    assert.deepEqual((await deliveriesOf(db(), eSucceeded.id)).map((d) => d.event_id), [(await eventOfRun(db(), succeeded.id)).id]);
    assert.deepEqual([all.requests.length, onlyFailed.requests.length, onlySucceeded.requests.length], [3, 1, 1]);
  });
});

describe('webhook retries', () => {
  test('fails twice, then 204: three attempts, same event, body and delivery id, each signed anew', async () => {
    const r = (await Receiver.start()).program(fail500, fail500, { status: 204, delayMs: 500 });
    const e = await createEndpoint(s, team.key, r.url());
    const run = await runs.canceled();
    const got = await r.waitForRequests(3);
    await deliveryStatus(e.id, 'delivered');
    const signed = got.map((g) => assertSignedDelivery(g, e.signing_secret, 'run.canceled'));
    const [first] = signed;
    assert.ok(first);
    for (const g of got) assert.ok(g.body.equals(got[0]!.body), 'the same body bytes on every attempt');
    assert.deepEqual(new Set(signed.map((x) => x.event.id)), new Set([first.event.id]));
    assert.deepEqual(new Set(signed.map((x) => x.deliveryId)), new Set([first.deliveryId]));
    assert.ok(signed[1]!.t > signed[0]!.t && signed[2]!.t > signed[1]!.t, `t is the time of each attempt: ${signed.map((x) => x.t)}`);
    assert.equal(new Set(got.map((g) => g.headers['service-signature'])).size, 3);
    assert.ok(got[1]!.at - got[0]!.at >= 900 && got[2]!.at - got[1]!.at >= 900, 'retried after the 1 s delay');
    assert.equal(first.event.data.run?.id, run.id);
    const attempts = await listAttempts(db().pool, e.id);
    assert.deepEqual(
      attempts.map((a) => [a.delivery_id, a.event_type, a.status_code, a.error, a.response_excerpt]),
      [
        [first.deliveryId, 'run.canceled', 500, 'answered 500', 'boom'],
        [first.deliveryId, 'run.canceled', 500, 'answered 500', 'boom'],
        [first.deliveryId, 'run.canceled', 204, null, null],
      ],
    );
    assert.deepEqual((await deliveriesOf(db(), e.id)).map((d) => [d.status, d.attempts]), [['delivered', 3]]);
    assert.equal(r.requests.length, 3);
  });

  test('a 302 is a failure and is not followed; a refused connection is retried', async () => {
    const target = await Receiver.start();
    const redirecting = (await Receiver.start()).program(redirectTo(target.url()), { status: 200, body: 'thanks\u0000!' });
    const down = await Receiver.start();
    await down.down();
    const eRedirect = await createEndpoint(s, team.key, redirecting.url());
    const eDown = await createEndpoint(s, team.key, down.url());
    await runs.canceled();
    const [first] = await attemptsSettled(eDown.id, 1);
    assert.equal(first?.status_code, null);
    assert.match(String(first?.error), /ECONNREFUSED/);
    await down.up();
    await redirecting.waitForRequests(2);
    await deliveryStatus(eRedirect.id, 'delivered');
    await deliveryStatus(eDown.id, 'delivered');
    assert.equal(target.requests.length, 0, 'the Location was never fetched');
    const attempts = await listAttempts(db().pool, eRedirect.id);
    assert.deepEqual(attempts.map((a) => [a.status_code, a.response_excerpt]), [
      [302, null],
      [200, 'thanks\uFFFD!'],
    ]);
    assert.match(String(attempts[0]?.error), /redirect/);
    assert.equal(down.requests.length, 1);
    assert.deepEqual((await listAttempts(db().pool, eDown.id)).map((a) => a.status_code).at(-1), 204);
  });

  test('after the last retry the delivery is given up; `toolrun admin webhooks` lists and redelivers it', async () => {
    const r = (await Receiver.start()).otherwise(fail500);
    const e = await createEndpoint(s, team.key, r.url());
    const run = await runs.canceled();
    await deliveryStatus(e.id, 'failed');
    assert.equal(r.requests.length, 4, 'the first attempt and one per delay (1,1,1)');
    assert.deepEqual((await deliveriesOf(db(), e.id)).map((d) => d.attempts), [4]);
    const deliveryId = String(r.requests[0]?.headers['service-delivery']);
    const listed = await cli<{ object: string; data: AttemptView[] }>(['admin', 'webhooks', 'attempts', '--endpoint', e.id]);
    assert.equal(listed.object, 'list');
    assert.deepEqual(listed.data, await listAttempts(db().pool, e.id));
    assert.deepEqual(listed.data.map((a) => [a.delivery_id, a.status_code]), Array(4).fill([deliveryId, 500]));

    const eventId = (await eventOfRun(db(), run.id)).id;
    r.otherwise(ok);
    const out = await cli<{ event_id: string; deliveries: string[] }>(['admin', 'webhooks', 'redeliver', '--event', eventId]);
    assert.deepEqual(out, { event_id: eventId, deliveries: [deliveryId] });
    await r.waitForRequests(5);
    await deliveryStatus(e.id, 'delivered');
    const last = assertSignedDelivery(r.requests[4]!, e.signing_secret, 'run.canceled');
    assert.equal(last.deliveryId, deliveryId);
    assert.ok(r.requests[4]!.body.equals(r.requests[0]!.body));
    await assert.rejects(redeliverEvent(db().pool, eventId), AdminError, 'nothing given up any more');
  });

  test('a receiver that hangs times out after 10 s, and never holds up another endpoint meanwhile', async () => {
    // Five runs while the slow endpoint hangs on everything: more than the worker's 4 slots.
    const slow = (await Receiver.start()).otherwise('hang');
    const fast = await Receiver.start();
    const eSlow = await createEndpoint(s, team.key, slow.url());
    const eFast = await createEndpoint(s, team.key, fast.url());
    const started = Date.now();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await runs.canceled()).id);
    const got = await fast.waitForRequests(5, 5000);
    assert.deepEqual(got.map((g) => eventOf(g).data.run?.id).sort(), [...ids].sort());
    assert.ok(slow.open.length >= 1, 'the slow endpoint is still hanging');
    assert.deepEqual(await listAttempts(db().pool, eSlow.id), [], 'no attempt to the slow endpoint has ended yet');
    assert.ok(Date.now() - started < 9000, 'the fast endpoint did not wait for a slow timeout');
    await deliveryStatus(eFast.id, 'delivered');

    const timedOut = await waitFor('the timed-out attempt', async () => (await listAttempts(db().pool, eSlow.id))[0]);
    assert.equal(timedOut.status_code, null);
    assert.match(String(timedOut.error), /within 10000 ms/);
    assert.ok(timedOut.duration_ms >= 9_990, `duration ${timedOut.duration_ms}`);
    assert.equal(eventOf(slow.requests[0]!).data.run?.id, ids[0]);
    // Let the rest through: what hangs now is answered, later attempts get 204.
    slow.otherwise(ok).release(ok);
    await deliveryStatus(eSlow.id, 'delivered');
    const deliveredRuns = new Set(slow.requests.filter((r) => r.answered).map((r) => eventOf(r).data.run?.id));
    assert.deepEqual([...deliveredRuns].sort(), [...ids].sort());
  });
});

describe('webhook endpoint states', () => {
  test('pausing or deleting an endpoint drops its pending retries', async () => {
    const toPause = (await Receiver.start()).otherwise(fail500);
    const toDelete = (await Receiver.start()).otherwise(fail500);
    const eP = await createEndpoint(s, team.key, toPause.url());
    const eD = await createEndpoint(s, team.key, toDelete.url());
    await runs.canceled();
    await attemptsSettled(eP.id, 1);
    await attemptsSettled(eD.id, 1);
    assert.equal((await patchEndpoint(s, team.key, eP.id, { enabled: false })).enabled, false);
    assert.equal((await req(s, team.key, 'DELETE', `/v1/webhook-endpoints/${eD.id}`)).statusCode, 200);
    assert.deepEqual((await deliveriesOf(db(), eP.id)).map((d) => d.status), ['dropped']);
    assert.deepEqual((await deliveriesOf(db(), eD.id)).map((d) => d.status), ['dropped']);
    await barrier();
    assert.equal(toPause.requests.length, 1, 'no attempt after the pause');
    assert.equal(toDelete.requests.length, 1, 'no attempt after the delete');
    assert.equal((await listAttempts(db().pool, eD.id)).length, 1);
    await runs.canceled();
    assert.equal((await deliveriesOf(db(), eD.id)).length, 1, 'a deleted endpoint gets no new deliveries');
  });

  test('runs finished while paused are never sent; after resuming, later runs are; new endpoints get nothing older', async () => {
    const r = await Receiver.start();
    const e = await createEndpoint(s, team.key, r.url());
    await patchEndpoint(s, team.key, e.id, { enabled: false });
    const whilePaused = await runs.canceled();
    await patchEndpoint(s, team.key, e.id, { enabled: true });
    const late = await Receiver.start();
    const eLate = await createEndpoint(s, team.key, late.url());
    const afterResume = await runs.canceled();
    const [got] = await r.waitForRequests(1);
    assert.equal(eventOf(got as Received).data.run?.id, afterResume.id);
    const [lateGot] = await late.waitForRequests(1);
    assert.equal(eventOf(lateGot as Received).data.run?.id, afterResume.id);
    await deliveryStatus(e.id, 'delivered');
    const pausedEvent = (await eventOfRun(db(), whilePaused.id)).id;
    assert.ok(!(await deliveriesOf(db(), e.id)).some((d) => d.event_id === pausedEvent), 'no delivery was made for the paused run');
    assert.equal((await deliveriesOf(db(), eLate.id)).length, 1);
    await barrier();
    assert.deepEqual([r.requests.length, late.requests.length], [1, 1]);
  });
});

describe('webhook durability', () => {
  test('a restart between attempts loses nothing: the retry is delivered once by the new process', async () => {
    const database = await createTestDatabase();
    const r = (await Receiver.start()).program(fail500, ok);
    const first = await startTestServer({ database, tools, env: { ...ENV, TOOLRUN_WEBHOOK_RETRY_DELAYS: '2' } });
    const w1 = await startWebhookWorker(first);
    const t = await webhookTeam(database.db);
    const e = await createEndpoint(first, t.key, r.url());
    await (await new Runs(first, t.key).init()).canceled();
    await waitFor('first attempt recorded', async () => ((await listAttempts(database.db.pool, e.id)).length === 1 ? true : undefined));
    await waitFor('lease released', async () => ((await deliveriesOf(database.db, e.id))[0]?.lease_owner === null ? true : undefined));
    await stopWebhookWorker(w1);
    await first.close();
    await database.db.close();
    assert.equal(r.requests.length, 1);

    // A new process: its own pool, app and worker on the same database.
    const fresh = { ...database, db: createDb({ connectionString: database.url, logger: createLogger('silent'), max: 4 }) };
    const second = await startTestServer({ database: fresh, tools, env: ENV });
    const w2 = await startWebhookWorker(second);
    try {
      await waitFor('delivery after restart', async () => ((await deliveriesOf(fresh.db, e.id))[0]?.status === 'delivered' ? true : undefined));
      assert.equal(r.requests.length, 2);
      const [a, b] = r.requests.map((g) => assertSignedDelivery(g, e.signing_secret, 'run.canceled'));
      assert.equal(a?.deliveryId, b?.deliveryId);
      assert.ok(r.requests[0]!.body.equals(r.requests[1]!.body));
      assert.deepEqual((await listAttempts(fresh.db.pool, e.id)).map((x) => x.status_code), [500, 204]);
      assert.deepEqual((await deliveriesOf(fresh.db, e.id)).map((d) => [d.status, d.attempts]), [['delivered', 2]]);
    } finally {
      await stopWebhookWorker(w2);
      await second.close();
      await fresh.db.close();
    }
  });
});
