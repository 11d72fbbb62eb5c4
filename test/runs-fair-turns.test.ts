// Fair scheduling with fewer free slots than teams with work (issue 25, item 12): when a slot frees
// and several teams have as few runs running, it goes to the team served least recently (round
// robin), not to the oldest queued run, which a long backlog always holds. Limits still hold across
// worker processes, and the claim's plan stays on the indexes however long the backlog. Start order
// is read from runs.started_at (the claim's commit); every wait is on state in PostgreSQL.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { nestedPlans, planNodes } from '../bench/lib/nested-plans.js';
import { counts, peak, recordPeaks, setLimit, startMany, startOrder } from './helpers/fair.js';
import { engineSuite, FINAL, TeamClient, waitFor, type Engine } from './helpers/runs-harness.js';
import { killWorkerProcesses, WorkerProcess } from './helpers/worker-processes.js';

after(() => killWorkerProcesses());

async function allFinal(e: Engine, runIds: string[], timeoutMs = 60_000): Promise<void> {
  await waitFor(
    `${runIds.length} runs to finish`,
    async () => {
      const { rows } = await e.db().query<{ n: number }>('SELECT count(*)::integer AS n FROM runs WHERE id = ANY ($1::uuid[]) AND status = ANY ($2::text[])', [runIds, FINAL]);
      return rows[0]?.n === runIds.length ? true : undefined;
    },
    timeoutMs,
  );
}


engineSuite('fair scheduling: round robin between teams', (e) => {
  test("one slot: B's one run, queued after A's backlog, starts after at most one of A's runs", async () => {
    const a = await TeamClient.create(e.s);
    const b = await TeamClient.create(e.s);
    const aRuns = await startMany(a, 24, 'ok');
    const bRun = await b.start('ok');
    // A 2-core machine's default: one slot. Both teams are under their limits (pro: 4).
    await e.workers.start({ concurrency: 1 });
    await allFinal(e, [...aRuns, bRun.id]);
    const order = await startOrder(e, [...aRuns, bRun.id]);
    const bAt = order.findIndex((r) => r.id === bRun.id);
    assert.ok(bAt >= 0 && bAt <= 1, `B's run started after ${bAt} of A's runs (at most 1 allowed)`);
    assert.equal((await b.get(bRun.id)).status, 'succeeded');
    assert.equal((await counts(e, a.team.teamId)).succeeded, 24);
  });

  test('one slot, three teams with backlogs: the slot goes round the teams in turn', async () => {
    const teams = [await TeamClient.create(e.s), await TeamClient.create(e.s), await TeamClient.create(e.s)];
    const runs: string[] = [];
    for (const t of teams) runs.push(...(await startMany(t, 5, 'ok')));
    await e.workers.start({ concurrency: 1 });
    await allFinal(e, runs);
    const name = new Map(teams.map((t, i) => [t.team.teamId, 'ABC'[i]!]));
    const seq = (await startOrder(e, runs)).map((r) => name.get(r.team_id)).join('');
    assert.equal(seq, 'ABCABCABCABCABC');
  });

  test('a team that joins later gets the next free slot, then takes turns with the team that was there', async () => {
    const a = await TeamClient.create(e.s);
    const b = await TeamClient.create(e.s);
    await e.workers.start({ concurrency: 1 });
    const aRuns = await startMany(a, 6, 'slow');
    await waitFor("A's first run to hold the slot", async () => ((await counts(e, a.team.teamId)).running === 1 ? true : undefined));
    const bRuns = await startMany(b, 2, 'ok');
    await waitFor("B's two runs to finish", async () => ((await counts(e, b.team.teamId)).succeeded === 2 ? true : undefined), 30_000);
    const order = (await startOrder(e, [...aRuns, ...bRuns])).filter((r) => r.attempts > 0);
    const name = (teamId: string) => (teamId === a.team.teamId ? 'A' : 'B');
    // A's first run held the slot when B came; then B, A, B: A's backlog never runs twice in a row past B.
    assert.equal(order.slice(0, 4).map((r) => name(r.team_id)).join(''), 'ABAB');
  });

  test('with three worker processes of one slot each, limits hold, no run is taken twice, and the teams share the slots', async () => {
    await recordPeaks(e);
    const teams = [await TeamClient.create(e.s), await TeamClient.create(e.s), await TeamClient.create(e.s)];
    await setLimit(e, teams[0]!.team.teamId, 1);
    await setLimit(e, teams[1]!.team.teamId, 1);
    const runs: string[][] = [];
    for (const t of teams) runs.push(await startMany(t, 12, 'ok'));
    const workers = await Promise.all([0, 1, 2].map(() => WorkerProcess.spawn(e.s, { TOOLRUN_WORKER_CONCURRENCY: '1' })));
    const all = runs.flat();
    await allFinal(e, all);
    const order = await startOrder(e, all);
    assert.deepEqual(order.filter((r) => r.attempts !== 1), [], 'every run was claimed exactly once');
    for (const [i, t] of teams.entries()) assert.equal((await counts(e, t.team.teamId)).succeeded, 12, `team ${i} finished every run`);
    assert.equal(await peak(e, teams[0]!.team.teamId), 1, 'the first team never ran above its limit of 1');
    assert.equal(await peak(e, teams[1]!.team.teamId), 1, 'the second team never ran above its limit of 1');
    // Three teams, three slots: each team started one of the first three runs.
    assert.equal(new Set(order.slice(0, 3).map((r) => r.team_id)).size, 3, 'the first three claims went to three teams');
    for (const w of workers) await w.kill9();
  });

  test("the claim's plan stays on the indexes with a long backlog", async () => {
    const teams = [await TeamClient.create(e.s), await TeamClient.create(e.s), await TeamClient.create(e.s)];
    const seeds = [];
    for (const t of teams) seeds.push((await t.start('ok')).id);
    const client = await e.s.database.db.pool.connect();
    try {
      await client.query('BEGIN');
      // Copies of each team's queued run: 10,000 for the first team, 2,000 for the others (in
      // statements of 2,000, each well inside the pool's query timeout); rolled back at the end.
      for (const [i, id] of seeds.entries()) {
        for (let batch = 0; batch < (i === 0 ? 5 : 1); batch++) {
          await client.query(
            `INSERT INTO runs SELECT (jsonb_populate_record(NULL::runs, to_jsonb(r) || jsonb_build_object(
                'id', gen_random_uuid(), 'idempotency_key', NULL, 'created_at', r.created_at + g * interval '1 millisecond'))).*
               FROM runs r, generate_series($2::integer * 2000 + 1, $2::integer * 2000 + 2000) g WHERE r.id = $1::uuid`,
            [id, batch],
          );
        }
      }
      await client.query('ANALYZE runs');
      // The claim is one PL/pgSQL function (migration 0025): the plans of the statements it runs,
      // the fair order and the take, as it ran them (the take is rolled back with the rest).
      const plans = await nestedPlans(client, 'SELECT id FROM toolrun_claim_queued($1::text, $2::integer, 1, 2, 4, 8, 8)', ['explain', 60]);
      const find = (what: string, re: RegExp) => {
        const found = plans.find((p) => re.test(p.query));
        assert.ok(found, `the claim ran the ${what} (ran: ${plans.map((p) => p.query.trim().slice(0, 60)).join(' | ')})`);
        return planNodes(found.plan);
      };
      const order = find('fair order', /queued_teams/);
      const take = find('take', /^\s*UPDATE runs SET status = 'running'/);
      for (const [what, nodes] of [['fair order', order], ['take', take]] as const) {
        const seq = nodes.filter((n) => n['Node Type'] === 'Seq Scan' && n['Relation Name'] === 'runs');
        assert.deepEqual(seq, [], `the ${what} never scans runs whole`);
        const indexes = new Set(nodes.map((n) => n['Index Name']).filter(Boolean));
        assert.ok(indexes.has('runs_team_queued'), `the ${what} reads runs_team_queued (used: ${[...indexes].join(', ')})`);
        assert.ok(indexes.has('runs_team_running'), `the ${what} counts on runs_team_running (used: ${[...indexes].join(', ')})`);
      }
    } finally {
      await client.query('ROLLBACK');
      client.release();
    }
  });
});
