// The run lists' filters read an index range, not the team's whole history (issue 37): a tool the
// team seldom uses (runs_team_tool_newest), and created_before/created_after (bounds on created_at
// itself beside the millisecond comparison). The project's own statements, EXPLAINed as they are
// sent (a Queryable that prefixes EXPLAIN), on a team with 3,000 runs of which 3 are the rare tool.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Queryable } from '../src/db/pool.js';
import { listTeamRuns } from '../src/console/runs-view.js';
import { listApiRuns } from '../src/runs/repository.js';
import { createTestDatabase, type TestDatabase } from './helpers/db.js';
import { makeTeam, type TeamFixture } from './helpers/fixtures.js';

let t: TestDatabase;
let team: TeamFixture;

before(async () => {
  t = await createTestDatabase();
  team = await makeTeam(t.db);
  await t.db.pool.query(
    `INSERT INTO runs (id, team_id, api_key_id, member_id, source, tool_id, product_id, inputs, status, price_sparks, hold_sparks, cost_sparks, created_at)
     SELECT gen_random_uuid(), $1::uuid, $2::uuid, $3::uuid, 'api', CASE WHEN i % 1000 = 0 THEN 'rare_tool' ELSE 'common_tool' END, 'p', '{}'::jsonb,
            'succeeded', 1, 1, 1, now() - make_interval(mins => i)
       FROM generate_series(1, 3000) AS i`,
    [team.teamId, team.keyId, team.memberId],
  );
  await t.db.pool.query('ANALYZE runs');
});

after(async () => {
  await t?.db.close();
});

/** The plan of the statement `run` sends, as text. */
async function planOf(run: (db: Queryable) => Promise<unknown>): Promise<string> {
  let plan = '';
  const explaining = {
    query: async (text: string, values: unknown[]) => {
      const res = await t.db.pool.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${text}`, values);
      plan = res.rows.map((r) => r['QUERY PLAN']).join('\n');
      return { ...res, rows: [] };
    },
  } as unknown as Queryable;
  await run(explaining);
  return plan;
}

test('a seldom-used tool is read through runs_team_tool_newest, /v1 and the console alike', async () => {
  const v1 = await planOf((db) => listApiRuns(db, team.teamId, { toolId: 'rare_tool', limit: 20 }));
  assert.match(v1, /runs_team_tool_newest/, v1);
  const consolePlan = await planOf((db) => listTeamRuns(db, team.teamId, { toolId: 'rare_tool', limit: 25 }));
  assert.match(consolePlan, /runs_team_tool_newest/, consolePlan);
});

test('created_before and created_after bound the index range on created_at', async () => {
  const before = await planOf((db) => listApiRuns(db, team.teamId, { createdBefore: new Date(Date.now() - 40 * 3600_000).toISOString(), limit: 20 }));
  assert.match(before, /Index Cond: \(.*created_at < /, before);
  const afterPlan = await planOf((db) => listApiRuns(db, team.teamId, { createdAfter: new Date(Date.now() - 3600_000).toISOString(), limit: 20 }));
  assert.match(afterPlan, /Index Cond: \(.*created_at > /, afterPlan);
});

test('the bounds keep the millisecond semantics: a run is excluded by its own created_at, both ways', async () => {
  const { rows } = await t.db.pool.query<{ id: string; ms: string }>(
    `SELECT id, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS ms FROM runs WHERE team_id = $1::uuid ORDER BY created_at DESC LIMIT 1 OFFSET 10`,
    [team.teamId],
  );
  const run = rows[0];
  assert.ok(run);
  const older = await listApiRuns(t.db.pool, team.teamId, { createdBefore: run.ms, limit: 100 });
  const newer = await listApiRuns(t.db.pool, team.teamId, { createdAfter: run.ms, limit: 100 });
  assert.equal(older.some((r) => r.id === run.id), false);
  assert.equal(newer.some((r) => r.id === run.id), false);
  assert.equal(newer.length, 10);
  assert.equal(older.length, 101, "a full page and one more (another page follows)");
});
