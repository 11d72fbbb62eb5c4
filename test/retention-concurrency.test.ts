// Retention (issue 37) under load: two janitor processes at once, each with its own connections,
// delete every row past its period exactly once (SKIP LOCKED: the counts they report add up to the
// rows there were) and no error; younger rows stay; and no run or ledger row is ever deleted,
// however old, with the shortest periods allowed.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, test } from 'node:test';
import type { RetentionConfig } from '../src/config/retention.js';
import { deleteExpiredRows } from '../src/retention/janitor.js';
import { makeEndpoint, writeTraffic, type RetentionOwner } from '../bench/lib/retention-rows.js';
import { createTestDatabase, type TestDatabase } from './helpers/db.js';
import { makeTeam } from './helpers/fixtures.js';
import { ROOT } from './helpers/process.js';
import { testLogger } from './helpers/test-logs.js';

const run = promisify(execFile);
const CHILD = path.join(ROOT, 'test', 'helpers', 'retention-child.ts');
const TABLES = ['webhook_deliveries', 'webhook_attempts', 'run_events', 'run_outputs', 'files'] as const;
let database: TestDatabase;
let owner: RetentionOwner;

/** Rows of each table: all, and those past the default periods (30 days, expired rows 7 days). */
async function counts(): Promise<Record<string, number>> {
  const { rows } = await database.db.pool.query<Record<string, number>>(
    `SELECT (SELECT count(*) FROM webhook_deliveries)::integer AS webhook_deliveries,
            (SELECT count(*) FROM webhook_attempts)::integer AS webhook_attempts,
            (SELECT count(*) FROM run_events)::integer AS run_events,
            (SELECT count(*) FROM run_outputs)::integer AS run_outputs,
            (SELECT count(*) FROM files)::integer AS files,
            (SELECT count(*) FROM runs)::integer AS runs,
            (SELECT count(*) FROM ledger_entries)::integer AS ledger_entries,
            (SELECT coalesce(sum(amount), 0) FROM ledger_entries)::integer AS ledger_sum,
            (SELECT sum(sparks_available) FROM teams)::integer AS balances`,
  );
  return rows[0]!;
}

before(async () => {
  database = await createTestDatabase();
  const team = await makeTeam(database.db);
  owner = { ...team, endpointId: await makeEndpoint(database.db.pool, team.teamId) };
});
after(async () => {
  await database.db.close();
});

describe('two janitors at once', () => {
  test('each old row is deleted once, by one of them, without error; younger rows stay', async (t) => {
    const OLD = 1200;
    const YOUNG = 300;
    await writeTraffic(database.db.pool, owner, OLD, 31 * 24);
    await writeTraffic(database.db.pool, owner, YOUNG, 5 * 24);
    const before = await counts();
    // Small batches, so that the two processes' batches interleave many times over.
    const config: RetentionConfig = { runEventsDays: 30, webhookDays: 30, expiredRowsDays: 7, batchSize: 25 };
    const results = await Promise.all(
      [1, 2].map(async () => {
        const { stdout } = await run(process.execPath, ['--import', 'tsx', CHILD, database.url, JSON.stringify(config)], { cwd: ROOT });
        return JSON.parse(stdout) as Record<string, number>;
      }),
    );
    t.diagnostic(`deleted per process: ${JSON.stringify(results)}`);
    const afterCounts = await counts();
    for (const table of TABLES) {
      const [a, b] = results.map((r) => r[table] ?? 0) as [number, number];
      assert.equal(a + b, OLD, `${table}: ${a} + ${b} deleted, ${OLD} were past their period`);
      assert.equal(afterCounts[table], (before[table] ?? 0) - OLD, `${table}: the ${YOUNG} younger rows stay`);
    }
    for (const money of ['runs', 'ledger_entries', 'ledger_sum', 'balances']) assert.equal(afterCounts[money], before[money], money);
  });
});

describe('money and history', () => {
  test('no run and no ledger row is deleted, however old, with the shortest periods', async () => {
    await writeTraffic(database.db.pool, owner, 50, 24);
    const pool = database.db.pool;
    await pool.query(`UPDATE runs SET created_at = created_at - interval '10 years', finished_at = finished_at - interval '10 years'`);
    await pool.query(`UPDATE ledger_entries SET created_at = created_at - interval '10 years'`);
    await pool.query(`UPDATE run_events SET created_at = created_at - interval '10 years'`);
    await pool.query(`UPDATE webhook_deliveries SET finished_at = finished_at - interval '10 years' WHERE status <> 'pending'`);
    const before = await counts();
    assert.ok((before.runs ?? 0) > 0 && (before.ledger_entries ?? 0) > 0);
    const deleted = await deleteExpiredRows(pool, { runEventsDays: 1, webhookDays: 1, expiredRowsDays: 0, batchSize: 10 }, testLogger('silent'));
    assert.ok((deleted.run_events ?? 0) > 0, 'the events went');
    const afterCounts = await counts();
    for (const money of ['runs', 'ledger_entries', 'ledger_sum', 'balances']) assert.equal(afterCounts[money], before[money], money);
    assert.equal(afterCounts.run_events, 0);
  });
});
