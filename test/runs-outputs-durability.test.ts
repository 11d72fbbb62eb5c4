// A charged run never loses its outputs, and an output that cannot be served is not charged:
// the success COMMIT whose answer is lost (a real TCP cut after the server committed) leaves the
// outputs stored and served; a success transaction the server ends (57P01) is tried again, and a
// database away for every try leaves the run to a later attempt instead of failing it; the output
// check sweep tries unreadable outputs again with a growing delay while it verifies the ones
// behind them, and gives up after the last attempt; an output that fails its check for good
// refunds its run once, however many outputs fail and however many sweeps run at once, and
// answers 404 output_not_found.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import pg from 'pg';
import { test } from 'node:test';
import { createDb } from '../src/db/pool.js';
import { checkDelaySeconds, OUTPUT_CHECK_POLICY, sweepOutputChecks, verifyOutputs } from '../src/runs/output-checks.js';
import { ledgerDrift } from '../src/sparks/ledger.js';
import { PgCommitCut } from './helpers/pg-commit-cut.js';
import { assertSettledOnce, engineSuite, ledgerKinds, runState, TeamClient, waitFinal, waitFor, type RunBody } from './helpers/runs-harness.js';
import { testLogger } from './helpers/test-logs.js';

interface ErrorJson {
  error: { code: string; message: string; errors: unknown; details: unknown; request_id: string };
}

const e = engineSuite('outputs of charged runs', () => {
  const log = testLogger('silent');
  const url = (c: TeamClient, runId: string, assetId: string) => c.api('GET', `/v1/runs/${runId}/outputs/${assetId}/url`);

  async function assertNotFound(c: TeamClient, runId: string, assetId: string): Promise<ErrorJson['error']> {
    const res = await url(c, runId, assetId);
    const body = (await res.json()) as ErrorJson;
    assert.equal(res.status, 404, JSON.stringify(body));
    assert.equal(body.error.code, 'output_not_found');
    assert.equal(body.error.errors, null);
    assert.equal(body.error.request_id, res.headers.get('x-request-id'));
    return body.error;
  }

  /** Runs test_copy to success, one at a time, and waits until its outputs passed the executor's check. */
  async function succeeded(c: TeamClient, copies: number): Promise<RunBody> {
    const run = await c.start('ok', { copies });
    const done = await waitFinal(e.db(), run.id);
    assert.equal(done.status, 'succeeded', done.error ?? '');
    await waitFor(`the outputs of ${run.id} to be checked`, async () => {
      const { rows } = await e.db().query<{ n: number }>(
        `SELECT count(*)::integer AS n FROM run_outputs WHERE run_id = $1::uuid AND status = 'ready'`,
        [run.id],
      );
      return rows[0]?.n === copies ? true : undefined;
    });
    return c.get(run.id);
  }

  const outputRows = async (runIds: string[]) =>
    (
      await e.db().query<{ id: string; run_id: string; storage_key: string; status: string; check_attempts: number; delay: number | null }>(
        `SELECT id, run_id, storage_key, status, check_attempts, extract(epoch FROM next_check_at - last_checked_at)::float8 AS delay
           FROM run_outputs WHERE run_id = ANY ($1::uuid[]) ORDER BY created_at, position`,
        [runIds],
      )
    ).rows;

  const storedKeys = async (runIds: string[]) =>
    (await e.db().query<{ storage_key: string }>(`SELECT storage_key FROM run_outputs WHERE run_id = ANY ($1::uuid[])`, [runIds])).rows.map(
      (r) => r.storage_key,
    );

  test('a success COMMIT whose answer is lost: the run stays succeeded and charged, its outputs stored and served', async () => {
    const proxy = await PgCommitCut.start(e.s.database.url);
    const viaProxy = createDb({ connectionString: proxy.urlFor(e.s.database.url), logger: log, max: 4 });
    try {
      const c = await TeamClient.create(e.s);
      const worker = await e.workers.start({ concurrency: 1, db: viaProxy });
      const cut = proxy.arm('INSERT INTO run_outputs');
      const run = await c.start('ok');
      await cut;
      await waitFor('the execution to end', async () => (worker.busy === 0 ? true : undefined));
      const state = await runState(e.db(), run.id);
      assert.equal(state.status, 'succeeded');
      await assertSettledOnce(e.db(), state);
      const body = await c.get(run.id);
      assert.equal(body.cost_sparks, state.price_sparks);
      assert.equal(body.outputs.length, 1);
      const out = body.outputs[0]!;
      assert.equal(c.storedObjects(run.id).length, 1, 'the stored output of the succeeded run is still there');
      // The executor checks it at once, as after any success: no waiting for the sweep.
      const res = await waitFor('the output URL', async () => {
        const r = await url(c, run.id, out.asset_id);
        return r.status === 409 ? undefined : r;
      }, 10_000, 50);
      assert.equal(res.status, 200, await res.clone().text());
      const download = await fetch(((await res.json()) as { url: string }).url);
      assert.equal(download.status, 200);
      const bytes = Buffer.from(await download.arrayBuffer());
      const { rows } = await e.db().query<{ sha256: string }>('SELECT sha256 FROM run_outputs WHERE id = $1::uuid', [out.asset_id]);
      assert.equal(createHash('sha256').update(bytes).digest('hex'), rows[0]!.sha256);
      assert.deepEqual(await ledgerDrift(e.db()), []);
    } finally {
      await e.workers.stopAll();
      await viaProxy.close();
      await proxy.close();
    }
  });

  test('a success COMMIT lost before it reached the server: the run is read back, the transaction tried again, the run succeeds once', async () => {
    const proxy = await PgCommitCut.start(e.s.database.url);
    const viaProxy = createDb({ connectionString: proxy.urlFor(e.s.database.url), logger: log, max: 4 });
    try {
      const c = await TeamClient.create(e.s);
      const worker = await e.workers.start({ concurrency: 1, db: viaProxy });
      const cut = proxy.arm('INSERT INTO run_outputs', 'before');
      const run = await c.start('ok');
      await cut;
      await waitFor('the execution to end', async () => (worker.busy === 0 ? true : undefined));
      const state = await runState(e.db(), run.id);
      assert.equal(state.status, 'succeeded', state.error ?? '');
      assert.equal(state.attempts, 1, 'the same execution finished it');
      await assertSettledOnce(e.db(), state);
      const body = await c.get(run.id);
      assert.equal(body.outputs.length, 1);
      assert.equal(c.storedObjects(run.id).length, 1, 'the one stored output, recorded');
      const res = await waitFor('the output URL', async () => {
        const r = await url(c, run.id, body.outputs[0]!.asset_id);
        return r.status === 409 ? undefined : r;
      }, 10_000, 50);
      assert.equal(res.status, 200, await res.clone().text());
    } finally {
      await e.workers.stopAll();
      await viaProxy.close();
      await proxy.close();
    }
  });

  /**
   * PostgreSQL ends the connection that inserts this team's outputs, exactly as a server shutting
   * down does (an ErrorResponse 57P01, then the connection closes), for the first `times` inserts
   * (a sequence counts them: it is not rolled back with the transaction). Returns the count so far.
   */
  async function endInserts(c: TeamClient, times: number): Promise<() => Promise<number>> {
    await e.db().query(`CREATE SEQUENCE test_end_inserts`);
    await e.db().query(
      `CREATE FUNCTION test_end_inserts() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN
         IF (SELECT team_id FROM runs WHERE id = NEW.run_id) = '${c.team.teamId}'::uuid AND nextval('test_end_inserts') <= ${times} THEN
           PERFORM pg_terminate_backend(pg_backend_pid());
           PERFORM pg_sleep(5);
         END IF;
         RETURN NEW;
       END $$`,
    );
    await e.db().query(`CREATE TRIGGER test_end_inserts BEFORE INSERT ON run_outputs FOR EACH ROW EXECUTE FUNCTION test_end_inserts()`);
    return async () => Number((await e.db().query<{ n: string }>(`SELECT last_value::text AS n FROM test_end_inserts`)).rows[0]!.n);
  }
  const dropEndInserts = () => e.db().query(`DROP TRIGGER test_end_inserts ON run_outputs; DROP FUNCTION test_end_inserts(); DROP SEQUENCE test_end_inserts`);

  test('a success transaction the server ends (57P01, as when it shuts down): tried again, the run succeeds once', async () => {
    const c = await TeamClient.create(e.s);
    const tries = await endInserts(c, 1);
    try {
      const worker = await e.workers.start({ concurrency: 1 });
      const run = await c.start('ok');
      const done = await waitFinal(e.db(), run.id);
      await waitFor('the execution to end', async () => (worker.busy === 0 ? true : undefined));
      assert.equal(done.status, 'succeeded', done.error ?? '');
      assert.equal(await tries(), 2, 'the first success transaction was ended by the server, the second went through');
      const state = await runState(e.db(), run.id);
      assert.equal(state.attempts, 1, 'the same execution finished it');
      await assertSettledOnce(e.db(), state);
      assert.equal((await c.get(run.id)).outputs.length, 1);
      assert.equal(c.storedObjects(run.id).length, 1, 'the one stored output, recorded');
    } finally {
      await e.workers.stopAll();
      await dropEndInserts();
    }
  });

  test('the database away for every try of the success transaction: the run is not failed; its lease lapses and a later attempt succeeds', async () => {
    const c = await TeamClient.create(e.s);
    const tries = await endInserts(c, 3);
    try {
      await e.workers.start({ concurrency: 1 });
      const run = await c.start('ok');
      const done = await waitFinal(e.db(), run.id);
      assert.equal(done.status, 'succeeded', done.error ?? '');
      assert.equal(await tries(), 4, 'three tries ended by the server, then the retaken run went through');
      const state = await runState(e.db(), run.id);
      assert.equal(state.attempts, 2, 'a second execution finished it, after the first lease lapsed');
      await assertSettledOnce(e.db(), state);
      assert.equal((await c.get(run.id)).outputs.length, 1);
      assert.equal(c.storedObjects(run.id).length, 1, "the first execution's unrecorded output was deleted");
    } finally {
      await e.workers.stopAll();
      await dropEndInserts();
    }
  });

  test('the sweep tries unreadable outputs again with a growing delay, verifies the newer ones, then gives up and refunds', async () => {
    const c = await TeamClient.create(e.s);
    const w = await e.workers.start({ concurrency: 1 });
    // Twelve outputs whose stored objects go missing (more than one batch of the sweep), then three intact ones.
    const lost = [await succeeded(c, 3), await succeeded(c, 3), await succeeded(c, 3), await succeeded(c, 3)];
    const intact = await succeeded(c, 3);
    await w.stop(0);
    const before = await runState(e.db(), lost[0]!.id);
    const all = [...lost, intact].map((r) => r.id);
    // As a crash between store and check leaves them, and old enough for the sweep.
    await e.db().query(
      `UPDATE run_outputs SET status = 'checking', created_at = created_at - interval '10 minutes' WHERE run_id = ANY ($1::uuid[])`,
      [all],
    );
    for (const o of await storedKeys(lost.map((r) => r.id))) fs.rmSync(e.s.localStorage().objectPath(o));

    await sweepOutputChecks(e.s.database.db, e.s.storage, log);
    const { rows: intactRows } = await e.db().query<{ status: string }>(`SELECT status FROM run_outputs WHERE run_id = $1::uuid`, [intact.id]);
    assert.deepEqual(intactRows.map((o) => o.status), ['ready', 'ready', 'ready'], 'the outputs behind the unreadable ones were verified');
    let rows = await outputRows(all);
    const isLost = (o: { run_id: string }) => o.run_id !== intact.id;
    assert.deepEqual(new Set(rows.filter(isLost).map((o) => `${o.status}/${o.check_attempts}`)), new Set(['checking/1']));
    // Not due yet: a sweep right away leaves them alone.
    await sweepOutputChecks(e.s.database.db, e.s.storage, log);
    assert.deepEqual(new Set((await outputRows(all)).filter(isLost).map((o) => o.check_attempts)), new Set([1]));

    const delays: number[] = [];
    for (let attempt = 1; attempt < OUTPUT_CHECK_POLICY.maxAttempts; attempt++) {
      rows = (await outputRows(all)).filter(isLost);
      assert.deepEqual(new Set(rows.map((o) => `${o.status}/${o.check_attempts}`)), new Set([`checking/${attempt}`]));
      const delay = rows[0]!.delay!;
      assert.deepEqual(new Set(rows.map((o) => o.delay)), new Set([delay]), 'the same delay for each row of one attempt');
      assert.equal(delay, checkDelaySeconds(OUTPUT_CHECK_POLICY, attempt));
      delays.push(delay);
      // The delay has passed (the rows are made due rather than waited for).
      await e.db().query(`UPDATE run_outputs SET next_check_at = now() WHERE run_id = ANY ($1::uuid[]) AND status = 'checking'`, [all]);
      await sweepOutputChecks(e.s.database.db, e.s.storage, log);
    }
    for (let i = 1; i < delays.length; i++) assert.ok(delays[i]! >= delays[i - 1]!, `delays never shrink: ${delays.join(', ')}`);
    assert.ok(delays.at(-1)! > delays[0]!, `delays grow: ${delays.join(', ')}`);

    rows = (await outputRows(all)).filter(isLost);
    assert.deepEqual(new Set(rows.map((o) => `${o.status}/${o.check_attempts}`)), new Set([`failed/${OUTPUT_CHECK_POLICY.maxAttempts}`]));
    for (const r of lost) {
      assert.deepEqual(await ledgerKinds(e.db(), r.id), { charge: 1, hold: 1, release: 1, refund: 1 }, 'one refund per run, with three failed outputs');
      const body = await c.get(r.id);
      assert.deepEqual([body.status, body.cost_sparks, body.outputs], ['succeeded', 0, []]);
      const { message } = await assertNotFound(c, r.id, r.outputs[0]!.asset_id);
      assert.match(message, /failed the integrity check.*refunded/);
    }
    const { rows: notes } = await e.db().query<{ note: string; amount: number }>(
      `SELECT note, amount FROM ledger_entries WHERE run_id = $1::uuid AND kind = 'refund'`,
      [lost[0]!.id],
    );
    assert.equal(notes[0]!.amount, before.price_sparks);
    assert.match(notes[0]!.note, /^output [0-9a-f-]{36} failed its check: its stored object is missing \(8 attempts\)$/);
    assert.equal((await c.get(intact.id)).cost_sparks, before.price_sparks, 'the intact run stays charged');
    assert.deepEqual(await ledgerDrift(e.db()), []);
  });

  test('a corrupted output fails for good: its run is refunded once, even with concurrent sweeps; 404 output_not_found', async () => {
    const c = await TeamClient.create(e.s);
    const w = await e.workers.start({ concurrency: 1 });
    const run = await succeeded(c, 3);
    await w.stop(0);
    const sparksBefore = ((await (await c.api('GET', '/v1/me')).json()) as { sparks_available: number }).sparks_available;
    const price = (await runState(e.db(), run.id)).price_sparks;
    // Each stored copy altered after its checksum was taken, and its check to be done again.
    for (const key of await storedKeys([run.id])) fs.appendFileSync(e.s.localStorage().objectPath(key), Buffer.from('tampered'));
    await e.db().query(`UPDATE run_outputs SET status = 'checking' WHERE run_id = $1::uuid`, [run.id]);

    // Both sweeps reach the refund together: the run row is held until each has failed an output.
    const holder = new pg.Client({ connectionString: e.s.database.url });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM runs WHERE id = $1::uuid FOR UPDATE', [run.id]);
      const sweeps = [1, 2].map(() => verifyOutputs(e.s.database.db, e.s.storage, log, { runId: run.id, batch: 1 }));
      await waitFor('both sweeps to wait for the run row', async () => {
        const { rows } = await e.db().query<{ n: number }>(
          `SELECT count(*)::integer AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%FROM runs WHERE id = $1::uuid FOR UPDATE%'`,
        );
        return rows[0]!.n === 2 ? true : undefined;
      });
      await holder.query('ROLLBACK');
      const settled = await Promise.all(sweeps);
      assert.equal(settled[0]! + settled[1]!, 3, 'the three outputs were settled between them');
    } finally {
      await holder.end();
    }
    const { rows: statuses } = await e.db().query<{ status: string }>(`SELECT status FROM run_outputs WHERE run_id = $1::uuid`, [run.id]);
    assert.deepEqual(statuses.map((o) => o.status), ['failed', 'failed', 'failed']);
    assert.deepEqual(await ledgerKinds(e.db(), run.id), { charge: 1, hold: 1, release: 1, refund: 1 });
    const { rows } = await e.db().query<{ note: string; amount: number }>(
      `SELECT note, amount FROM ledger_entries WHERE run_id = $1::uuid AND kind = 'refund'`,
      [run.id],
    );
    assert.equal(rows[0]!.amount, price);
    assert.match(rows[0]!.note, /failed its check: its stored copy does not match its checksum$/);
    const me = (await (await c.api('GET', '/v1/me')).json()) as { sparks_available: number };
    assert.equal(me.sparks_available, sparksBefore + price, 'the charge came back');
    const body = await c.get(run.id);
    assert.deepEqual([body.status, body.cost_sparks, body.outputs, body.error], ['succeeded', 0, [], null]);
    for (const o of run.outputs) await assertNotFound(c, run.id, o.asset_id);
    assert.deepEqual(await ledgerDrift(e.db()), []);
  });
});
