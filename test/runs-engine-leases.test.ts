// Leases with in-process workers: a lapsed lease is retaken and the old holder is fenced off,
// max_attempts, and graceful stop handing leases back. Real processes killed: runs-crash.test.ts.
// The suites run side by side, each on its own server and database.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { failRun, succeedRun } from '../src/runs/transitions.js';
import { assertSettledOnce, engineSuite, runState, stoppedLine, TeamClient, waitFinal, waitFor, workDirs, type Engine } from './helpers/runs-harness.js';

/** Waits for the run to be running under a lease on attempt `attempt`; returns the lease token. */
async function leasedOn(e: Engine, runId: string, attempt: number, timeoutMs = 5000): Promise<string> {
  return waitFor(
    `run ${runId} to be running on attempt ${attempt}`,
    async () => {
      const r = await runState(e.db(), runId);
      return r.status === 'running' && r.attempts === attempt && r.lease_owner ? r.lease_owner : undefined;
    },
    timeoutMs,
  );
}

/** What a lease lapsing looks like to the others: its expiry in the past (the holder still alive). */
async function lapse(e: Engine, runId: string, token: string): Promise<void> {
  const { rowCount } = await e.db().query(
    `UPDATE runs SET lease_expires_at = now() - interval '1 second' WHERE id = $1::uuid AND lease_owner = $2::text AND status = 'running'`,
    [runId, token],
  );
  assert.equal(rowCount, 1, 'the lease was still held by that token');
}

describe('run engine: leases (in-process workers)', { concurrency: true }, () => {
  engineSuite('lapsed and unrenewable leases', (e) => {
    test('a lapsed lease is retaken; the old holder stops and can neither renew nor settle', async () => {
      const c = await TeamClient.create(e.s);
      await e.workers.start({ concurrency: 2 });
      const run = await c.start('slow');
      const old = await leasedOn(e, run.id, 1);
      await e.workers.start({ concurrency: 1 });
      await lapse(e, run.id, old);
      const fresh = await leasedOn(e, run.id, 2);
      assert.notEqual(fresh, old, 'the retaken run has a new lease token');
      // The old execution learns at its next renewal (a third of the lease) that it lost the run.
      const line = await waitFor('the old execution to stop', async () => stoppedLine(e.s.logs.text(), run.id, 1), 3000);
      assert.equal(line.reason, 'lease_lost');
      // Nor can it settle the run, whatever it still tries.
      assert.equal(await e.s.database.db.tx((tx) => succeedRun(tx, run.id, old, [], 3600)), null);
      assert.equal(await e.s.database.db.tx((tx) => failRun(tx, run.id, 'late failure', old)), null);
      const done = await waitFinal(e.db(), run.id, 10_000);
      assert.equal(done.status, 'succeeded', done.error ?? '');
      assert.equal(done.attempts, 2);
      await assertSettledOnce(e.db(), done);
      assert.equal(stoppedLine(e.s.logs.text(), run.id, 2), undefined, 'the second execution was not stopped');
    });

    test('a worker that cannot renew its lease stops the tool on its own before the lease lapses', async () => {
      const c = await TeamClient.create(e.s);
      const w = await e.workers.start({ concurrency: 1 });
      const run = await c.start('hang');
      await leasedOn(e, run.id, 1);
      await waitFor('the tool to run', async () => (w.busy === 1 ? true : undefined));
      // Renewals now wait behind this row lock, as they would for a database the worker cannot
      // reach; claims skip the locked row, so nobody else can take the run meanwhile either.
      const locker = await e.s.database.db.pool.connect();
      try {
        await locker.query('BEGIN');
        await locker.query('SELECT id FROM runs WHERE id = $1::uuid FOR UPDATE', [run.id]);
        // Deadline: the lease (3 s) from its last renewal, plus slack for a loaded machine.
        const line = await waitFor('the execution to fence itself', async () => stoppedLine(e.s.logs.text(), run.id, 1), 5000);
        assert.equal(line.reason, 'lease_lost');
        await waitFor('the worker to let the run go', async () => (w.busy === 0 ? true : undefined), 1000);
        assert.deepEqual(workDirs(run.id), []);
      } finally {
        await locker.query('ROLLBACK');
        locker.release();
      }
      assert.equal((await c.api('POST', `/v1/runs/${run.id}/cancel`)).status, 200);
    });
  });

  engineSuite('max_attempts and graceful stop', (e) => {
    test('a run whose lease lapses max_attempts times fails with a readable error; hold released', async () => {
      const c = await TeamClient.create(e.s);
      // One worker with room for two: it could retake the run while its own first execution still runs.
      await e.workers.start({ concurrency: 2 });
      const run = await c.start('hang');
      for (let attempt = 1; attempt <= 3; attempt++) {
        const token = await leasedOn(e, run.id, attempt);
        await lapse(e, run.id, token);
        const line = await waitFor(`execution ${attempt} to stop`, async () => stoppedLine(e.s.logs.text(), run.id, attempt), 3000);
        assert.equal(line.reason, 'lease_lost');
      }
      const done = await waitFinal(e.db(), run.id, 5000);
      assert.equal(done.status, 'failed');
      assert.equal(done.attempts, 3);
      assert.match(done.error ?? '', /interrupted 3 times/);
      assert.match(done.error ?? '', /hold was released/);
      await assertSettledOnce(e.db(), done);
      await waitFor('every execution to be gone', async () => (workDirs(run.id).length === 0 ? true : undefined), 3000);
      assert.equal((await c.get(run.id)).status, 'failed');
    });

    test('graceful stop: after the grace the lease is handed back uncounted and another worker takes it at once', async () => {
      const c = await TeamClient.create(e.s);
      // 1. Alone: after stop() the hung run is unowned and its attempt not counted.
      const a = await e.workers.start({ concurrency: 1 });
      const hung = await c.start('hang');
      await leasedOn(e, hung.id, 1);
      await waitFor('the tool to run', async () => (a.busy === 1 ? true : undefined));
      await a.stop(200);
      const handed = await runState(e.db(), hung.id);
      assert.equal(handed.status, 'running');
      assert.equal(handed.lease_owner, null, 'the lease was handed back');
      assert.equal(handed.attempts, 0, 'the interrupted attempt does not count');
      assert.deepEqual(workDirs(hung.id), []);
      assert.equal((await c.api('POST', `/v1/runs/${hung.id}/cancel`)).status, 200);

      // 2. With an idle worker that only notifications wake (60 s poll and lease): it takes over at once.
      const a2 = await e.workers.start({ concurrency: 1 });
      const run = await c.start('slow');
      await leasedOn(e, run.id, 1);
      assert.equal(a2.busy, 1);
      const b = await e.workers.start({ concurrency: 1, env: { TOOLRUN_WORKER_POLL_MS: '60000', TOOLRUN_LEASE_SECONDS: '60' } });
      await a2.stop(200);
      await waitFor('the idle worker to take the handed-back run', async () => (b.busy === 1 ? true : undefined), 3000);
      const done = await waitFinal(e.db(), run.id, 10_000);
      assert.equal(done.status, 'succeeded', done.error ?? '');
      assert.equal(done.attempts, 1, 'the handed-back attempt was not counted');
      await assertSettledOnce(e.db(), done);
    });
  });
});
