// An open event stream ends when its key stops allowing it (issue 18's known gap): the key is
// checked when GET /v1/events or GET /v1/runs/{id}/events opens, and a stream can stay open for
// hours, so a revocation, a member's removal, a demotion below what the stream needs, or a scope
// taken away must end it; a change that leaves the key allowed (another key revoked) must not.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createApiKey, revokeApiKey } from '../src/auth/key-admin.js';
import type { RunWorker } from '../src/runs/worker.js';
import { addMember, removeMember, updateMember } from '../src/teams/repository.js';
import { bearer } from './helpers/fixtures.js';
import { closeReceivers } from './helpers/receiver.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { openStream, type OpenedStream } from './helpers/sse-client.js';
import { testRegistry } from './helpers/test-tools.js';
import { startTestWorker } from './helpers/worker.js';
import { Runs, startWebhookWorker, stopWebhookWorkers, webhookTeam } from './helpers/webhooks.js';

const tools = testRegistry();
let s: TestServer;
let runWorker: RunWorker;
const open: OpenedStream[] = [];

before(async () => {
  s = await startTestServer({ tools, env: { TOOLRUN_ALLOW_PRIVATE_NETWORK: '1', TOOLRUN_WORKER_POLL_MS: '200' } });
  runWorker = await startTestWorker(s, tools);
  await startWebhookWorker(s);
});
after(async () => {
  for (const st of open) st.close();
  await stopWebhookWorkers();
  await runWorker.stop(1000);
  await closeReceivers();
  s.app.server.closeAllConnections();
  await s.close();
});

const db = () => s.database.db;

async function stream(path: string, key: string): Promise<OpenedStream> {
  const st = await openStream(`${s.url}${path}`, bearer(key));
  open.push(st);
  assert.equal(st.status, 200, st.body);
  return st;
}

function runIdOf(data: string): string {
  return (JSON.parse(data) as { data: { run: { id: string } } }).data.run.id;
}

describe('open event streams and the key behind them', () => {
  test('GET /v1/events: another key revoked, it stays open and delivers; its own key revoked, it ends', async () => {
    const team = await webhookTeam(db());
    const other = await createApiKey(db(), { memberId: team.memberId, name: 'other', scopes: ['read', 'run', 'webhooks'], rate: 300, envPrefix: 'svc_test_' });
    const runs = await new Runs(s, team.key).init();
    const st = await stream('/v1/events', team.key);

    await revokeApiKey(db().pool, other.api_key.id);
    // Committed after the revocation: the stream was rechecked (same team) and kept.
    const run = await runs.start('ok');
    await st.next((e) => runIdOf(e.data) === run.id, `the event of run ${run.id}`);
    assert.equal(st.ended(), false);

    await revokeApiKey(db().pool, team.keyId);
    await st.untilEnded();
  });

  test('GET /v1/events: the member behind the key demoted to member (events are for owners and admins), it ends', async () => {
    const team = await webhookTeam(db());
    const admin = await addMember(db(), { teamId: team.teamId, email: `admin-${team.teamId}@example.test`, role: 'admin' });
    const key = await createApiKey(db(), { memberId: admin.id, name: 'admin', scopes: ['read', 'webhooks'], rate: 300, envPrefix: 'svc_test_' });
    const st = await stream('/v1/events', key.key);
    await updateMember(db(), admin.id, 'member');
    await st.untilEnded();
  });

  test("GET /v1/runs/{id}/events: the read scope taken away ends it; the member's removal ends another", async () => {
    const team = await webhookTeam(db());
    const runs = await new Runs(s, team.key).init();
    const run = await runs.start('hang');
    const reader = await addMember(db(), { teamId: team.teamId, email: `reader-${team.teamId}@example.test`, role: 'admin' });
    const a = await createApiKey(db(), { memberId: reader.id, name: 'a', scopes: ['read'], rate: 300, envPrefix: 'svc_test_' });
    const b = await createApiKey(db(), { memberId: reader.id, name: 'b', scopes: ['read'], rate: 300, envPrefix: 'svc_test_' });
    const byScope = await stream(`/v1/runs/${run.id}/events`, a.key);
    const byMember = await stream(`/v1/runs/${run.id}/events`, b.key);
    await byScope.next((e) => e.event === 'status', 'the first status event');

    await db().pool.query("UPDATE api_keys SET scopes = ARRAY['run']::text[] WHERE id = $1::uuid", [a.api_key.id]);
    await byScope.untilEnded();
    assert.equal(byMember.ended(), false, 'the other key still reads');

    await removeMember(db(), reader.id);
    await byMember.untilEnded();

    const canceled = await fetch(`${s.url}/v1/runs/${run.id}/cancel`, { method: 'POST', headers: bearer(team.key) });
    assert.equal(canceled.status, 200, await canceled.text());
  });
});
