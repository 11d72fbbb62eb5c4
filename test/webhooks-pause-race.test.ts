// "Paused means paused" under concurrency: a run's event written while its endpoint is being
// paused must never become a delivery that survives the pause (and is sent after a resume). Two
// real transactions on two connections interleave; the test waits on PostgreSQL's own lock state.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type pg from 'pg';
import { cancelLockedRun } from '../src/runs/transitions.js';
import { lockRun } from '../src/runs/repository.js';
import { dropPending, getEndpoint, updateEndpoint } from '../src/webhooks/repository.js';
import { createTestDatabase, type TestDatabase } from './helpers/db.js';
import type { TeamFixture } from './helpers/fixtures.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { testRegistry } from './helpers/test-tools.js';
import { waitFor } from './helpers/worker.js';
import { createEndpoint, deliveriesOf, eventOfRun, patchEndpoint, req, Runs, webhookTeam } from './helpers/webhooks.js';

let database: TestDatabase;
let s: TestServer;
let team: TeamFixture;
let runs: Runs;

before(async () => {
  database = await createTestDatabase();
  s = await startTestServer({ database, tools: testRegistry() });
  team = await webhookTeam(database.db);
  runs = await new Runs(s, team.key).init();
});
after(async () => {
  await s.close();
  await database.db.close();
});

/** No worker sends anything here: the address only has to pass the public-host rule. */
const PUBLIC_URL = 'https://93.184.215.14/hooks';

/** Backends of this database waiting for a row or table lock. */
async function lockWaiters(): Promise<number> {
  const { rows } = await database.db.pool.query<{ n: number }>(
    `SELECT count(*)::integer AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
  );
  return rows[0]?.n ?? 0;
}

/** Waits until `pending` has settled or is blocked on a lock; returns whether it blocked. */
async function blockedOrSettled(pending: Promise<unknown>): Promise<boolean> {
  let settled = false;
  void pending.then(
    () => (settled = true),
    () => (settled = true),
  );
  return waitFor('the second transaction to block on a lock or finish', async () => {
    if (settled) return false;
    return (await lockWaiters()) > 0 ? true : undefined;
  });
}

async function inTransaction(client: pg.PoolClient, fn: () => Promise<void>): Promise<void> {
  await client.query('BEGIN');
  await fn();
}

/** Returns a client to the pool without a transaction left open (when an assertion failed first). */
async function release(client: pg.PoolClient): Promise<void> {
  await client.query('ROLLBACK').catch(() => undefined);
  client.release();
}

describe('pausing an endpoint while a run finishes', () => {
  test('pause first: the event written meanwhile makes no delivery, so a resume sends nothing', async () => {
    const e = await createEndpoint(s, team.key, PUBLIC_URL);
    const run = await runs.start('hang');
    const pause = await database.db.pool.connect();
    try {
      // The pause as PATCH does it, left open: endpoint row locked, disabled, pending dropped.
      await inTransaction(pause, async () => {
        assert.ok(await getEndpoint(pause, team.teamId, e.id, { lock: true }));
        await updateEndpoint(pause, e.id, { enabled: false });
        await dropPending(pause, e.id);
      });
      const cancel = req(s, team.key, 'POST', `/v1/runs/${run.id}/cancel`);
      assert.equal(await blockedOrSettled(cancel), true, 'the fan-out waits for the pause to commit');
      await pause.query('COMMIT');
      assert.equal((await cancel).statusCode, 200);
    } finally {
      await release(pause);
    }
    await patchEndpoint(s, team.key, e.id, { enabled: true });
    const event = await eventOfRun(database.db, run.id);
    assert.deepEqual(
      (await deliveriesOf(database.db, e.id)).filter((d) => d.event_id === event.id),
      [],
      'the run finished while the endpoint was paused: no delivery',
    );
  });

  // Already held before the fan-out locked: the delivery's foreign key takes a KEY SHARE lock on
  // the endpoint, which the pause's FOR UPDATE waits for. Kept so that stays true.
  test('event first: the pause waits for it and then drops its delivery, so a resume sends nothing', async () => {
    const e = await createEndpoint(s, team.key, PUBLIC_URL);
    const run = await runs.start('hang');
    const finish = await database.db.pool.connect();
    try {
      // The cancel as the API does it, left open: the event row and its fan-out are written.
      await inTransaction(finish, async () => {
        const row = await lockRun(finish, run.id);
        assert.ok(row);
        assert.equal((await cancelLockedRun(finish, row)).kind, 'canceled');
      });
      const pausing = patchEndpoint(s, team.key, e.id, { enabled: false });
      assert.equal(await blockedOrSettled(pausing), true, 'the pause waits for the fan-out to commit');
      await finish.query('COMMIT');
      assert.equal((await pausing).enabled, false);
    } finally {
      await release(finish);
    }
    await patchEndpoint(s, team.key, e.id, { enabled: true });
    const event = await eventOfRun(database.db, run.id);
    assert.deepEqual(
      (await deliveriesOf(database.db, e.id)).filter((d) => d.event_id === event.id).map((d) => d.status),
      ['dropped'],
      'the delivery made just before the pause was dropped by it',
    );
  });
});
