// Webhook URLs on hosts that are not public: refused at creation, at a ping and by the worker
// (for rows written around the API, as if DNS had changed since), and a host that does not
// resolve reads exactly like one that resolves to an internal address, the log saying which.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { listAttempts } from '../src/webhooks/admin.js';
import { createTestDatabase, type TestDatabase } from './helpers/db.js';
import { assertError } from './helpers/error-envelope.js';
import { closeReceivers, Receiver } from './helpers/receiver.js';
import { assertFieldErrors } from './helpers/runs.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { testRegistry } from './helpers/test-tools.js';
import { ALL_EVENTS, req, Runs, startWebhookWorker, stopWebhookWorkers, webhookTeam } from './helpers/webhooks.js';
import { waitFor } from './helpers/worker.js';

let database: TestDatabase;
/** Private networks not allowed, as in production. */
let pub: TestServer;

before(async () => {
  database = await createTestDatabase();
  pub = await startTestServer({ database, tools: testRegistry() });
});
after(async () => {
  await stopWebhookWorkers();
  await closeReceivers();
  await pub.close();
  await database.db.close();
});

describe('webhook URLs: hosts that are not public', () => {
  test('a name that does not resolve and one that resolves to an internal address are refused alike; the log says which', async () => {
    const team = await webhookTeam(database.db);
    const refusedLines = () => pub.logs.lines.map((l) => JSON.parse(l) as { msg: string; cause?: string }).filter((l) => l.msg === 'outbound host refused');
    const seen = refusedLines().length;
    const messages: string[] = [];
    for (const host of ['does-not-exist.invalid', 'localhost']) {
      const res = await req(pub, team.key, 'POST', '/v1/webhook-endpoints', { url: `https://${host}/hooks` });
      assertFieldErrors(res, [{ loc: ['body', 'url'], code: 'url_not_public' }]);
      messages.push(assertError(res, 422, 'invalid_request').errors?.[0]?.message.replace(host, '<host>') ?? '');
    }
    assert.deepEqual(messages, ['must be on a public host: the host <host> does not resolve to a public address', 'must be on a public host: the host <host> does not resolve to a public address']);

    // A ping to endpoints stored around the API (as if DNS had changed since they were made).
    const errors: string[] = [];
    for (const host of ['does-not-exist.invalid', 'localhost']) {
      const id = randomUUID();
      await database.db.pool.query(
        `INSERT INTO webhook_endpoints (id, team_id, url, events, signing_secret) VALUES ($1::uuid, $2::uuid, $3::text, $4::text[], 'whsec_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx')`,
        [id, team.teamId, `https://${host}/hooks`, ALL_EVENTS],
      );
      const ping = await req(pub, team.key, 'POST', `/v1/webhook-endpoints/${id}/test`);
      assert.equal(ping.statusCode, 200, ping.body);
      errors.push(String(ping.json<{ error: string | null }>().error).replace(host, '<host>'));
    }
    assert.deepEqual(errors, ['the host <host> does not resolve to a public address', 'the host <host> does not resolve to a public address']);

    assert.deepEqual(
      refusedLines().slice(seen).map((l) => l.cause),
      [
        'the host does-not-exist.invalid does not resolve (A: ENOTFOUND, AAAA: ENOTFOUND)',
        'the host localhost resolves to 127.0.0.1, ::1: private, loopback or reserved',
        'the host does-not-exist.invalid does not resolve (A: ENOTFOUND, AAAA: ENOTFOUND)',
        'the host localhost resolves to 127.0.0.1, ::1: private, loopback or reserved',
      ],
    );
  });
});

describe('webhook deliveries: SSRF', () => {
  test('without private networks, the worker refuses loopback endpoints (rows written around the API)', async () => {
    const team = await webhookTeam(database.db);
    const r = await Receiver.start();
    const port = r.portNumber;
    const urls = [
      r.url('/a'),
      `https://localhost:${port}/b`,
      `https://[::1]:${port}/c`,
      `https://[::ffff:127.0.0.1]:${port}/d`,
      `https://169.254.169.254:${port}/latest/meta-data/`,
      `https://10.0.0.1:${port}/e`,
      `https://[fe80::1]:${port}/f`,
    ];
    const ids: string[] = [];
    for (const url of urls) {
      const id = randomUUID();
      await database.db.pool.query(
        `INSERT INTO webhook_endpoints (id, team_id, url, events, signing_secret) VALUES ($1::uuid, $2::uuid, $3::text, $4::text[], 'whsec_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx')`,
        [id, team.teamId, url, ALL_EVENTS],
      );
      ids.push(id);
    }
    const ping = await req(pub, team.key, 'POST', `/v1/webhook-endpoints/${ids[0]}/test`);
    assert.equal(ping.statusCode, 200, ping.body);
    const pinged = ping.json<{ delivered: boolean; response_code: number | null; error: string | null }>();
    assert.deepEqual([pinged.delivered, pinged.response_code], [false, null]);
    assert.equal(pinged.error, `the host 127.0.0.1 does not resolve to a public address`);
    await startWebhookWorker(pub);
    const runs = await new Runs(pub, team.key).init();
    await runs.canceled();
    for (const id of ids) {
      const attempts = await waitFor('the refused attempt', async () => {
        const a = (await listAttempts(database.db.pool, id)).filter((x) => x.event_type === 'run.canceled');
        return a.length ? a : undefined;
      });
      assert.equal(attempts.length, 1);
      assert.equal(attempts[0]?.status_code, null);
      assert.match(String(attempts[0]?.error), /^the host \S+ does not resolve to a public address$/);
    }
    assert.equal(r.requests.length, 0, 'nothing reached the receiver');
    // The worker's log names the address behind each refusal.
    const causes = new Map(
      pub.logs.lines
        .map((l) => JSON.parse(l) as { msg: string; endpoint_id?: string; cause?: string })
        .filter((l) => l.msg === 'outbound host refused' && l.endpoint_id)
        .map((l) => [l.endpoint_id, l.cause]),
    );
    for (const id of ids) assert.match(String(causes.get(id)), /^the host \S+ resolves to .+: private, loopback or reserved$/);
  });
});
