// Fair scheduling (issue 20): at most a team's limit of its runs run at once, across any number of
// workers, and a free slot goes to the team with the fewest runs running. Every check waits on
// state in PostgreSQL; a trigger in the test's database records each team's peak of running runs
// at the moment a claim commits, so the limit is checked at every claim, not sampled
// (test/helpers/fair.ts). Round robin between teams with few slots: test/runs-fair-turns.test.ts.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { loadConfig } from '../src/config/config.js';
import { engineSuite, TeamClient, waitFor } from './helpers/runs-harness.js';
import { killWorkerProcesses, WorkerProcess } from './helpers/worker-processes.js';
import { counts, peak, recordPeaks, setLimit, startMany } from './helpers/fair.js';

after(() => killWorkerProcesses());

engineSuite('fair scheduling between teams', (e) => {
  test("a team's backlog does not stall another team: B's one run takes the first free slot", async () => {
    await recordPeaks(e);
    const a = await TeamClient.create(e.s);
    const b = await TeamClient.create(e.s);
    // A may run 8 at once, more than the worker's 2 slots: only fairness keeps B from waiting.
    await setLimit(e, a.team.teamId, 8);
    await e.workers.start({ concurrency: 2 });
    const aRuns = await startMany(a, 200, 'hang');
    await waitFor("A's first two runs to hold both slots", async () => ((await counts(e, a.team.teamId)).running === 2 ? true : undefined));
    const bRun = await b.start('hang');
    assert.equal((await b.get(bRun.id)).status, 'queued', 'both slots are busy with A');
    // Free one slot: cancel one of A's running runs.
    const { rows } = await e.db().query<{ id: string }>(`SELECT id FROM runs WHERE team_id = $1::uuid AND status = 'running' LIMIT 1`, [a.team.teamId]);
    const res = await a.api('POST', `/v1/runs/${rows[0]!.id}/cancel`);
    assert.equal(res.status, 200);
    await waitFor("B's run to start", async () => ((await b.get(bRun.id)).status === 'running' ? true : undefined));
    const aNow = await counts(e, a.team.teamId);
    assert.equal(aNow.started, 2, "none of A's 198 queued runs took the slot before B's run");
    assert.equal(aNow.queued, 198);
    assert.ok(aRuns.length === 200);
  });

  test('plan defaults apply without a team value; the team value overrides them', async () => {
    await recordPeaks(e);
    const defaults = loadConfig({}).runs.teamConcurrency;
    assert.deepEqual(defaults, { free: 1, plus: 2, pro: 4, team: 8 });
    const a = await TeamClient.create(e.s); // pro: 4
    await e.workers.start({ concurrency: 6 });
    await startMany(a, 8, 'hang');
    await waitFor('A to run its plan default of 4', async () => ((await counts(e, a.team.teamId)).running === 4 ? true : undefined));
    await setLimit(e, a.team.teamId, 5);
    // A new claim happens when a worker looks again (a poll, or a run finishing): start one more run to poke it.
    await a.start('hang');
    await waitFor('A to run its own value of 5', async () => ((await counts(e, a.team.teamId)).running === 5 ? true : undefined));
    assert.equal(await peak(e, a.team.teamId), 5);
  });

  test('with two worker processes a team never runs more than its limit, and every run finishes', async () => {
    await recordPeaks(e);
    const a = await TeamClient.create(e.s);
    const b = await TeamClient.create(e.s);
    await setLimit(e, a.team.teamId, 2);
    await setLimit(e, b.team.teamId, 1);
    const workers = await Promise.all([0, 1].map(() => WorkerProcess.spawn(e.s, { TOOLRUN_WORKER_CONCURRENCY: '3' })));
    const aRuns = await startMany(a, 30, 'ok');
    const bRuns = await startMany(b, 10, 'ok');
    await waitFor(
      'every run to succeed',
      async () => {
        const [ca, cb] = [await counts(e, a.team.teamId), await counts(e, b.team.teamId)];
        return ca.succeeded === aRuns.length && cb.succeeded === bRuns.length ? true : undefined;
      },
      60_000,
    );
    assert.equal(await peak(e, a.team.teamId), 2, 'A ran at its limit, never above it');
    assert.equal(await peak(e, b.team.teamId), 1, 'B ran at its limit, never above it');
    for (const w of workers) await w.kill9();
  });

  test("a worker killed mid-run: its runs count until their leases lapse and are taken back; the team stays at its limit", async () => {
    await recordPeaks(e);
    const a = await TeamClient.create(e.s);
    await setLimit(e, a.team.teamId, 2);
    const first = await WorkerProcess.spawn(e.s, { TOOLRUN_WORKER_CONCURRENCY: '3' });
    await startMany(a, 6, 'hang');
    await waitFor('A to run 2', async () => ((await counts(e, a.team.teamId)).running === 2 ? true : undefined));
    const { rows: held } = await e.db().query<{ id: string }>(`SELECT id FROM runs WHERE team_id = $1::uuid AND status = 'running'`, [a.team.teamId]);
    await first.kill9();
    const second = await WorkerProcess.spawn(e.s, { TOOLRUN_WORKER_CONCURRENCY: '3' });
    await waitFor(
      "the killed worker's two runs to be taken back",
      async () => {
        const { rows } = await e.db().query<{ n: number }>(
          `SELECT count(*)::integer AS n FROM runs WHERE id = ANY ($1::uuid[]) AND status = 'running' AND attempts = 2 AND lease_expires_at > now()`,
          [held.map((r) => r.id)],
        );
        return rows[0]?.n === 2 ? true : undefined;
      },
      30_000,
    );
    const now = await counts(e, a.team.teamId);
    assert.equal(now.running, 2);
    assert.equal(now.started, 2, 'no queued run started while the lapsed ones still counted');
    assert.equal(await peak(e, a.team.teamId), 2);
    await second.kill9();
  });
});
