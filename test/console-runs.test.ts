// The console's runs, playground and usage API (issue 15) over real sockets, with a real worker
// running the test tool: app runs share the engine, price, balance and hourly ceiling with API
// runs, are attributed to the member, never show through /v1 and send no webhooks; the runs list
// filters and pages; cancel releases the hold; the ledger and usage add up. Happy, error and
// security cases per route.
import assert from 'node:assert/strict';
import { createHash, randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { RunWorker } from '../src/runs/worker.js';
import { addMember, createTeam, updateTeam } from '../src/teams/repository.js';
import { inviteAndSignIn, signedInMember, type SignedInMember } from './helpers/console.js';
import { assertError } from './helpers/error-envelope.js';
import { uploadReadyFile } from './helpers/faults.js';
import { bearer, makeTeam, type TeamFixture } from './helpers/fixtures.js';
import { makePng } from './helpers/media.js';
import { closeReceivers, Receiver } from './helpers/receiver.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { socketRequest } from './helpers/socket-request.js';
import { testRegistry } from './helpers/test-tools.js';
import { putPart, type Upload } from './helpers/uploads.js';
import { startTestWorker, waitFor } from './helpers/worker.js';

let s: TestServer;
let receiver: Receiver;
const workers: RunWorker[] = [];

before(async () => {
  s = await startTestServer({ tools: testRegistry(), env: { TOOLRUN_ALLOW_PRIVATE_NETWORK: '1', TOOLRUN_WORKER_POLL_MS: '200' } });
  receiver = await Receiver.start();
});
after(async () => {
  for (const w of workers) await w.stop(1000);
  await closeReceivers();
  await s.close();
});

const db = () => s.database.db;

interface RunJson {
  id: string;
  tool_id: string;
  tool_name: string;
  status: string;
  progress: number;
  cost_sparks: number;
  source: 'api' | 'app';
  started_by: { kind: 'key'; id: string; name: string; member_email: string } | { kind: 'member'; id: string; email: string };
  inputs: Record<string, unknown>;
  input_files: { slot: string; file_id: string; file_name: string; width: number | null }[];
  error: string | null;
  ledger: { id: string; kind: string; amount: number }[];
  outputs: { asset_id: string; file_name: string; size_bytes: number; width: number | null }[];
  can_cancel: boolean;
  queue: { position: number; running: number; limit: number } | null;
}
interface ListJson {
  data: RunJson[];
  next_cursor: string | null;
  filters: { tools: { id: string }[]; keys: { id: string; name: string }[]; members: { id: string; email: string }[] };
}

/** A team with an owner signed in to the console and an API key of that owner. */
async function consoleTeam(opts: { plan?: 'free' | 'pro'; sparks?: number } = {}): Promise<{ team: TeamFixture; owner: SignedInMember }> {
  const team = await makeTeam(db(), { plan: opts.plan ?? 'pro', sparks: opts.sparks ?? 1000 });
  return { team, owner: await inviteAndSignIn(s.url, db(), team.memberId) };
}

/** A PNG uploaded through the console's upload routes, as the playground does; its file id. */
async function consoleUpload(m: SignedInMember, bytes: Buffer): Promise<string> {
  const up = await m.client.call('POST', '/console/api/files/upload-url', { file_name: 'photo.png', mime_type: 'image/png', size_bytes: bytes.length });
  assert.equal(up.statusCode, 201, up.body);
  const upload = up.json<Upload>();
  const parts = [];
  for (const p of upload.parts) parts.push({ part_number: p.part_number, etag: await putPart(upload, bytes, p.part_number) });
  const done = await m.client.call('POST', `/console/api/files/${upload.file_id}/complete`, { upload_id: upload.upload_id, parts });
  assert.equal(done.statusCode, 200, done.body);
  assert.equal(done.json<{ status: string }>().status, 'ready');
  return upload.file_id;
}

async function appRun(m: SignedInMember, fileId: string, mode = 'ok'): Promise<RunJson> {
  const res = await m.client.call('POST', '/console/api/tools/test_copy/runs', { inputs: { image: [fileId], mode } });
  assert.equal(res.statusCode, 202, res.body);
  return res.json<RunJson>();
}

async function apiRun(key: string, fileId: string, mode = 'ok'): Promise<{ id: string }> {
  const res = await socketRequest(s.url, '/v1/tools/test_copy/runs', {
    method: 'POST',
    headers: { ...bearer(key), 'content-type': 'application/json' },
    body: JSON.stringify({ inputs: { image: [fileId], mode } }),
  });
  assert.equal(res.statusCode, 202, res.body);
  return res.json<{ id: string }>();
}

async function consoleGet<T>(m: SignedInMember, path: string): Promise<T> {
  const res = await m.client.call('GET', path);
  assert.equal(res.statusCode, 200, res.body);
  return res.json<T>();
}

async function finalRun(m: SignedInMember, id: string): Promise<RunJson> {
  return waitFor(`run ${id} to end`, async () => {
    const run = await consoleGet<RunJson>(m, `/console/api/runs/${id}`);
    return ['succeeded', 'failed', 'canceled'].includes(run.status) ? run : undefined;
  });
}

async function worker(): Promise<RunWorker> {
  const w = await startTestWorker(s, testRegistry(), { concurrency: 2 });
  workers.push(w);
  return w;
}

describe('app runs: happy path', () => {
  test('upload in the console, estimate as /v1 does, start: an app run of the member, charged like an API run, with its ledger, outputs and input', async () => {
    await worker();
    const { team, owner } = await consoleTeam();
    const png = await makePng(64, 48);
    const fileId = await consoleUpload(owner, png);

    const est = await owner.client.call('POST', '/console/api/tools/test_copy/estimate', { inputs: { image: [fileId] } });
    assert.equal(est.statusCode, 200, est.body);
    const apiEst = await socketRequest(s.url, '/v1/tools/test_copy/estimate', {
      method: 'POST',
      headers: { ...bearer(team.key), 'content-type': 'application/json' },
      body: JSON.stringify({ inputs: { image: [fileId] } }),
    });
    assert.equal(apiEst.statusCode, 200, apiEst.body);
    assert.deepEqual(est.json(), apiEst.json(), 'the same price through the console and /v1');
    const sparks = est.json<{ sparks: number }>().sparks;

    const started = await appRun(owner, fileId);
    assert.equal(started.source, 'app');
    assert.deepEqual(started.started_by, { kind: 'member', id: team.memberId, email: owner.email });
    assert.equal(started.tool_name, 'Test copy');
    assert.equal(started.cost_sparks, sparks, 'the hold is the price');
    // (The worker may have finished it already: the hold comes first either way.)
    assert.deepEqual(started.ledger.map((l) => [l.kind, l.amount])[0], ['hold', -sparks]);

    const done = await finalRun(owner, started.id);
    assert.equal(done.status, 'succeeded', done.error ?? '');
    assert.equal(done.progress, 1);
    assert.equal(done.can_cancel, false);
    const late = assertError(await owner.client.call('POST', `/console/api/runs/${started.id}/cancel`), 409, 'run_not_cancelable');
    assert.deepEqual(late.details, { status: 'succeeded' });
    assert.deepEqual(done.ledger.map((l) => [l.kind, l.amount]), [['hold', -sparks], ['release', sparks], ['charge', -sparks]]);
    assert.deepEqual(done.input_files.map((f) => [f.slot, f.file_id, f.width]), [['image', fileId, 64]]);
    assert.equal(done.outputs.length, 1);
    const overview = await consoleGet<{ sparks_available: number }>(owner, '/console/api/overview');
    assert.equal(overview.sparks_available, 1000 - sparks, 'charged from the same balance');

    const out = done.outputs[0]!;
    const url = await waitFor('the output URL', async () => {
      const res = await owner.client.call('GET', `/console/api/runs/${started.id}/outputs/${out.asset_id}/url`);
      return res.statusCode === 409 ? undefined : res;
    });
    assert.equal(url.statusCode, 200, url.body);
    const downloaded = Buffer.from(await (await fetch(url.json<{ url: string }>().url)).arrayBuffer());
    assert.equal(downloaded.length, out.size_bytes);
    const input = await owner.client.call('GET', `/console/api/runs/${started.id}/inputs/${fileId}/url`);
    assert.equal(input.statusCode, 200, input.body);
    const inputBytes = Buffer.from(await (await fetch(input.json<{ url: string }>().url)).arrayBuffer());
    assert.equal(createHash('sha256').update(inputBytes).digest('hex'), createHash('sha256').update(png).digest('hex'), 'the input as uploaded');
  });

  test('runs list: API and app runs newest first, who started each, filters by tool, status, key, member and source, pages by cursor', async () => {
    await worker();
    const { team, owner } = await consoleTeam();
    const other = await signedInMember(s.url, db(), team.teamId, 'member');
    const fileId = await uploadReadyFile(s.url, team.key, await makePng(32, 32), 'a.png', 'image/png');
    const ids: string[] = [];
    ids.push((await apiRun(team.key, fileId)).id);
    ids.push((await appRun(owner, fileId)).id);
    ids.push((await appRun(other, fileId, 'fail')).id);
    ids.push((await apiRun(team.key, fileId)).id);
    ids.push((await appRun(owner, fileId)).id);
    for (const id of ids) await finalRun(owner, id);

    const all = await consoleGet<ListJson>(owner, '/console/api/runs');
    assert.deepEqual(all.data.map((r) => r.id), [...ids].reverse(), 'newest first');
    assert.equal(all.next_cursor, null);
    const byId = new Map(all.data.map((r) => [r.id, r]));
    assert.deepEqual(byId.get(ids[0]!)!.started_by, { kind: 'key', id: team.keyId, name: all.filters.keys[0]!.name, member_email: owner.email });
    assert.deepEqual(byId.get(ids[2]!)!.started_by, { kind: 'member', id: other.memberId, email: other.email });
    assert.deepEqual(all.filters.keys.map((k) => k.id), [team.keyId]);
    assert.deepEqual(new Set(all.filters.members.map((m) => m.id)), new Set([team.memberId, other.memberId]));
    assert.ok(all.filters.tools.some((t) => t.id === 'test_copy'));

    const ids_ = async (query: string) => (await consoleGet<ListJson>(owner, `/console/api/runs?${query}`)).data.map((r) => r.id);
    assert.deepEqual(await ids_('source=app'), [ids[4], ids[2], ids[1]]);
    assert.deepEqual(await ids_('source=api'), [ids[3], ids[0]]);
    assert.deepEqual(await ids_('status=failed'), [ids[2]]);
    assert.deepEqual(await ids_(`member_id=${other.memberId}`), [ids[2]]);
    assert.deepEqual(await ids_(`api_key_id=${team.keyId}`), [ids[3], ids[0]]);
    assert.deepEqual(await ids_('tool_id=test_copy&status=succeeded&source=app'), [ids[4], ids[1]]);
    assert.deepEqual(await ids_('tool_id=image_upscale'), []);

    // Pages of two: every run once, in order, the last page without a cursor.
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page: ListJson = await consoleGet<ListJson>(owner, `/console/api/runs?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      assert.ok(page.data.length <= 2);
      seen.push(...page.data.map((r) => r.id));
      cursor = page.next_cursor;
      pages++;
    } while (cursor);
    assert.equal(pages, 3);
    assert.deepEqual(seen, [...ids].reverse());
  });

  test('the hourly ceiling is shared: with 2 an hour, one app run and one API run make the third start 429 on either side', async () => {
    const { team, owner } = await consoleTeam();
    await db().pool.query('UPDATE teams SET runs_per_hour = 2 WHERE id = $1::uuid', [team.teamId]);
    const fileId = await uploadReadyFile(s.url, team.key, await makePng(32, 32), 'a.png', 'image/png');
    const hanging = [(await appRun(owner, fileId, 'hang')).id, (await apiRun(team.key, fileId, 'hang')).id];
    const viaConsole = await owner.client.call('POST', '/console/api/tools/test_copy/runs', { inputs: { image: [fileId] } });
    const e = assertError(viaConsole, 429, 'rate_limited');
    assert.deepEqual(e.details, { limit_per_hour: 2 });
    assert.ok(Number(viaConsole.headers['retry-after']) >= 1);
    const viaApi = await socketRequest(s.url, '/v1/tools/test_copy/runs', {
      method: 'POST',
      headers: { ...bearer(team.key), 'content-type': 'application/json' },
      body: JSON.stringify({ inputs: { image: [fileId] } }),
    });
    assertError(viaApi, 429, 'rate_limited');
    const { rows } = await db().pool.query<{ n: number }>('SELECT count(*)::integer AS n FROM runs WHERE team_id = $1::uuid', [team.teamId]);
    assert.equal(rows[0]!.n, 2, 'nothing written for the refused starts');
    for (const id of hanging) assert.equal((await owner.client.call('POST', `/console/api/runs/${id}/cancel`)).statusCode, 200);
  });

  test('cancel: a queued app run is canceled and its hold released; the ledger page shows it; a member cancels only runs they started', async () => {
    const { team, owner } = await consoleTeam();
    const member = await signedInMember(s.url, db(), team.teamId, 'member');
    const fileId = await uploadReadyFile(s.url, team.key, await makePng(32, 32), 'a.png', 'image/png');
    // No worker takes these: a queued run stays queued until canceled. (Other tests' workers poll
    // every team's queue, so the runs hang instead of finishing if one is taken.)
    const mine = await appRun(member, fileId, 'hang');
    const owners = await appRun(owner, fileId, 'hang');
    assert.equal(mine.can_cancel, true);
    const seen = await consoleGet<RunJson>(member, `/console/api/runs/${owners.id}`);
    assert.equal(seen.can_cancel, false, "another member's run");
    const refused = assertError(await member.client.call('POST', `/console/api/runs/${owners.id}/cancel`), 403, 'insufficient_role');
    assert.equal(refused.errors, null);

    const canceled = await member.client.call('POST', `/console/api/runs/${mine.id}/cancel`);
    assert.equal(canceled.statusCode, 200, canceled.body);
    const run = canceled.json<RunJson>();
    assert.equal(run.status, 'canceled');
    assert.deepEqual(run.ledger.map((l) => [l.kind, l.amount]), [['hold', -mine.cost_sparks], ['release', mine.cost_sparks]]);
    // Canceling again answers the canceled run (as /v1 does) and moves no Sparks.
    const again = await member.client.call('POST', `/console/api/runs/${mine.id}/cancel`);
    assert.equal(again.statusCode, 200, again.body);
    assert.deepEqual(again.json<RunJson>().ledger, run.ledger);
    // Owners cancel anyone's.
    assert.equal((await owner.client.call('POST', `/console/api/runs/${owners.id}/cancel`)).statusCode, 200);

    const ledger = await consoleGet<{ sparks_available: number; data: { kind: string; amount: number; run_id: string | null }[] }>(
      owner,
      `/console/api/ledger?run_id=${mine.id}`,
    );
    assert.deepEqual(ledger.data.map((l) => [l.kind, l.amount]), [['release', mine.cost_sparks], ['hold', -mine.cost_sparks]]);
    assert.equal(ledger.sparks_available, 1000, 'every hold released');
  });

  test("a queued run shows its place in the team's queue and the team's slots; a running or final run shows none", async () => {
    const { team, owner } = await consoleTeam();
    await updateTeam(db().pool, team.teamId, { maxConcurrentRuns: 1 });
    await worker();
    const fileId = await uploadReadyFile(s.url, team.key, await makePng(32, 32), 'a.png', 'image/png');
    const first = await appRun(owner, fileId, 'hang');
    await waitFor('the first run to start', async () => (await consoleGet<RunJson>(owner, `/console/api/runs/${first.id}`)).status === 'running');
    // The team's one slot is taken: these stay queued whatever the workers do.
    const second = await apiRun(team.key, fileId, 'hang');
    const third = await appRun(owner, fileId, 'hang');
    assert.deepEqual(third.queue, { position: 2, running: 1, limit: 1 }, 'as the start answered');
    assert.deepEqual((await consoleGet<RunJson>(owner, `/console/api/runs/${second.id}`)).queue, { position: 1, running: 1, limit: 1 });
    assert.equal((await consoleGet<RunJson>(owner, `/console/api/runs/${first.id}`)).queue, null, 'a running run');
    for (const id of [first.id, second.id, third.id]) {
      assert.equal((await owner.client.call('POST', `/console/api/runs/${id}/cancel`)).statusCode, 200);
    }
    assert.equal((await finalRun(owner, third.id)).queue, null, 'a final run');
  });

  test('ledger pages and filters; usage: 30 days, spent per day and per tool from charges less refunds', async () => {
    await worker();
    // This team's entries get ids across a power of ten (99999, 100000, ...): a text order would show them wrongly.
    await db().pool.query(`SELECT setval('ledger_entries_id_seq', greatest((SELECT last_value FROM ledger_entries_id_seq), 99998))`);
    const { team, owner } = await consoleTeam();
    const fileId = await uploadReadyFile(s.url, team.key, await makePng(32, 32), 'a.png', 'image/png');
    const a = await appRun(owner, fileId);
    const b = await apiRun(team.key, fileId);
    await finalRun(owner, a.id);
    const bDone = await finalRun(owner, b.id);
    const spent = a.cost_sparks + bDone.cost_sparks;

    const first = await consoleGet<{ data: { id: string; kind: string }[]; next_cursor: string | null }>(owner, '/console/api/ledger?limit=3');
    assert.equal(first.data.length, 3);
    assert.ok(first.next_cursor);
    const rest = await consoleGet<{ data: { id: string; kind: string }[]; next_cursor: string | null }>(owner, `/console/api/ledger?limit=50&cursor=${first.next_cursor}`);
    const ids = [...first.data, ...rest.data].map((l) => Number(l.id));
    assert.deepEqual(ids, [...ids].sort((x, y) => y - x), 'newest first, by number');
    assert.ok(ids.some((id) => id < 100_000) && ids.some((id) => id >= 100_000), `ids across a power of ten: ${ids.join(', ')}`);
    const runEntries = (await consoleGet<RunJson>(owner, `/console/api/runs/${a.id}`)).ledger.map((l) => Number(l.id));
    assert.deepEqual(runEntries, [...runEntries].sort((x, y) => x - y), "a run's entries oldest first, by number");
    const kinds = [...first.data, ...rest.data].map((l) => l.kind).sort();
    assert.deepEqual(kinds, ['charge', 'charge', 'grant', 'hold', 'hold', 'release', 'release']);
    assert.equal(rest.next_cursor, null);
    const charges = await consoleGet<{ data: { kind: string }[] }>(owner, '/console/api/ledger?kind=charge');
    assert.deepEqual(charges.data.map((l) => l.kind), ['charge', 'charge']);

    const usage = await consoleGet<{ sparks_available: number; since: string; days: { date: string; sparks_spent: number; runs: number }[]; tools: { tool_id: string; runs: number; sparks_spent: number }[] }>(
      owner,
      '/console/api/usage',
    );
    assert.equal(usage.days.length, 30);
    const today = new Date().toISOString().slice(0, 10);
    assert.equal(usage.days[29]!.date, today);
    assert.equal(usage.since, usage.days[0]!.date);
    assert.deepEqual(usage.days[29], { date: today, sparks_spent: spent, runs: 2 });
    assert.equal(usage.days.slice(0, 29).reduce((n, d) => n + d.sparks_spent + d.runs, 0), 0);
    assert.deepEqual(usage.tools, [{ tool_id: 'test_copy', tool_name: 'Test copy', runs: 2, sparks_spent: spent }]);
    assert.equal(usage.sparks_available, 1000 - spent);
  });
});

describe('app runs stay out of /v1 and webhooks', () => {
  test('GET, cancel and output URL of an app run answer 404 run_not_found with any key of the team; its final event makes no delivery', async () => {
    await worker();
    const { team, owner } = await consoleTeam();
    const endpoint = await owner.client.call('POST', '/console/api/webhooks', { url: receiver.url(), events: ['run.succeeded'] });
    assert.equal(endpoint.statusCode, 201, endpoint.body);
    const fileId = await uploadReadyFile(s.url, team.key, await makePng(32, 32), 'a.png', 'image/png');
    const app = await finalRun(owner, (await appRun(owner, fileId)).id);
    const api = await finalRun(owner, (await apiRun(team.key, fileId)).id);
    assert.equal(app.status, 'succeeded');
    assert.equal(api.status, 'succeeded');

    for (const [method, path] of [
      ['GET', `/v1/runs/${app.id}`],
      ['POST', `/v1/runs/${app.id}/cancel`],
      ['GET', `/v1/runs/${app.id}/outputs/${app.outputs[0]!.asset_id}/url`],
    ] as const) {
      const res = await socketRequest(s.url, path, { method, headers: bearer(team.key) });
      const e = assertError(res, 404, 'run_not_found');
      assert.equal(e.errors, null);
    }
    const other = await makeTeam(db());
    const unknown = assertError(await socketRequest(s.url, `/v1/runs/${randomUUID()}`, { headers: bearer(other.key) }), 404, 'run_not_found');
    assert.ok(unknown.message.includes("API keys"));

    const deliveries = async (runId: string) =>
      (
        await db().pool.query<{ n: number }>(
          'SELECT count(*)::integer AS n FROM webhook_deliveries d JOIN run_events e ON e.id = d.event_id WHERE e.run_id = $1::uuid',
          [runId],
        )
      ).rows[0]!.n;
    assert.equal(await deliveries(api.id), 1, 'the API run is delivered');
    assert.equal(await deliveries(app.id), 0, 'the app run is not');
  });
});

describe('console runs: errors', () => {
  test('a Free team: playground not allowed (the tools say why); upload, estimate and start answer 403 plan_upgrade_required; nothing written', async () => {
    const team = await createTeam(db(), { name: 'Free team', plan: 'free', sparks: 100 });
    const m = await addMember(db(), { teamId: team.id, email: `free-${randomUUID()}@example.test`, role: 'member' });
    const member = await inviteAndSignIn(s.url, db(), m.id);
    const tools = await consoleGet<{ data: unknown[]; playground: { allowed: boolean; reason: string | null } }>(member, '/console/api/tools');
    assert.equal(tools.playground.allowed, false);
    assert.match(tools.playground.reason ?? '', /Free plan/);
    assert.ok(tools.data.length > 0);
    for (const [path, body] of [
      ['/console/api/files/upload-url', { file_name: 'a.png', mime_type: 'image/png', size_bytes: 10 }],
      ['/console/api/tools/test_copy/estimate', { inputs: {} }],
      ['/console/api/tools/test_copy/runs', { inputs: {} }],
    ] as const) {
      const e = assertError(await member.client.call('POST', path, body), 403, 'plan_upgrade_required');
      assert.deepEqual(e.details, { plan: 'free', required_plans: ['plus', 'pro', 'team'] });
    }
    const { rows } = await db().pool.query<{ n: number }>(
      'SELECT (SELECT count(*) FROM files WHERE team_id = $1::uuid) + (SELECT count(*) FROM runs WHERE team_id = $1::uuid) AS n',
      [team.id],
    );
    assert.equal(Number(rows[0]!.n), 0);
  });

  test('bad inputs: 422 at each slot; an unknown tool 404; a pipeline 409; short of Sparks 402; nothing held', async () => {
    const { team, owner } = await consoleTeam({ sparks: 2 });
    const bad = assertError(await owner.client.call('POST', '/console/api/tools/test_copy/runs', { inputs: { image: [randomUUID()], mode: 'nope' } }), 422, 'invalid_request');
    assert.deepEqual(
      (bad.errors ?? []).map((x) => x.loc),
      [
        ['body', 'inputs', 'mode'],
        ['body', 'inputs', 'image'],
      ],
    );
    const missing = assertError(await owner.client.call('POST', '/console/api/tools/test_copy/estimate', { inputs: {} }), 422, 'invalid_request');
    assert.deepEqual((missing.errors ?? []).map((x) => x.loc), [['body', 'inputs', 'image']]);
    const extra = assertError(await owner.client.call('POST', '/console/api/tools/test_copy/runs', { inputs: {}, surprise: 1 }), 422, 'invalid_request');
    assert.ok((extra.errors ?? []).some((x) => JSON.stringify(x.loc) === JSON.stringify(['body', 'surprise'])));
    assertError(await owner.client.call('POST', '/console/api/tools/no_such_tool/runs', { inputs: {} }), 404, 'tool_not_found');
    assertError(await owner.client.call('POST', '/console/api/tools/test_pipeline/runs', { inputs: {} }), 409, 'tool_execution_pipeline');
    const fileId = await uploadReadyFile(s.url, team.key, await makePng(2000, 2000), 'big.png', 'image/png');
    const short = assertError(await owner.client.call('POST', '/console/api/tools/test_copy/runs', { inputs: { image: [fileId] } }), 402, 'insufficient_sparks');
    assert.deepEqual(short.details, { needed_sparks: 6, available_sparks: 2 });
    const { rows } = await db().pool.query<{ n: number }>('SELECT count(*)::integer AS n FROM runs WHERE team_id = $1::uuid', [team.teamId]);
    assert.equal(rows[0]!.n, 0);
  });

  test('query errors: a bad status, limit or cursor is 422 at its loc; an unknown run is 404; an output or input of another run is 404', async () => {
    await worker();
    const { team, owner } = await consoleTeam();
    const check = async (query: string, loc: (string | number)[]) => {
      const e = assertError(await owner.client.call('GET', `/console/api/runs?${query}`), 422, 'invalid_request');
      assert.deepEqual((e.errors ?? []).map((x) => x.loc), [loc]);
    };
    await check('status=done', ['query', 'status']);
    await check('limit=0', ['query', 'limit']);
    await check('limit=101', ['query', 'limit']);
    await check('cursor=abc', ['query', 'cursor']);
    await check(`cursor=urn:uuid:${randomUUID()}`, ['query', 'cursor']);
    await check(`member_id=urn:uuid:${randomUUID()}`, ['query', 'member_id']);
    await check(`cursor=${randomUUID()}`, ['query', 'cursor']);
    const ledger = assertError(await owner.client.call('GET', '/console/api/ledger?kind=gift'), 422, 'invalid_request');
    assert.deepEqual((ledger.errors ?? []).map((x) => x.loc), [['query', 'kind']]);
    assertError(await owner.client.call('GET', `/console/api/runs/${randomUUID()}`), 404, 'run_not_found');
    assertError(await owner.client.call('POST', `/console/api/runs/${randomUUID()}/cancel`), 404, 'run_not_found');

    const fileId = await uploadReadyFile(s.url, team.key, await makePng(32, 32), 'a.png', 'image/png');
    const other = await uploadReadyFile(s.url, team.key, await makePng(16, 16), 'b.png', 'image/png');
    const run = await finalRun(owner, (await appRun(owner, fileId)).id);
    assertError(await owner.client.call('GET', `/console/api/runs/${run.id}/outputs/${randomUUID()}/url`), 404, 'output_not_found');
    assertError(await owner.client.call('GET', `/console/api/runs/${run.id}/inputs/${other}/url`), 404, 'file_not_found');
  });
});

describe('console runs: security', () => {
  test('another team: its runs, their outputs and inputs answer 404 as unknown ids; its runs are not listed, nor its ledger', async () => {
    await worker();
    const a = await consoleTeam();
    const b = await consoleTeam();
    const fileId = await consoleUpload(a.owner, await makePng(32, 32));
    const run = await finalRun(a.owner, (await appRun(a.owner, fileId)).id);
    const fromB = (path: string) => b.owner.client.call('GET', path);
    const unknown = assertError(await fromB(`/console/api/runs/${randomUUID()}`), 404, 'run_not_found');
    const theirs = assertError(await fromB(`/console/api/runs/${run.id}`), 404, 'run_not_found');
    assert.equal(theirs.message.replace(run.id, 'X'), unknown.message.replace(/[0-9a-f-]{36}/, 'X'));
    assertError(await fromB(`/console/api/runs/${run.id}/outputs/${run.outputs[0]!.asset_id}/url`), 404, 'run_not_found');
    assertError(await fromB(`/console/api/runs/${run.id}/inputs/${fileId}/url`), 404, 'run_not_found');
    assertError(await b.owner.client.call('POST', `/console/api/runs/${run.id}/cancel`), 404, 'run_not_found');
    const listed = await consoleGet<ListJson>(b.owner, '/console/api/runs');
    assert.deepEqual(listed.data, []);
    // A cursor from another team's list is not a cursor of this one.
    assertError(await fromB(`/console/api/runs?cursor=${run.id}`), 422, 'invalid_request');
    const ledger = await consoleGet<{ data: { run_id: string | null }[] }>(b.owner, `/console/api/ledger?run_id=${run.id}`);
    assert.deepEqual(ledger.data, []);
    // A's file in B's start: not B's file.
    const e = assertError(await b.owner.client.call('POST', '/console/api/tools/test_copy/runs', { inputs: { image: [fileId] } }), 422, 'invalid_request');
    assert.deepEqual((e.errors ?? []).map((x) => x.loc), [['body', 'inputs', 'image']]);
  });

  test('no session: 401 session_required; a start without the CSRF token: 403 csrf_failed and no run', async () => {
    const { team, owner } = await consoleTeam();
    for (const path of ['/console/api/runs', '/console/api/tools', '/console/api/ledger', '/console/api/usage', `/console/api/runs/${randomUUID()}`]) {
      assertError(await socketRequest(s.url, path), 401, 'session_required');
    }
    const fileId = await uploadReadyFile(s.url, team.key, await makePng(32, 32), 'a.png', 'image/png');
    const res = await owner.client.call('POST', '/console/api/tools/test_copy/runs', { inputs: { image: [fileId] } }, { 'x-csrf-token': null });
    assertError(res, 403, 'csrf_failed');
    const { rows } = await db().pool.query<{ n: number }>('SELECT count(*)::integer AS n FROM runs WHERE team_id = $1::uuid', [team.teamId]);
    assert.equal(rows[0]!.n, 0);
  });
});
