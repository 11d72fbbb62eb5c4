// Failing endpoints pause themselves: 410 Gone at once (reason gone), a failing streak older than
// the window on its next failed attempt (reason failing); a success ends the streak; resuming
// clears reason and streak. Real deliveries from a WebhookWorker to an HTTPS receiver; the streak's
// age is set back in SQL instead of waited for. Also what the console's JSON API shows, and that
// another team sees none of it.
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { ConfigError, loadConfig } from '../src/config/config.js';
import type { TeamFixture } from './helpers/fixtures.js';
import { signedInMember } from './helpers/console.js';
import { closeReceivers, fail500, Receiver } from './helpers/receiver.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { testRegistry } from './helpers/test-tools.js';
import { waitFor } from './helpers/worker.js';
import { createEndpoint, deliveriesOf, patchEndpoint, req, Runs, startWebhookWorker, stopWebhookWorkers, webhookTeam, type EndpointJson } from './helpers/webhooks.js';

const ENV = { TOOLRUN_ALLOW_PRIVATE_NETWORK: '1', TOOLRUN_WEBHOOK_RETRY_DELAYS: '1,1,1', TOOLRUN_WORKER_POLL_MS: '200', TOOLRUN_WEBHOOK_CONCURRENCY: '4' };
const gone = { status: 410, body: 'gone' };
let s: TestServer;
let team: TeamFixture;
let runs: Runs;

before(async () => {
  s = await startTestServer({ tools: testRegistry(), env: ENV });
  await startWebhookWorker(s);
});
beforeEach(async () => {
  team = await webhookTeam(s.database.db);
  runs = await new Runs(s, team.key).init();
});
after(async () => {
  await stopWebhookWorkers();
  await closeReceivers();
  await s.close();
});

type Endpoint = EndpointJson & { paused_reason?: string; paused_at?: string };

interface Health {
  enabled: boolean;
  paused_reason: string | null;
  paused_at: Date | null;
  failing_since: Date | null;
}

async function health(id: string): Promise<Health> {
  const { rows } = await s.database.db.pool.query<Health>('SELECT enabled, paused_reason, paused_at, failing_since FROM webhook_endpoints WHERE id = $1::uuid', [id]);
  assert.ok(rows[0]);
  return rows[0];
}

function waitHealth(id: string, what: string, ok: (h: Health) => boolean): Promise<Health> {
  return waitFor(`endpoint ${id}: ${what}`, async () => {
    const h = await health(id);
    return ok(h) ? h : undefined;
  });
}

async function endpointOf(key: string, id: string): Promise<Endpoint | undefined> {
  const res = await req(s, key, 'GET', '/v1/webhook-endpoints');
  assert.equal(res.statusCode, 200, res.body);
  return res.json<{ data: Endpoint[] }>().data.find((e) => e.id === id);
}

/** The earliest attempt the worker recorded for the endpoint. */
async function firstAttemptAt(id: string): Promise<Date> {
  const { rows } = await s.database.db.pool.query<{ at: Date }>('SELECT min(attempted_at) AS at FROM webhook_attempts WHERE endpoint_id = $1::uuid', [id]);
  assert.ok(rows[0]?.at);
  return rows[0].at;
}

function pauseLines(id: string): { msg: string; paused_reason: string; team_id: string }[] {
  return s.logs.lines
    .map((l) => JSON.parse(l) as { level: number; msg: string; endpoint_id?: string; paused_reason: string; team_id: string })
    .filter((l) => l.endpoint_id === id && l.level === 40 && l.msg.startsWith('webhook endpoint paused'));
}

describe('failing endpoints pause themselves', () => {
  test('410 Gone pauses at once (reason gone): pending retries dropped, logged, shown on /v1 and in the console', async () => {
    const r = (await Receiver.start()).otherwise(gone);
    const e = await createEndpoint(s, team.key, r.url(), ['run.canceled']);
    await runs.canceled();
    const h = await waitHealth(e.id, 'paused', (x) => !x.enabled);
    assert.equal(h.paused_reason, 'gone');
    assert.ok(h.paused_at);
    assert.equal(r.requests.length, 1, 'no retry after a 410');
    assert.deepEqual((await deliveriesOf(s.database.db, e.id)).map((d) => d.status), ['dropped']);
    const shown = await endpointOf(team.key, e.id);
    const { signing_secret: _secret, ...created } = e;
    assert.deepEqual(shown, { ...created, enabled: false, paused_reason: 'gone', paused_at: h.paused_at.toISOString() });
    const [line, ...more] = pauseLines(e.id);
    assert.equal(more.length, 0);
    assert.equal(line?.msg, 'webhook endpoint paused: it answered 410 Gone');
    assert.equal(line?.paused_reason, 'gone');
    assert.equal(line?.team_id, team.teamId);

    // Runs that end while it is paused are never sent, as after a member's pause.
    await runs.canceled();
    assert.equal((await deliveriesOf(s.database.db, e.id)).length, 1);

    // The console's JSON API (what the webhooks page renders) says why, to members as well.
    const member = await signedInMember(s.url, s.database.db, team.teamId, 'member');
    const res = await member.client.call('GET', '/console/api/webhooks');
    assert.equal(res.statusCode, 200, res.body);
    const listed = res.json<{ data: Endpoint[] }>().data.find((x) => x.id === e.id);
    assert.equal(listed?.enabled, false);
    assert.equal(listed?.paused_reason, 'gone');
    assert.equal(listed?.paused_at, h.paused_at.toISOString());

    // Resuming clears the reason; the endpoint receives again.
    r.otherwise({ status: 204 });
    assert.deepEqual(await patchEndpoint(s, team.key, e.id, { enabled: true }), created);
    assert.deepEqual(await health(e.id), { enabled: true, paused_reason: null, paused_at: null, failing_since: null });
    await runs.canceled();
    await r.waitForRequests(2);
  });

  test('a test ping answered 410 reports it and pauses nothing', async () => {
    const r = (await Receiver.start()).otherwise(gone);
    const e = await createEndpoint(s, team.key, r.url());
    const res = await req(s, team.key, 'POST', `/v1/webhook-endpoints/${e.id}/test`);
    assert.deepEqual([res.json<{ delivered: boolean }>().delivered, res.json<{ response_code: number }>().response_code], [false, 410]);
    assert.deepEqual(await health(e.id), { enabled: true, paused_reason: null, paused_at: null, failing_since: null });
  });

  test('a failing streak older than the window pauses on the next failed attempt (reason failing); resume clears it', async () => {
    const r = (await Receiver.start()).otherwise(fail500);
    const e = await createEndpoint(s, team.key, r.url(), ['run.canceled']);
    await runs.canceled();
    const started = await waitHealth(e.id, 'a failing streak', (x) => x.failing_since !== null);
    assert.equal(started.failing_since?.toISOString(), (await firstAttemptAt(e.id)).toISOString(), 'the streak began with the first failed attempt');
    assert.equal(started.enabled, true, 'a young streak pauses nothing');
    assert.equal((await endpointOf(team.key, e.id))?.paused_reason, undefined);

    // Five days and a minute of failures, without the wait: the next failed attempt pauses.
    await s.database.db.pool.query(`UPDATE webhook_endpoints SET failing_since = failing_since - interval '5 days 1 minute' WHERE id = $1::uuid`, [e.id]);
    await runs.canceled();
    const h = await waitHealth(e.id, 'paused', (x) => !x.enabled);
    assert.equal(h.paused_reason, 'failing');
    assert.ok(h.failing_since, 'the streak is kept while paused');
    assert.ok((await deliveriesOf(s.database.db, e.id)).every((d) => d.status === 'dropped' || d.status === 'failed'), 'nothing left pending');
    assert.equal((await endpointOf(team.key, e.id))?.paused_reason, 'failing');
    const [line] = pauseLines(e.id);
    assert.match(line?.msg ?? '', /^webhook endpoint paused: every delivery attempt failed for more than 432000 s$/);

    // Pausing again by hand keeps the reason; only resuming clears it, and the streak with it.
    assert.equal(((await patchEndpoint(s, team.key, e.id, { enabled: false })) as Endpoint).paused_reason, 'failing');
    const resumed = (await patchEndpoint(s, team.key, e.id, { enabled: true })) as Endpoint;
    assert.equal(resumed.paused_reason, undefined);
    assert.deepEqual(await health(e.id), { enabled: true, paused_reason: null, paused_at: null, failing_since: null });
  });

  test('a success ends the streak, even one older than the window', async () => {
    const r = (await Receiver.start()).program(fail500);
    const e = await createEndpoint(s, team.key, r.url(), ['run.canceled']);
    await runs.canceled();
    await waitHealth(e.id, 'a failing streak', (x) => x.failing_since !== null);
    await s.database.db.pool.query(`UPDATE webhook_endpoints SET failing_since = failing_since - interval '6 days' WHERE id = $1::uuid AND failing_since IS NOT NULL`, [e.id]);
    await r.waitForRequests(2);
    const h = await waitHealth(e.id, 'the streak ended', (x) => x.failing_since === null);
    assert.equal(h.enabled, true);
    assert.equal(h.paused_reason, null);
    assert.deepEqual((await deliveriesOf(s.database.db, e.id)).map((d) => d.status), ['delivered']);
  });

  test('a member pause has no reason', async () => {
    const e = await createEndpoint(s, team.key, 'https://93.184.215.14/hooks');
    const paused = await patchEndpoint(s, team.key, e.id, { enabled: false });
    assert.deepEqual(Object.keys(paused).sort(), ['created_at', 'enabled', 'events', 'id', 'object', 'url']);
    assert.equal((await health(e.id)).paused_reason, null);
  });

  test("another team sees none of it and cannot resume it", async () => {
    const r = (await Receiver.start()).otherwise(gone);
    const e = await createEndpoint(s, team.key, r.url(), ['run.canceled']);
    await runs.canceled();
    await waitHealth(e.id, 'paused', (x) => !x.enabled);
    const other = await webhookTeam(s.database.db);
    assert.equal(await endpointOf(other.key, e.id), undefined);
    const res = await req(s, other.key, 'PATCH', `/v1/webhook-endpoints/${e.id}`, { enabled: true });
    assert.equal(res.statusCode, 404);
    assert.equal(res.json<{ error: { code: string } }>().error.code, 'webhook_endpoint_not_found');
    const rotate = await req(s, other.key, 'POST', `/v1/webhook-endpoints/${e.id}/rotate-secret`, {});
    assert.equal(rotate.statusCode, 404);
    const stranger = await signedInMember(s.url, s.database.db, other.teamId, 'owner');
    const listed = await stranger.client.call('GET', '/console/api/webhooks');
    assert.deepEqual(listed.json<{ data: unknown[] }>().data, []);
    assert.equal((await health(e.id)).paused_reason, 'gone');
  });
});

describe('TOOLRUN_WEBHOOK_PAUSE_AFTER_FAILING_SECONDS', () => {
  test('5 days unless set; 0 turns the failing pause off; anything else is refused by name', () => {
    const base = { TOOLRUN_ENV: 'test', TOOLRUN_DATA_DIR: '/tmp/unused' };
    assert.equal(loadConfig(base).webhooks.pauseAfterFailingSeconds, 432_000);
    assert.equal(loadConfig({ ...base, TOOLRUN_WEBHOOK_PAUSE_AFTER_FAILING_SECONDS: '0' }).webhooks.pauseAfterFailingSeconds, 0);
    for (const bad of ['-1', '1.5', '5d', String(365 * 86400 + 1)]) {
      assert.throws(
        () => loadConfig({ ...base, TOOLRUN_WEBHOOK_PAUSE_AFTER_FAILING_SECONDS: bad }),
        (err: unknown) => err instanceof ConfigError && err.variable === 'TOOLRUN_WEBHOOK_PAUSE_AFTER_FAILING_SECONDS',
      );
    }
  });
});
