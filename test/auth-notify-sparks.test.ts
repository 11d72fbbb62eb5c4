// Issue 37: a run's hold and settlement move only the team's Sparks, and such a change no longer
// notifies toolrun_auth (migration 0024), so API processes keep the team's keys in memory across
// runs; every other change to a team still notifies, and GET /v1/me reads the balance itself.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { AUTH_CHANNEL } from '../src/auth/key-cache.js';
import { createTestApp, type TestApp } from './helpers/app.js';
import { bearer, makeTeam } from './helpers/fixtures.js';

let t: TestApp;
let listener: pg.Client;
const heard: string[] = [];
let wake: (() => void) | null = null;

before(async () => {
  t = await createTestApp();
  listener = new pg.Client({ connectionString: t.database.url });
  await listener.connect();
  listener.on('notification', (m) => {
    heard.push(m.payload ?? '');
    wake?.();
  });
  await listener.query(`LISTEN ${AUTH_CHANNEL}`);
});
after(async () => {
  await listener?.end();
  await t?.close();
});

/**
 * What toolrun_auth carried for `change`, up to a marker sent after it: notifications arrive in
 * commit order, so whatever the change sent is heard before the marker.
 */
async function heardFor(change: () => Promise<unknown>): Promise<string[]> {
  heard.length = 0;
  await change();
  const marker = `marker-${Math.random()}`;
  await t.database.db.pool.query('SELECT pg_notify($1::text, $2::text)', [AUTH_CHANNEL, marker]);
  while (!heard.includes(marker)) {
    await new Promise<void>((resolve) => {
      wake = resolve;
    });
  }
  return heard.filter((p) => p !== marker);
}

describe('toolrun_auth and the Sparks (migration 0024)', () => {
  test('a change of sparks_available alone notifies nobody; a change of the name or the plan does', async () => {
    const team = await makeTeam(t.database.db, { sparks: 100 });
    const pool = t.database.db.pool;
    assert.deepEqual(await heardFor(() => pool.query('UPDATE teams SET sparks_available = sparks_available - 7 WHERE id = $1::uuid', [team.teamId])), []);
    assert.deepEqual(await heardFor(() => pool.query("UPDATE teams SET name = 'Renamed' WHERE id = $1::uuid", [team.teamId])), [team.teamId]);
    assert.deepEqual(
      await heardFor(() => pool.query("UPDATE teams SET plan = 'plus', sparks_available = sparks_available + 7 WHERE id = $1::uuid", [team.teamId])),
      [team.teamId],
    );
  });

  test('GET /v1/me answers the balance as it is now, though the key is answered from memory', async () => {
    const team = await makeTeam(t.database.db, { sparks: 250 });
    const me = async () => {
      const res = await t.app.inject({ method: 'GET', url: '/v1/me', headers: bearer(team.key) });
      assert.equal(res.statusCode, 200, res.body);
      return res.json<{ sparks_available: number }>().sparks_available;
    };
    assert.equal(await me(), 250);
    await t.database.db.pool.query('UPDATE teams SET sparks_available = 180 WHERE id = $1::uuid', [team.teamId]);
    assert.equal(await me(), 180);
  });
});
