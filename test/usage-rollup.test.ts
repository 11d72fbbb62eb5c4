// The Usage page's daily roll-up (usage_daily, migration 0022, issue 37) against the figures the
// ledger and the runs give (usageByDayFromLedger/usageByToolFromLedger): equal to the Spark after
// charges, refunds, cancels and failures through the real engine, across days (a run charged or
// refunded days after it started, one older than the window), and as the migration back-fills it.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import type { Queryable } from '../src/db/pool.js';
import { usageByDay, usageByTool } from '../src/console/runs-view.js';
import { usageDrift } from '../src/console/usage-ledger.js';
import { refundRun } from '../src/runs/transitions.js';
import { engineSuite, TeamClient, waitFinal } from './helpers/runs-harness.js';

/** A final run written straight into the table, started `daysAgo` UTC days before now. */
async function pastRun(db: Queryable, t: TeamClient, toolId: string, daysAgo: number, price: number): Promise<string> {
  const id = randomUUID();
  await db.query(
    `INSERT INTO runs (id, team_id, api_key_id, member_id, source, tool_id, product_id, inputs, status, price_sparks, hold_sparks, cost_sparks,
                       created_at, started_at, finished_at)
     VALUES ($1::uuid, $2::uuid, $3::uuid, $4::uuid, 'api', $5::text, $5::text, '{}'::jsonb, 'succeeded', $6::bigint, $6::bigint, $6::bigint,
             now() - make_interval(days => $7::integer), now() - make_interval(days => $7::integer), now() - make_interval(days => $7::integer))`,
    [id, t.team.teamId, t.team.keyId, t.team.memberId, toolId, price, daysAgo],
  );
  return id;
}

/** A ledger row of the run booked `daysAgo` days before now; the balance moves with it so the team still balances. */
async function book(db: Queryable, t: TeamClient, runId: string, kind: 'hold' | 'release' | 'charge' | 'refund', amount: number, daysAgo: number): Promise<void> {
  await db.query(
    `INSERT INTO ledger_entries (team_id, kind, amount, run_id, created_at) VALUES ($1::uuid, $2::text, $3::bigint, $4::uuid, now() - make_interval(days => $5::integer))`,
    [t.team.teamId, kind, amount, runId, daysAgo],
  );
  await db.query('UPDATE teams SET sparks_available = sparks_available + $2::bigint WHERE id = $1::uuid', [t.team.teamId, amount]);
}

const e = engineSuite('usage roll-up', () => {
  test('charges, failures, cancels and refunds through the engine: the roll-up equals the ledger', async () => {
    const t = await TeamClient.create(e.s);
    // Queued while no worker runs: this one is canceled before it starts (hold, release, no charge).
    const canceled = await t.start('ok');
    const cancel = await t.api('POST', `/v1/runs/${canceled.id}/cancel`);
    assert.equal(cancel.status, 200, await cancel.clone().text());
    const ok = [await t.start('ok'), await t.start('ok'), await t.start('ok')];
    const failed = await t.start('fail');
    await e.workers.start();
    const final = await Promise.all([...ok, failed].map((r) => waitFinal(e.db(), r.id)));
    assert.deepEqual(final.map((r) => r.status), ['succeeded', 'succeeded', 'succeeded', 'failed']);
    const charged = final[0]?.cost_sparks ?? 0;
    assert.ok(charged > 0, 'a succeeded run is charged');
    // One charge given back, as a failed output check does.
    const refunded = await e.s.database.db.tx((tx) => refundRun(tx, ok[0]?.id ?? '', 'output failed its check'));
    assert.equal(refunded, charged);

    assert.deepEqual(await usageDrift(e.db(), t.team.teamId), []);
    const today = (await usageByDay(e.db(), t.team.teamId)).at(-1);
    assert.deepEqual(today && { runs: today.runs, sparks_spent: today.sparks_spent }, { runs: 5, sparks_spent: 2 * charged });
    assert.deepEqual(await usageByTool(e.db(), t.team.teamId), [{ tool_id: 'test_copy', runs: 5, sparks_spent: 2 * charged }]);
  });

  test('across days: booked-day and run-day sums, and a run older than the window', async () => {
    const t = await TeamClient.create(e.s);
    const db = e.db();
    // Started 3 days ago, charged 2 days ago, refunded today: by day on days -2 and 0, by tool all of it.
    const late = await pastRun(db, t, 'tool_a', 3, 7);
    await book(db, t, late, 'hold', -7, 3);
    await book(db, t, late, 'release', 7, 2);
    await book(db, t, late, 'charge', -7, 2);
    await book(db, t, late, 'refund', 7, 0);
    // Started and charged 5 days ago.
    const plain = await pastRun(db, t, 'tool_b', 5, 4);
    await book(db, t, plain, 'charge', -4, 5);
    // Started 40 days ago (before the window), charged yesterday: only the day figure counts it.
    const old = await pastRun(db, t, 'tool_c', 40, 9);
    await book(db, t, old, 'charge', -9, 1);

    assert.deepEqual(await usageDrift(db, t.team.teamId), []);
    const days = await usageByDay(db, t.team.teamId);
    assert.equal(days.length, 30);
    const at = (n: number) => days[days.length - 1 - n];
    assert.deepEqual([at(0)?.sparks_spent, at(1)?.sparks_spent, at(2)?.sparks_spent, at(3)?.sparks_spent, at(5)?.sparks_spent], [-7, 9, 7, 0, 4]);
    assert.deepEqual([at(3)?.runs, at(5)?.runs], [1, 1]);
    assert.deepEqual(await usageByTool(db, t.team.teamId), [
      { tool_id: 'tool_a', runs: 1, sparks_spent: 0 },
      { tool_id: 'tool_b', runs: 1, sparks_spent: 4 },
    ]);
  });

  test("the migration's back-fill rebuilds the same roll-up from the runs and the ledger", async () => {
    const db = e.db();
    const before = await db.query<{ team_id: string; day: string; tool_id: string; runs: number; sparks_spent: number; run_sparks_spent: number }>(
      'SELECT team_id, day::text AS day, tool_id, runs, sparks_spent, run_sparks_spent FROM usage_daily ORDER BY 1, 2, 3',
    );
    assert.ok(before.rows.length >= 4, 'the earlier tests left roll-up rows');
    const migration = fs.readFileSync(new URL('../src/db/migrations/0022_usage_daily.sql', import.meta.url), 'utf8');
    const backfill = migration.slice(migration.indexOf('-- The back-fill'), migration.indexOf('-- Down Migration'));
    assert.match(backfill, /INSERT INTO usage_daily/);
    await e.s.database.db.tx(async (tx) => {
      await tx.query('DELETE FROM usage_daily');
      await tx.query(backfill);
    });
    const after = await db.query('SELECT team_id, day::text AS day, tool_id, runs, sparks_spent, run_sparks_spent FROM usage_daily ORDER BY 1, 2, 3');
    assert.deepEqual(after.rows, before.rows);
  });
});
