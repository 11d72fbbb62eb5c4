// GET /v1/runs (issue 18): the team's API runs newest first, a page at a time by starting_after
// while has_more, filtered by status, tool and creation time; app runs and other teams' runs never
// appear. Happy, error and security cases, over real sockets.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { Toolrun, ToolrunError } from '@toolrun/sdk';
import type { RunWorker } from '../src/runs/worker.js';
import { inviteAndSignIn } from './helpers/console.js';
import { assertError } from './helpers/error-envelope.js';
import { uploadReadyFile } from './helpers/faults.js';
import { bearer, makeTeam, type TeamFixture } from './helpers/fixtures.js';
import { makePng } from './helpers/media.js';
import { runState } from './helpers/runs-harness.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { socketRequest } from './helpers/socket-request.js';
import { testRegistry } from './helpers/test-tools.js';
import { killCliChildren, plain, runCliToEnd, toolrunCliEnv } from './helpers/toolrun-cli.js';
import { startTestWorker, waitFor } from './helpers/worker.js';

let s: TestServer;
let worker: RunWorker;

before(async () => {
  s = await startTestServer({ tools: testRegistry(), env: { TOOLRUN_WORKER_POLL_MS: '200' } });
  worker = await startTestWorker(s, testRegistry(), { concurrency: 2 });
});
after(async () => {
  killCliChildren();
  await worker.stop(1000);
  await s.close();
});

interface RunJson {
  id: string;
  status: string;
  tool_id: string;
  created_at: string;
  outputs: { asset_id: string }[];
}
interface ListJson {
  object: string;
  data: RunJson[];
  has_more: boolean;
}

const get = (key: string, path: string) => socketRequest(s.url, path, { headers: bearer(key) });

async function list(key: string, query = ''): Promise<ListJson> {
  const res = await get(key, `/v1/runs${query ? `?${query}` : ''}`);
  assert.equal(res.statusCode, 200, res.body);
  return res.json<ListJson>();
}

async function start(team: TeamFixture, fileId: string, mode: string): Promise<string> {
  const res = await socketRequest(s.url, '/v1/tools/test_copy/runs', {
    method: 'POST',
    headers: { ...bearer(team.key), 'content-type': 'application/json' },
    body: JSON.stringify({ inputs: { image: [fileId], mode } }),
  });
  assert.equal(res.statusCode, 202, res.body);
  return res.json<{ id: string }>().id;
}

/** Waits in the database (polling the API would spend the key's rate), then reads the run once through the API. */
async function final(team: TeamFixture, id: string): Promise<RunJson> {
  await waitFor(`run ${id}`, async () => (['succeeded', 'failed', 'canceled'].includes((await runState(s.database.db.pool, id)).status) ? true : undefined));
  return (await get(team.key, `/v1/runs/${id}`)).json<RunJson>();
}

/** A team with five finished API runs (oldest first: ok, fail, ok, fail, ok) and one app run. */
async function teamWithRuns(): Promise<{ team: TeamFixture; ids: string[]; appRunId: string }> {
  const team = await makeTeam(s.database.db, { sparks: 1000, rate: 300 });
  const fileId = await uploadReadyFile(s.url, team.key, await makePng(32, 32), 'a.png', 'image/png');
  const ids: string[] = [];
  for (const mode of ['ok', 'fail', 'ok', 'fail', 'ok']) ids.push(await start(team, fileId, mode));
  for (const id of ids) await final(team, id);
  const owner = await inviteAndSignIn(s.url, s.database.db, team.memberId);
  const app = await owner.client.call('POST', '/console/api/tools/test_copy/runs', { inputs: { image: [fileId] } });
  assert.equal(app.statusCode, 202, app.body);
  return { team, ids, appRunId: app.json<{ id: string }>().id };
}

describe('GET /v1/runs: happy', () => {
  test('newest first, as GET /v1/runs/{id} shows each (outputs of succeeded runs), without app runs; pages by starting_after', async () => {
    const { team, ids, appRunId } = await teamWithRuns();
    const all = await list(team.key);
    assert.equal(all.object, 'list');
    assert.equal(all.has_more, false);
    assert.deepEqual(all.data.map((r) => r.id), [...ids].reverse());
    assert.ok(!all.data.some((r) => r.id === appRunId), 'the app run is not listed');
    for (const r of all.data) assert.deepEqual(r, (await get(team.key, `/v1/runs/${r.id}`)).json(), 'the same run as GET shows');
    assert.ok(all.data.filter((r) => r.status === 'succeeded').every((r) => r.outputs.length === 1));

    const seen: string[] = [];
    let after: string | null = null;
    let pages = 0;
    for (;;) {
      const page: ListJson = await list(team.key, `limit=2${after ? `&starting_after=${after}` : ''}`);
      seen.push(...page.data.map((r) => r.id));
      pages++;
      if (!page.has_more) break;
      after = page.data[page.data.length - 1]!.id;
    }
    assert.equal(pages, 3);
    assert.deepEqual(seen, [...ids].reverse());
  });

  test('filters: status, tool_id, created_after and created_before (exclusive), together', async () => {
    const { team, ids } = await teamWithRuns();
    const runs = await Promise.all(ids.map((id) => get(team.key, `/v1/runs/${id}`).then((r) => r.json<RunJson>())));
    assert.deepEqual((await list(team.key, 'status=failed')).data.map((r) => r.id), [ids[3], ids[1]]);
    assert.deepEqual((await list(team.key, 'status=succeeded&tool_id=test_copy')).data.map((r) => r.id), [ids[4], ids[2], ids[0]]);
    assert.deepEqual((await list(team.key, 'tool_id=image_upscale')).data, []);
    const mid = runs[2]!.created_at;
    assert.deepEqual((await list(team.key, `created_after=${encodeURIComponent(mid)}`)).data.map((r) => r.id), [ids[4], ids[3]]);
    assert.deepEqual((await list(team.key, `created_before=${encodeURIComponent(mid)}`)).data.map((r) => r.id), [ids[1], ids[0]]);
    assert.deepEqual(
      (await list(team.key, `created_after=${encodeURIComponent(runs[0]!.created_at)}&created_before=${encodeURIComponent(runs[4]!.created_at)}&status=succeeded`)).data.map((r) => r.id),
      [ids[2]],
    );
  });
});

describe('the SDK: runs.list and runs.all', () => {
  test('list takes the filters and a cursor; all walks every page; a bad query is a ToolrunError at its loc', async () => {
    const { team, ids } = await teamWithRuns();
    const client = new Toolrun({ apiKey: team.key, baseUrl: s.url });
    const first = await client.runs.list({ limit: 2, status: 'succeeded' });
    assert.deepEqual(first.data.map((r) => r.id), [ids[4], ids[2]]);
    assert.equal(first.has_more, true);
    const next = await client.runs.list({ limit: 2, status: 'succeeded', starting_after: first.data[1]!.id });
    assert.deepEqual(next.data.map((r) => r.id), [ids[0]]);
    assert.equal(next.has_more, false);
    const every: string[] = [];
    for await (const run of client.runs.all({ limit: 2 })) every.push(run.id);
    assert.deepEqual(every, [...ids].reverse());
    const err = await client.runs.list({ limit: 500 }).catch((e: unknown) => e);
    assert.ok(err instanceof ToolrunError);
    assert.equal(err.status, 422);
    assert.equal(err.code, 'invalid_request');
    assert.deepEqual(err.errors?.map((x) => x.loc), [['query', 'limit']]);
  });
});

describe('toolrun-cli runs', () => {
  test('a page of runs, the next page named; --json prints the list; a bad --limit is a usage error (64)', async () => {
    const { team, ids } = await teamWithRuns();
    const env = toolrunCliEnv(team.key, s.url);
    const first = await runCliToEnd(['runs', '--limit', '2'], env);
    assert.equal(first.code, 0, first.stderr);
    const lines = plain(first.stdout).trim().split('\n');
    assert.deepEqual(lines.map((l) => l.split(/\s+/)[0]), [ids[4], ids[3]]);
    assert.match(plain(first.stderr), new RegExp(`toolrun-cli runs --after ${ids[3]}`));
    const json = await runCliToEnd(['--json', 'runs', '--status', 'failed', '--tool', 'test_copy'], env);
    assert.equal(json.code, 0, json.stderr);
    const page = JSON.parse(json.stdout) as ListJson;
    assert.deepEqual(page.data.map((r) => r.id), [ids[3], ids[1]]);
    const bad = await runCliToEnd(['runs', '--limit', '0'], env);
    assert.equal(bad.code, 64, bad.stderr);
  });
});

describe('GET /v1/runs: errors', () => {
  test('a bad limit, status, date or cursor is a 422 at its loc; several at once are listed together', async () => {
    const team = await makeTeam(s.database.db);
    const check = async (query: string, locs: (string | number)[][]) => {
      const e = assertError(await get(team.key, `/v1/runs?${query}`), 422, 'invalid_request');
      assert.deepEqual((e.errors ?? []).map((x) => x.loc), locs, query);
    };
    await check('limit=0', [['query', 'limit']]);
    await check('limit=101', [['query', 'limit']]);
    await check('limit=ten', [['query', 'limit']]);
    await check('status=done', [['query', 'status']]);
    await check('created_after=yesterday', [['query', 'created_after']]);
    await check('starting_after=abc', [['query', 'starting_after']]);
    await check(`starting_after=urn:uuid:${randomUUID()}`, [['query', 'starting_after']]);
    await check(`starting_after=${randomUUID()}`, [['query', 'starting_after']]);
    await check('surprise=1', [['query', 'surprise']]);
    await check('limit=0&status=done', [
      ['query', 'limit'],
      ['query', 'status'],
    ]);
  });
});

describe('GET /v1/runs: security', () => {
  test("another team's runs are never listed, and one as starting_after answers like an unknown id", async () => {
    const a = await teamWithRuns();
    const b = await makeTeam(s.database.db);
    assert.deepEqual((await list(b.key)).data, []);
    const theirs = assertError(await get(b.key, `/v1/runs?starting_after=${a.ids[0]}`), 422, 'invalid_request');
    const unknown = assertError(await get(b.key, `/v1/runs?starting_after=${randomUUID()}`), 422, 'invalid_request');
    assert.deepEqual(theirs.errors, unknown.errors);
    // An app run is not a cursor of the API's list either.
    assertError(await get(a.team.key, `/v1/runs?starting_after=${a.appRunId}`), 422, 'invalid_request');
  });

  test('no key: 401 api_key_required; an unknown key: 401 invalid_api_key', async () => {
    assertError(await socketRequest(s.url, '/v1/runs'), 401, 'api_key_required');
    assertError(await socketRequest(s.url, '/v1/runs', { headers: bearer('svc_test_' + 'x'.repeat(40)) }), 401, 'invalid_api_key');
  });
});
