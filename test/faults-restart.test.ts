// Fault: the whole service (`toolrun serve`, API and workers in one process) stopped with runs
// queued and webhook deliveries pending, then started again on the same database and port. Once
// with SIGTERM (graceful: the running run is handed back), once with SIGKILL (nothing graceful:
// its lease lapses). Before the stop: one run succeeded and one was canceled, both with their
// delivery failing (the receiver answers 500) and scheduled for a retry; one run is mid-work
// (a brand kit whose page is held open) and two wait in the queue behind it (one worker slot).
// After the restart every run ends once, every delivery is delivered once, nothing is lost.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createTestDatabase, type TestDatabase } from './helpers/db.js';
import { api, assertTeamBalanced, HoldSite, toolrunEnv, uploadReadyFile } from './helpers/faults.js';
import { makePng } from './helpers/media.js';
import { cleanupDataDir, CliProcess, killLiveChildren, makeDataDir } from './helpers/process.js';
import { closeReceivers, fail500, ok, Receiver } from './helpers/receiver.js';
import { assertSettledOnce, runState, waitFinal, waitFor } from './helpers/runs-harness.js';
import { freePort } from './helpers/server.js';
import { assertSignedDelivery, deliveriesOf, webhookTeam } from './helpers/webhooks.js';

const dataDirs: string[] = [];
let site: HoldSite;
let png: Buffer;

before(async () => {
  site = await new HoldSite().start();
  png = await makePng(64, 48);
}, { timeout: 60_000 });

after(async () => {
  killLiveChildren();
  await closeReceivers();
  await site?.close();
  for (const d of dataDirs) await cleanupDataDir(d);
}, { timeout: 60_000 });

/** `toolrun serve` on a fixed port and database; resolves once it listens with its workers. */
async function serve(env: Record<string, string>): Promise<CliProcess> {
  const proc = new CliProcess(['serve'], toolrunEnv(env));
  await proc.waitForLog('toolrun API listening', 90_000);
  return proc;
}

const succeededIn = (p: CliProcess, runId: string) => p.logs().filter((l) => l.msg === 'run succeeded' && l.run_id === runId).length;

/**
 * Pending deliveries of the endpoint, none leased and none due within 3 s: the stop comes before
 * the next attempt, so a SIGKILL never strands one mid-attempt (its lease would hold it 60 s).
 */
async function betweenAttempts(database: TestDatabase, endpointId: string, n: number): Promise<void> {
  await waitFor(
    `${n} pending deliveries between attempts`,
    async () => {
      const { rows } = await database.db.pool.query<{ n: number }>(
        `SELECT count(*)::integer AS n FROM webhook_deliveries
          WHERE endpoint_id = $1::uuid AND status = 'pending' AND attempts >= 1 AND lease_owner IS NULL
            AND next_attempt_at > now() + interval '3 seconds'`,
        [endpointId],
      );
      return rows[0]?.n === n ? true : undefined;
    },
    30_000,
    20,
  );
}

async function restartCase(signal: 'SIGTERM' | 'SIGKILL'): Promise<void> {
  const database = await createTestDatabase();
  const dataDir = makeDataDir('faults-restart');
  dataDirs.push(dataDir);
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const env = {
    DATABASE_URL: database.url,
    TOOLRUN_DATA_DIR: dataDir,
    PORT: String(port),
    TOOLRUN_WORKER_CONCURRENCY: '1',
    TOOLRUN_LEASE_SECONDS: '3',
    TOOLRUN_WORKER_POLL_MS: '500',
    TOOLRUN_WEBHOOK_RETRY_DELAYS: '5,5,5,5,5',
    TOOLRUN_SHUTDOWN_GRACE_SECONDS: '1',
  };
  const team = await webhookTeam(database.db);
  const receiver = (await Receiver.start()).otherwise(fail500);
  const first = await serve(env);
  let second: CliProcess | null = null;
  try {
    // API, run worker and webhook worker listen on the process's one connection (src/db/listen.ts).
    const listening = await database.db.pool.query<{ application_name: string }>(
      `SELECT application_name FROM pg_stat_activity WHERE datname = current_database() AND query ILIKE 'LISTEN%'`,
    );
    assert.deepEqual(listening.rows.map((r) => r.application_name), ['toolrun-api-listen']);
    const endpoint = await api<{ id: string; signing_secret: string }>(url, team.key, 'POST', '/v1/webhook-endpoints', { url: receiver.url() });
    assert.equal(endpoint.status, 201, JSON.stringify(endpoint.body));
    const fileId = await uploadReadyFile(url, team.key, png, 'a.png', 'image/png');
    const start = async (tool: string, inputs: Record<string, unknown>) => {
      const res = await api<{ id: string }>(url, team.key, 'POST', `/v1/tools/${tool}/runs`, { inputs });
      assert.equal(res.status, 202, JSON.stringify(res.body));
      return res.body.id;
    };

    // A run that succeeds and one canceled; both deliveries fail and wait for a retry.
    const done = await start('image_color_grade', { image: [fileId], preset: 'cool_matte' });
    assert.equal((await waitFinal(database.db.pool, done, 60_000)).status, 'succeeded');
    // The run to cancel waits on a held page, so the cancel always finds it unfinished (a quick
    // tool could succeed before the cancel arrives).
    site.holding = true;
    const canceled = await start('brand_kit_extract', { url: site.url });
    const cancel = await api<{ status: string }>(url, team.key, 'POST', `/v1/runs/${canceled}/cancel`);
    assert.equal(cancel.body.status, 'canceled', JSON.stringify(cancel.body));
    site.release();
    await betweenAttempts(database, endpoint.body.id, 2);
    // The one worker slot taken by a brand kit whose page hangs (the stop comes well within the
    // page's 10 s fetch limit); two runs queue behind it.
    site.holding = true;
    const busy = await start('brand_kit_extract', { url: site.url });
    await waitFor('the brand kit to be fetching its page', async () => (site.waiting > 0 ? true : undefined), 60_000);
    const queued = [await start('image_color_grade', { image: [fileId] }), await start('image_upscale', { image: [fileId] })];
    for (const id of queued) assert.equal((await runState(database.db.pool, id)).status, 'queued');
    assert.equal((await runState(database.db.pool, busy)).status, 'running');

    const exit = await first.stop(signal, 60_000);
    assert.deepEqual(exit, signal === 'SIGTERM' ? { code: 0, signal: null } : { code: null, signal: 'SIGKILL' });
    const beforeRestart = receiver.requests.length;
    assert.ok(receiver.requests.every((r) => r.answered), 'no attempt was cut off by the stop');
    const pending = await deliveriesOf(database.db, endpoint.body.id);
    assert.deepEqual(pending.map((d) => d.status), ['pending', 'pending'], 'both deliveries are still to be made');
    for (const id of queued) assert.equal((await runState(database.db.pool, id)).status, 'queued', 'queued runs stayed queued');
    const handedOver = await runState(database.db.pool, busy);
    assert.equal(handedOver.status, 'running');
    if (signal === 'SIGTERM') {
      // Handed back on the way out: its lease is gone and the attempt did not count.
      assert.equal(handedOver.lease_owner, null);
      assert.equal(handedOver.attempts, 0);
    } else {
      assert.notEqual(handedOver.lease_owner, null, 'a SIGKILLed worker keeps its lease until it lapses');
    }

    receiver.otherwise(ok);
    site.release();
    second = await serve(env);
    const restarted = second;
    const runs = [done, busy, ...queued, canceled];
    for (const id of runs) {
      const r = await waitFinal(database.db.pool, id, 90_000);
      assert.equal(r.status, id === canceled ? 'canceled' : 'succeeded', `run ${id}: ${r.error ?? ''}`);
      if (id === canceled) assert.ok(r.attempts <= 1, `run ${id} was canceled queued or running`);
      else assert.equal(r.attempts, id === busy && signal === 'SIGKILL' ? 2 : 1, `attempts of run ${id}`);
      await assertSettledOnce(database.db.pool, r);
      if (id === canceled) continue;
      // The log line follows the commit through a pipe: wait for it, then count.
      const finished = () => succeededIn(first, id) + succeededIn(restarted, id);
      await waitFor(`the log line of run ${id}`, async () => (finished() > 0 ? true : undefined), 10_000);
      assert.equal(finished(), 1, `run ${id} was finished once`);
    }
    assert.equal(succeededIn(first, busy), 0);
    await assertTeamBalanced(database.db.pool, team.teamId);

    // One delivery per finished run, each delivered once after the restart.
    await waitFor(
      'every delivery to be delivered',
      async () => {
        const d = await deliveriesOf(database.db, endpoint.body.id);
        return d.length === runs.length && d.every((x) => x.status === 'delivered') ? d : undefined;
      },
      60_000,
    );
    const afterRestart = receiver.requests.slice(beforeRestart);
    const runIds = afterRestart.map((g) => assertSignedDelivery(g, endpoint.body.signing_secret, String(g.headers['service-event'])).event.data.run?.id);
    assert.deepEqual([...runIds].sort(), [...runs].sort(), 'each run delivered once after the restart');
    assert.equal(new Set(afterRestart.map((g) => g.headers['service-delivery'])).size, runs.length, 'no delivery sent twice');
    const retried = new Set(receiver.requests.slice(0, beforeRestart).map((g) => g.headers['service-delivery']));
    assert.equal(retried.size, 2, 'the two deliveries that failed before the stop');
    for (const id of retried) assert.ok(afterRestart.some((g) => g.headers['service-delivery'] === id), `delivery ${id} was retried after the restart`);

    const stopped = await restarted.stop('SIGTERM', 60_000);
    assert.deepEqual(stopped, { code: 0, signal: null });
  } finally {
    first.child.kill('SIGKILL');
    if (second) second.child.kill('SIGKILL');
    await database.db.close();
  }
}

describe('the whole service restarted with runs queued and deliveries pending', { concurrency: 1, timeout: 600_000 }, () => {
  test('SIGTERM: the running run is handed back; every run ends once and every delivery is made once', { timeout: 240_000 }, async () => {
    await restartCase('SIGTERM');
  });

  test('SIGKILL: the running run is taken back after its lease; every run ends once and every delivery is made once', { timeout: 240_000 }, async () => {
    await restartCase('SIGKILL');
  });
});
