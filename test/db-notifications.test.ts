// A process LISTENs on one connection for all its parts (src/db/listen.ts): PostgreSQL signals
// every listening backend on every NOTIFY, so each extra listener cost the server CPU on every run
// (issue 37). Subscribers share it, hear only their channels, learn of a lost connection and of
// its return, and the connection closes with its last subscriber.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createDb, type Db } from '../src/db/pool.js';
import type { SubscriberOptions } from '../src/db/listen.js';
import { createTestDatabase, type TestDatabase } from './helpers/db.js';
import { waitFor } from './helpers/worker.js';
import { testLogger } from './helpers/test-logs.js';

let database: TestDatabase;
let db: Db;
const APP = 'toolrun-hubtest';

before(async () => {
  database = await createTestDatabase();
  db = createDb({ connectionString: database.url, logger: testLogger('silent'), applicationName: APP, max: 2 });
});
after(async () => {
  await db.close();
  await database.db.close();
});

async function listeners(): Promise<number[]> {
  const { rows } = await database.db.pool.query<{ pid: number }>(
    'SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1::text ORDER BY pid',
    [`${APP}-listen`],
  );
  return rows.map((r) => r.pid);
}

interface Recorder extends SubscriberOptions {
  got: string[];
  connected: number;
  disconnected: number;
}

function recorder(channels: string[]): Recorder {
  const r: Recorder = {
    channels,
    got: [],
    connected: 0,
    disconnected: 0,
    onNotification: (channel, payload) => r.got.push(`${channel}:${payload ?? ''}`),
    onConnected: () => r.connected++,
    onDisconnected: () => r.disconnected++,
  };
  return r;
}

async function notify(channel: string, payload: string): Promise<void> {
  await database.db.pool.query('SELECT pg_notify($1::text, $2::text)', [channel, payload]);
}

describe('the process-wide LISTEN connection', () => {
  test('subscribers share one connection and hear only their channels; the connection closes with the last', async () => {
    const a = recorder(['hub_a', 'hub_shared']);
    const b = recorder(['hub_b', 'hub_shared']);
    const subA = db.notifications.subscribe(a);
    const subB = db.notifications.subscribe(b);
    await Promise.all([subA.start(), subB.start()]);
    assert.equal((await listeners()).length, 1, 'one LISTEN connection for both');
    assert.equal(a.connected, 1);
    assert.equal(b.connected, 1);

    await notify('hub_a', '1');
    await notify('hub_b', '2');
    await notify('hub_shared', '3');
    await waitFor('both to hear', async () => (a.got.length === 2 && b.got.length === 2 ? true : undefined));
    assert.deepEqual(a.got, ['hub_a:1', 'hub_shared:3']);
    assert.deepEqual(b.got, ['hub_b:2', 'hub_shared:3']);

    // A subscriber joining a live connection has its channels LISTENed before it is told it is connected.
    const c = recorder(['hub_c']);
    const subC = db.notifications.subscribe(c);
    await subC.start();
    assert.equal(c.connected, 1);
    assert.equal(a.connected, 1, 'the others are not told again');
    await notify('hub_c', '4');
    await waitFor('the late subscriber to hear', async () => (c.got.length === 1 ? true : undefined));
    assert.deepEqual(c.got, ['hub_c:4']);
    assert.equal((await listeners()).length, 1, 'still one connection');

    assert.deepEqual(await db.notifications.listeningChannels(), ['hub_a', 'hub_b', 'hub_c', 'hub_shared']);

    // A subscriber that stops takes its own channels off the connection, not the ones others share.
    await subA.stop();
    assert.deepEqual(await db.notifications.listeningChannels(), ['hub_b', 'hub_c', 'hub_shared']);
    await notify('hub_a', '5');
    await notify('hub_shared', '6');
    await waitFor('b to hear the shared channel', async () => (b.got.length === 3 ? true : undefined));
    assert.deepEqual(b.got, ['hub_b:2', 'hub_shared:3', 'hub_shared:6']);
    assert.deepEqual(a.got, ['hub_a:1', 'hub_shared:3'], 'a stopped hears nothing more');
    await subB.stop();
    assert.deepEqual(await db.notifications.listeningChannels(), ['hub_c']);
    assert.equal((await listeners()).length, 1, 'open while anyone listens');
    // Joining again for a channel given up LISTENs it again.
    const a2 = recorder(['hub_a']);
    const subA2 = db.notifications.subscribe(a2);
    await subA2.start();
    assert.deepEqual(await db.notifications.listeningChannels(), ['hub_a', 'hub_c']);
    await notify('hub_a', '7');
    await waitFor('the returning subscriber to hear', async () => (a2.got.length === 1 ? true : undefined));
    assert.deepEqual(a2.got, ['hub_a:7']);
    await subA2.stop();
    await subC.stop();
    await waitFor('the connection to close with its last subscriber', async () => ((await listeners()).length === 0 ? true : undefined));
  });

  test('a lost connection tells every subscriber, comes back by itself, and tells them again', async () => {
    const a = recorder(['hub_x']);
    const b = recorder(['hub_y']);
    const subA = db.notifications.subscribe(a);
    const subB = db.notifications.subscribe(b);
    await subA.start();
    await subB.startOrRetry();
    const [pid] = await listeners();
    assert.ok(pid);
    await database.db.pool.query('SELECT pg_terminate_backend($1::int)', [pid]);
    await waitFor('both to learn of the loss', async () => (a.disconnected === 1 && b.disconnected === 1 ? true : undefined));
    await waitFor('the connection to return', async () => (a.connected === 2 && b.connected === 2 ? true : undefined), 15_000);
    const now = await listeners();
    assert.equal(now.length, 1);
    assert.notEqual(now[0], pid);
    await notify('hub_x', 'after');
    await notify('hub_y', 'after');
    await waitFor('both to hear on the new connection', async () => (a.got.length === 1 && b.got.length === 1 ? true : undefined));
    await subA.stop();
    await subB.stop();
  });

  test('start fails when the server cannot be reached; startOrRetry keeps trying', async () => {
    const down = createDb({ connectionString: 'postgres://nobody@127.0.0.1:1/none', logger: testLogger('silent'), max: 1 });
    try {
      const r = recorder(['hub_z']);
      await assert.rejects(down.notifications.subscribe(r).start(), /ECONNREFUSED|connect/);
      assert.equal(r.connected, 0);
      const retrying = down.notifications.subscribe(recorder(['hub_z']));
      await retrying.startOrRetry(); // resolves: the connection is tried again in the background
      await retrying.stop();
    } finally {
      await down.close();
    }
  });
});
