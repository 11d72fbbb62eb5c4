// Issue 37: a run's hold and settlement move only the team's Sparks, and such a change no longer
// notifies toolrun_auth (migration 0024), so API processes keep the team's keys in memory across
// runs; every other change to a team still notifies. The balance has its own channel,
// toolrun_sparks (migration 0026), and GET /v1/me answers it from memory until it changes.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { AUTH_CHANNEL } from '../src/auth/key-cache.js';
import { SPARKS_CHANNEL } from '../src/sparks/balances.js';
import { createTestApp, type TestApp } from './helpers/app.js';
import { bearer, makeTeam } from './helpers/fixtures.js';
import { waitFor } from './helpers/process.js';

let t: TestApp;
let listener: pg.Client;
/** What was heard, as `channel:payload`. */
const heard: string[] = [];
let wake: (() => void) | null = null;

before(async () => {
  t = await createTestApp();
  listener = new pg.Client({ connectionString: t.database.url });
  await listener.connect();
  listener.on('notification', (m) => {
    heard.push(`${m.channel}:${m.payload ?? ''}`);
    wake?.();
  });
  await listener.query(`LISTEN ${AUTH_CHANNEL}`);
  await listener.query(`LISTEN ${SPARKS_CHANNEL}`);
});
after(async () => {
  await listener?.end();
  await t?.close();
});

/**
 * What toolrun_auth and toolrun_sparks carried for `change`, up to a marker sent after it:
 * notifications arrive in commit order, so whatever the change sent is heard before the marker.
 */
async function heardFor(change: () => Promise<unknown>): Promise<string[]> {
  heard.length = 0;
  await change();
  const marker = `marker-${Math.random()}`;
  await t.database.db.pool.query('SELECT pg_notify($1::text, $2::text)', [AUTH_CHANNEL, marker]);
  while (!heard.includes(`${AUTH_CHANNEL}:${marker}`)) {
    await new Promise<void>((resolve) => {
      wake = resolve;
    });
  }
  return heard.filter((p) => p !== `${AUTH_CHANNEL}:${marker}`);
}

describe('toolrun_auth, toolrun_sparks and the balance (migrations 0024, 0026)', () => {
  test('a change of sparks_available alone notifies toolrun_sparks only; a change of the name or the plan notifies toolrun_auth', async () => {
    const team = await makeTeam(t.database.db, { sparks: 100 });
    const pool = t.database.db.pool;
    const auth = `${AUTH_CHANNEL}:${team.teamId}`;
    const sparks = `${SPARKS_CHANNEL}:${team.teamId}`;
    assert.deepEqual(await heardFor(() => pool.query('UPDATE teams SET sparks_available = sparks_available - 7 WHERE id = $1::uuid', [team.teamId])), [sparks]);
    assert.deepEqual(await heardFor(() => pool.query('UPDATE teams SET sparks_available = sparks_available WHERE id = $1::uuid', [team.teamId])), [], 'the same balance notifies nobody');
    assert.deepEqual(await heardFor(() => pool.query("UPDATE teams SET name = 'Renamed' WHERE id = $1::uuid", [team.teamId])), [auth]);
    assert.deepEqual(
      (await heardFor(() => pool.query("UPDATE teams SET plan = 'plus', sparks_available = sparks_available + 7 WHERE id = $1::uuid", [team.teamId]))).sort(),
      [auth, sparks].sort(),
    );
  });

  test('GET /v1/me answers the balance from memory until toolrun_sparks names the team, then as it is now', async () => {
    const team = await makeTeam(t.database.db, { sparks: 250 });
    const me = async () => {
      const res = await t.app.inject({ method: 'GET', url: '/v1/me', headers: bearer(team.key) });
      assert.equal(res.statusCode, 200, res.body);
      return res.json<{ sparks_available: number }>().sparks_available;
    };
    assert.equal(await me(), 250);
    // A change nobody is told of (the trigger off for this session) is not seen: the answer came from memory.
    const client = await t.database.db.pool.connect();
    try {
      await client.query("SET session_replication_role = 'replica'");
      await client.query('UPDATE teams SET sparks_available = 200 WHERE id = $1::uuid', [team.teamId]);
      await client.query("SET session_replication_role = 'origin'");
    } finally {
      client.release();
    }
    assert.equal(await me(), 250, 'the balance was read again without a notification');
    // A change as holds, settlements and grants make it: heard, then read again.
    await heardFor(() => t.database.db.pool.query('UPDATE teams SET sparks_available = 180 WHERE id = $1::uuid', [team.teamId]));
    await waitFor('the notified balance to be answered', async () => (await me()) === 180, 10_000);
  });
});
