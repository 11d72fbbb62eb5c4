// Retention (issue 37): the janitor deletes rows past their period (webhook deliveries and
// attempts, run events, expired output and file rows, rate buckets of revoked keys), keeps younger
// ones, and what disappears changes no API answer beyond a 404 in the spec's envelope. Rows are
// back-dated with SQL; the deletes run through the same function the janitor calls.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { loadConfig } from '../src/config/config.js';
import { STREAM_RESUME_DAYS, type RetentionConfig } from '../src/config/retention.js';
import { ConfigError } from '../src/config/values.js';
import { LOOK_BACK_HOURS } from '../src/events/routes.js';
import { deleteExpiredRows } from '../src/retention/janitor.js';
import { insertRun } from '../src/runs/repository.js';
import { assertError } from './helpers/error-envelope.js';
import { makeTeam, type TeamFixture } from './helpers/fixtures.js';
import { assertFieldErrors, call, type RunJson } from './helpers/runs.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { openStream } from './helpers/sse-client.js';
import { testRegistry } from './helpers/test-tools.js';
import { createEndpoint, eventOfRun, req, Runs, webhookTeam } from './helpers/webhooks.js';

const tools = testRegistry();
let s: TestServer;
let team: TeamFixture;
let runs: Runs;

const retention = (over: Partial<RetentionConfig> = {}): RetentionConfig => ({ runEventsDays: 30, webhookDays: 30, expiredRowsDays: 7, batchSize: 1000, ...over });
const janitor = (over: Partial<RetentionConfig> = {}) => deleteExpiredRows(s.database.db.pool, retention(over), s.logger);

/** Sets a timestamp column of one row to `hours` hours ago. */
async function backdate(table: string, column: string, id: string, hours: number): Promise<void> {
  const { rowCount } = await s.database.db.pool.query(`UPDATE ${table} SET ${column} = now() - make_interval(hours => $2::integer) WHERE id = $1::uuid`, [id, hours]);
  assert.equal(rowCount, 1, `${table} ${id}`);
}

async function exists(table: string, id: string): Promise<boolean> {
  const { rowCount } = await s.database.db.pool.query(`SELECT 1 FROM ${table} WHERE id = $1::uuid`, [id]);
  return rowCount === 1;
}

async function deliveryOf(eventId: string): Promise<string> {
  const { rows } = await s.database.db.pool.query<{ id: string }>('SELECT id FROM webhook_deliveries WHERE event_id = $1::uuid', [eventId]);
  assert.ok(rows[0], `no delivery of event ${eventId}`);
  return rows[0].id;
}

async function endDelivery(id: string, status: 'delivered' | 'failed', finishedHoursAgo: number): Promise<void> {
  await s.database.db.pool.query(
    `UPDATE webhook_deliveries SET status = $2::text, attempts = 1, finished_at = now() - make_interval(hours => $3::integer) WHERE id = $1::uuid`,
    [id, status, finishedHoursAgo],
  );
}

async function addAttempt(deliveryId: string, endpointId: string, hoursAgo: number): Promise<string> {
  const { rows } = await s.database.db.pool.query<{ id: string }>(
    `INSERT INTO webhook_attempts (delivery_id, endpoint_id, event_type, status_code, duration_ms, attempted_at)
     VALUES ($1::uuid, $2::uuid, 'run.canceled', 500, 12, now() - make_interval(hours => $3::integer)) RETURNING id::text`,
    [deliveryId, endpointId, hoursAgo],
  );
  return rows[0]!.id;
}

async function attemptExists(id: string): Promise<boolean> {
  const { rowCount } = await s.database.db.pool.query('SELECT 1 FROM webhook_attempts WHERE id = $1::bigint', [id]);
  return rowCount === 1;
}

before(async () => {
  s = await startTestServer({ tools, env: { TOOLRUN_ALLOW_PRIVATE_NETWORK: '1' } });
  team = await webhookTeam(s.database.db);
  runs = await new Runs(s, team.key).init();
});
after(async () => {
  s.app.server.closeAllConnections();
  await s.close();
});

describe('retention settings', () => {
  test('defaults: run events and webhooks 30 days, expired rows 7 days; events never shorter than webhooks or the stream resume', () => {
    assert.deepEqual(s.config.retention, { runEventsDays: 30, webhookDays: 30, expiredRowsDays: 7, batchSize: 1000 });
    assert.ok(STREAM_RESUME_DAYS * 24 >= LOOK_BACK_HOURS, 'run events outlive the team stream resume window');
    const env = { TOOLRUN_ENV: 'test', TOOLRUN_DATA_DIR: s.config.dataDir };
    assert.equal(loadConfig({ ...env, TOOLRUN_RETENTION_WEBHOOK_DAYS: '60' }).retention.runEventsDays, 60);
    assert.throws(
      () => loadConfig({ ...env, TOOLRUN_RETENTION_WEBHOOK_DAYS: '30', TOOLRUN_RETENTION_RUN_EVENTS_DAYS: '10' }),
      (err: unknown) => err instanceof ConfigError && err.variable === 'TOOLRUN_RETENTION_RUN_EVENTS_DAYS' && /at least TOOLRUN_RETENTION_WEBHOOK_DAYS \(30\)/.test(err.message),
    );
    assert.throws(() => loadConfig({ ...env, TOOLRUN_RETENTION_RUN_EVENTS_DAYS: '0' }), (err: unknown) => err instanceof ConfigError);
  });
});

describe('webhook deliveries, attempts and run events', () => {
  test('past 30 days they go, younger and pending ones stay, and the API answers for what went with a 404', async () => {
    const D = 24;
    // Events without a delivery (no endpoint yet): 31 days old goes, 29 days old stays.
    const oldLone = await eventOfRun(s.database.db, (await runs.canceled()).id);
    const youngLone = await eventOfRun(s.database.db, (await runs.canceled()).id);
    await backdate('run_events', 'created_at', oldLone.id, 31 * D);
    await backdate('run_events', 'created_at', youngLone.id, 29 * D);
    const endpoint = await createEndpoint(s, team.key, 'https://127.0.0.1:9/hooks');
    // Ended 31 days ago: the delivery, its attempt and its event go.
    const oldEvent = await eventOfRun(s.database.db, (await runs.canceled()).id);
    const oldDelivery = await deliveryOf(oldEvent.id);
    await backdate('run_events', 'created_at', oldEvent.id, 31 * D);
    await endDelivery(oldDelivery, 'failed', 31 * D);
    const oldAttempt = await addAttempt(oldDelivery, endpoint.id, 31 * D);
    // Redelivered late: the event is 40 days old but its delivery ended 10 days ago; both stay.
    const lateEvent = await eventOfRun(s.database.db, (await runs.canceled()).id);
    const lateDelivery = await deliveryOf(lateEvent.id);
    await backdate('run_events', 'created_at', lateEvent.id, 40 * D);
    await endDelivery(lateDelivery, 'failed', 10 * D);
    const lateAttempt = await addAttempt(lateDelivery, endpoint.id, 10 * D);
    // Still pending, however old: never deleted, nor its event.
    const pendingEvent = await eventOfRun(s.database.db, (await runs.canceled()).id);
    const pendingDelivery = await deliveryOf(pendingEvent.id);
    await backdate('run_events', 'created_at', pendingEvent.id, 40 * D);
    await backdate('webhook_deliveries', 'created_at', pendingDelivery, 40 * D);

    const deleted = await janitor();
    assert.ok((deleted.webhook_deliveries ?? 0) >= 1 && (deleted.run_events ?? 0) >= 2 && (deleted.webhook_attempts ?? 0) >= 1, JSON.stringify(deleted));
    assert.equal(await exists('run_events', oldLone.id), false);
    assert.equal(await exists('run_events', youngLone.id), true);
    assert.equal(await exists('webhook_deliveries', oldDelivery), false);
    assert.equal(await exists('run_events', oldEvent.id), false);
    assert.equal(await attemptExists(oldAttempt), false);
    assert.equal(await exists('webhook_deliveries', lateDelivery), true);
    assert.equal(await exists('run_events', lateEvent.id), true);
    assert.equal(await attemptExists(lateAttempt), true);
    assert.equal(await exists('webhook_deliveries', pendingDelivery), true);
    assert.equal(await exists('run_events', pendingEvent.id), true);

    // The log lists what is left; the deleted delivery's redeliver is a 404 in the envelope; a kept one redelivers.
    const page = await req(s, team.key, 'GET', `/v1/webhook-endpoints/${endpoint.id}/deliveries`);
    assert.equal(page.statusCode, 200, page.body);
    assert.deepEqual(new Set(page.json<{ data: { id: string }[] }>().data.map((d) => d.id)), new Set([lateDelivery, pendingDelivery]));
    assertError(await req(s, team.key, 'POST', `/v1/webhook-endpoints/${endpoint.id}/deliveries/${oldDelivery}/redeliver`), 404, 'delivery_not_found');
    assertError(await req(s, team.key, 'GET', `/v1/webhook-endpoints/${endpoint.id}/deliveries?starting_after=${oldDelivery}`), 422, 'invalid_request');
    const again = await req(s, team.key, 'POST', `/v1/webhook-endpoints/${endpoint.id}/deliveries/${lateDelivery}/redeliver`);
    assert.equal(again.statusCode, 200, again.body);
  });
});

describe('expired output and file rows', () => {
  test('rows expired more than 7 days ago go; the run, its output URL and file ids answer as before', async () => {
    const runId = randomUUID();
    await insertRun(s.database.db.pool, {
      ...{ id: runId, teamId: team.teamId, apiKeyId: team.keyId, memberId: team.memberId, toolId: 'test_copy', productId: 'test_copy' },
      ...{ inputs: {}, price: 0, hold: 0, maxAttempts: 1, idempotencyKey: null, requestHash: null },
    });
    await s.database.db.pool.query(`UPDATE runs SET status = 'succeeded', finished_at = now() WHERE id = $1::uuid`, [runId]);
    const output = async (position: number, status: string, expiresHours: number) => {
      const id = randomUUID();
      await s.database.db.pool.query(
        `INSERT INTO run_outputs (id, run_id, position, storage_key, file_name, mime_type, size_bytes, sha256, status, expires_at)
         VALUES ($1::uuid, $2::uuid, $3::integer, 'gone', 'o.png', 'image/png', 10, 'x', $4::text, now() + make_interval(hours => $5::integer))`,
        [id, runId, position, status, expiresHours],
      );
      return id;
    };
    const oldOutput = await output(0, 'expired', -8 * 24);
    const youngOutput = await output(1, 'expired', -6 * 24);
    const liveOutput = await output(2, 'ready', 24);
    const before = await call(s, team.key, 'GET', `/v1/runs/${runId}`);
    assert.deepEqual(before.json<RunJson>().outputs.map((o) => o.asset_id), [liveOutput]);

    const file = async (status: string, expiresHours: number | null, uploadExpiresHours: number) => {
      const id = randomUUID();
      await s.database.db.pool.query(
        `INSERT INTO files (id, team_id, file_name, declared_mime, size_bytes, part_size_bytes, part_count, storage_key, upload_id, status,
                            expires_at, upload_expires_at)
         VALUES ($1::uuid, $2::uuid, 'a.png', 'image/png', 10, 10, 1, 'k', 'u', $3::text,
                 now() + make_interval(hours => $4::integer), now() + make_interval(hours => $5::integer))`,
        [id, team.teamId, status, expiresHours, uploadExpiresHours],
      );
      return id;
    };
    const oldFile = await file('expired', -8 * 24, -9 * 24);
    const abandoned = await file('expired', null, -8 * 24);
    const youngFile = await file('expired', -6 * 24, -7 * 24);
    const readyFile = await file('ready', 24, -1);

    await janitor();
    assert.equal(await exists('run_outputs', oldOutput), false);
    assert.equal(await exists('run_outputs', youngOutput), true);
    assert.equal(await exists('run_outputs', liveOutput), true);
    assert.equal(await exists('files', oldFile), false);
    assert.equal(await exists('files', abandoned), false);
    assert.equal(await exists('files', youngFile), true);
    assert.equal(await exists('files', readyFile), true);

    const afterRun = await call(s, team.key, 'GET', `/v1/runs/${runId}`);
    assert.equal(afterRun.statusCode, 200, afterRun.body);
    assert.deepEqual(afterRun.json<RunJson>(), before.json<RunJson>());
    for (const id of [oldOutput, youngOutput]) {
      assertError(await call(s, team.key, 'GET', `/v1/runs/${runId}/outputs/${id}/url`), 404, 'output_not_found');
    }
    // A deleted file answers as an expired one did: 404 on complete, workspace_asset_not_found as an input.
    assertError(await call(s, team.key, 'POST', `/v1/files/${oldFile}/complete`, { upload_id: 'u', parts: [{ part_number: 1, etag: '"e"' }] }), 404, 'file_not_found');
    assertFieldErrors(await call(s, team.key, 'POST', '/v1/tools/test_copy/runs', { inputs: { image: [oldFile] } }), [
      { loc: ['body', 'inputs', 'image'], code: 'workspace_asset_not_found' },
    ]);
  });
});

describe('rate buckets', () => {
  test('the buckets of keys revoked over an hour ago and of removed members go; a revoked key stays refused', async () => {
    const [gone, recent, live, removed] = [await makeTeam(s.database.db), await makeTeam(s.database.db), await makeTeam(s.database.db), await makeTeam(s.database.db)];
    for (const t of [gone, recent, live]) assert.equal((await call(s, t.key, 'GET', '/v1/me')).statusCode, 200);
    const pool = s.database.db.pool;
    await pool.query(`INSERT INTO rate_buckets (member_id, lane, capacity, tokens, refilled_at) VALUES ($1::uuid, 'console', 60, 60, now())`, [removed.memberId]);
    await pool.query(`UPDATE api_keys SET revoked_at = now() - interval '2 hours' WHERE id = $1::uuid`, [gone.keyId]);
    await pool.query(`UPDATE api_keys SET revoked_at = now() - interval '10 minutes' WHERE id = $1::uuid`, [recent.keyId]);
    await pool.query(`UPDATE members SET removed_at = now() - interval '2 hours' WHERE id = $1::uuid`, [removed.memberId]);
    await janitor();
    const buckets = async (col: string, id: string) => (await pool.query(`SELECT 1 FROM rate_buckets WHERE ${col} = $1::uuid`, [id])).rowCount;
    assert.equal(await buckets('key_id', gone.keyId), 0);
    assert.equal(await buckets('key_id', recent.keyId), 1);
    assert.equal(await buckets('key_id', live.keyId), 1);
    assert.equal(await buckets('member_id', removed.memberId), 0);
    assertError(await call(s, gone.key, 'GET', '/v1/me'), 401, 'invalid_api_key');
    assert.equal(await buckets('key_id', gone.keyId), 0, 'a refused revoked key makes no bucket again');
  });
});

describe('streams after retention', () => {
  test("the team stream resumes from an event of the last day, and a final run's own stream ends or replays with no event row at all", async () => {
    // A team of its own, with no webhook endpoint: its events have no delivery to keep them.
    const own = await webhookTeam(s.database.db);
    const ownRuns = await new Runs(s, own.key).init();
    const young = await eventOfRun(s.database.db, (await ownRuns.canceled()).id);
    const oldRun = await ownRuns.canceled();
    const old = await eventOfRun(s.database.db, oldRun.id);
    await backdate('run_events', 'created_at', young.id, 23);
    await backdate('run_events', 'created_at', old.id, 25);
    // The shortest periods allowed: 1 day, the team stream's resume window.
    await janitor({ runEventsDays: 1, webhookDays: 1 });
    assert.equal(await exists('run_events', young.id), true);
    assert.equal(await exists('run_events', old.id), false);
    const auth = { authorization: `Bearer ${own.key}` };
    const resumed = await openStream(`${s.url}/v1/events`, { ...auth, 'last-event-id': young.id });
    assert.equal(resumed.status, 200, resumed.body);
    resumed.close();
    // The run stream reads the run row (kept for ever): done with the final run, then 204 on resuming after it.
    const full = await openStream(`${s.url}/v1/runs/${oldRun.id}/events`, auth);
    const done = await full.next((e) => e.event === 'done', 'done');
    await full.untilEnded();
    assert.equal((JSON.parse(done.data) as RunJson).status, 'canceled');
    const afterDone = await openStream(`${s.url}/v1/runs/${oldRun.id}/events`, { ...auth, 'last-event-id': done.id ?? '' });
    assert.equal(afterDone.status, 204);
  });
});
