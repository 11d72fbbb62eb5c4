// The console's runs, playground and usage API (issue 15) over real sockets, with a real worker
// running the test tool, at its edges: app runs never show through /v1 and send no webhooks; a
// Free team, bad inputs, an unknown tool, a pipeline, too few Sparks and bad queries are refused
// with nothing written or held; another team's runs, files, cursors and ledger are unknown ids;
// no session or no CSRF token starts nothing. (The happy paths are in console-runs-flow.test.ts.)
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import { addMember, createTeam } from '../src/teams/repository.js';
import { inviteAndSignIn } from './helpers/console.js';
import {
  appRun,
  consoleGet,
  consoleRunsSuite,
  consoleUpload,
  finalRun,
  type ListJson,
} from './helpers/console-runs.js';
import { assertError } from './helpers/error-envelope.js';
import { uploadReadyFile } from './helpers/faults.js';
import { bearer, makeTeam } from './helpers/fixtures.js';
import { makePng } from './helpers/media.js';
import { closeReceivers, Receiver } from './helpers/receiver.js';
import { socketRequest } from './helpers/socket-request.js';

let receiver: Receiver;

const { apiRun, consoleTeam, db, url, worker } = consoleRunsSuite({
  async setUp() {
    receiver = await Receiver.start();
  },
  tearDown: closeReceivers,
});

describe('app runs stay out of /v1 and webhooks', () => {
  test('GET, cancel and output URL of an app run answer 404 run_not_found with any key of the team; its final event makes no delivery', async () => {
    await worker();
    const { team, owner } = await consoleTeam();
    const endpoint = await owner.client.call('POST', '/console/api/webhooks', { url: receiver.url(), events: ['run.succeeded'] });
    assert.equal(endpoint.statusCode, 201, endpoint.body);
    const fileId = await uploadReadyFile(url(), team.key, await makePng(32, 32), 'a.png', 'image/png');
    const app = await finalRun(owner, (await appRun(owner, fileId)).id);
    const api = await finalRun(owner, (await apiRun(team.key, fileId)).id);
    assert.equal(app.status, 'succeeded');
    assert.equal(api.status, 'succeeded');

    for (const [method, path] of [
      ['GET', `/v1/runs/${app.id}`],
      ['POST', `/v1/runs/${app.id}/cancel`],
      ['GET', `/v1/runs/${app.id}/outputs/${app.outputs[0]!.asset_id}/url`],
    ] as const) {
      const res = await socketRequest(url(), path, { method, headers: bearer(team.key) });
      const e = assertError(res, 404, 'run_not_found');
      assert.equal(e.errors, null);
    }
    const other = await makeTeam(db());
    const unknown = assertError(await socketRequest(url(), `/v1/runs/${randomUUID()}`, { headers: bearer(other.key) }), 404, 'run_not_found');
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
    const member = await inviteAndSignIn(url(), db(), m.id);
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
    const fileId = await uploadReadyFile(url(), team.key, await makePng(2000, 2000), 'big.png', 'image/png');
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

    const fileId = await uploadReadyFile(url(), team.key, await makePng(32, 32), 'a.png', 'image/png');
    const other = await uploadReadyFile(url(), team.key, await makePng(16, 16), 'b.png', 'image/png');
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
      assertError(await socketRequest(url(), path), 401, 'session_required');
    }
    const fileId = await uploadReadyFile(url(), team.key, await makePng(32, 32), 'a.png', 'image/png');
    const res = await owner.client.call('POST', '/console/api/tools/test_copy/runs', { inputs: { image: [fileId] } }, { 'x-csrf-token': null });
    assertError(res, 403, 'csrf_failed');
    const { rows } = await db().pool.query<{ n: number }>('SELECT count(*)::integer AS n FROM runs WHERE team_id = $1::uuid', [team.teamId]);
    assert.equal(rows[0]!.n, 0);
  });
});
