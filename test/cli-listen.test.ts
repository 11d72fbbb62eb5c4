// toolrun-cli listen --forward-to (issue 18) as a real child process against a real server: it
// prints a signing secret, opens GET /v1/events, and POSTs each event's body to a local receiver
// with the webhook headers and a Service-Signature that verifies with that secret; it reconnects
// with Last-Event-ID when the stream drops; Ctrl-C (SIGINT) ends it with exit 0.
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, test } from 'node:test';
import { verifyWebhook } from '@toolrun/sdk';
import type { RunWorker } from '../src/runs/worker.js';
import type { TeamFixture } from './helpers/fixtures.js';
import { waitFor } from './helpers/process.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { testRegistry } from './helpers/test-tools.js';
import { killCliChildren, startCli, toolrunCliEnv } from './helpers/toolrun-cli.js';
import { startTestWorker } from './helpers/worker.js';
import { Runs, webhookTeam } from './helpers/webhooks.js';

interface Got {
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  path: string;
}

const tools = testRegistry();
let s: TestServer;
let worker: RunWorker;
let team: TeamFixture;
let runs: Runs;
let receiver: http.Server;
let receiverUrl = '';
const got: Got[] = [];

before(async () => {
  s = await startTestServer({ tools, env: { TOOLRUN_WORKER_POLL_MS: '200' } });
  worker = await startTestWorker(s, tools);
  team = await webhookTeam(s.database.db);
  runs = await new Runs(s, team.key).init();
  receiver = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      got.push({ headers: req.headers, body: Buffer.concat(chunks), path: req.url ?? '' });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const address = receiver.address();
  receiverUrl = `http://localhost:${typeof address === 'object' && address ? address.port : 0}/hooks`;
});
after(async () => {
  killCliChildren();
  await worker.stop(1000);
  await new Promise((resolve) => receiver.close(resolve));
  s.app.server.closeAllConnections();
  await s.close();
});

async function forwarded(runId: string): Promise<Got> {
  const { rows } = await waitFor(`run ${runId} to end`, async () => {
    const r = await s.database.db.pool.query<{ id: string }>('SELECT id FROM run_events WHERE run_id = $1', [runId]);
    return r.rows.length ? r : null;
  });
  const eventId = rows[0]?.id;
  return waitFor(`the event of run ${runId} at the receiver`, () => got.find((g) => (JSON.parse(g.body.toString('utf8')) as { id: string }).id === eventId) ?? null);
}

describe('toolrun-cli listen', () => {
  test('forwards each event signed with the secret it printed, reconnects after a drop, and exits 0 on Ctrl-C', async () => {
    const cli = startCli(['listen', '--forward-to', receiverUrl], toolrunCliEnv(team.key, s.url));
    const secret = (await cli.waitForOutput(/signing secret is (whsec_\S+)/))[1] ?? '';
    await cli.waitForOutput(/Ready: forwarding events to/);

    const canceled = await runs.canceled();
    const first = await forwarded(canceled.id);
    assert.equal(first.path, '/hooks');
    const event = verifyWebhook(first.body, first.headers['service-signature'], secret);
    assert.equal(event.type, 'run.canceled');
    assert.deepEqual(event.data.run, canceled);
    assert.equal(first.headers['service-event'], 'run.canceled');
    assert.match(String(first.headers['service-delivery']), /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    assert.equal(first.headers['content-type'], 'application/json');
    assert.equal(first.headers['user-agent'], 'Service-Webhooks/1');
    await cli.waitForOutput(new RegExp(`run\\.canceled\\s+${event.id}\\s+-> 204`));

    // The stream drops (the connection cut): the CLI connects again with Last-Event-ID.
    s.app.server.closeAllConnections();
    await cli.waitForOutput(new RegExp(`Reconnected after event ${event.id}`));
    const succeeded = await runs.start('ok');
    const second = await forwarded(succeeded.id);
    assert.equal(verifyWebhook(second.body, second.headers['service-signature'], secret).type, 'run.succeeded');

    cli.child.kill('SIGINT');
    assert.equal(await cli.code(), 0);
    assert.match(cli.stderr, /Stopped\./);
  });

  test('--forward-to must be an http(s) URL (usage error 64)', async () => {
    const cli = startCli(['listen', '--forward-to', 'ftp://example.com/x'], toolrunCliEnv(team.key, s.url));
    assert.equal(await cli.code(), 64);
    assert.match(cli.stderr, /http or https URL/);
  });
});
