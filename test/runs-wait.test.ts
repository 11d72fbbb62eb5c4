// Prefer: wait=N (issue 18) with two API processes and a worker process: the run is started on
// one API, finished by the worker, and the request waiting on the other API is woken by
// PostgreSQL's notification (not by its timer); a wait that runs out answers the run as it is;
// both say Preference-Applied. Past 10 waiting requests of one key the next is answered at once,
// without Preference-Applied. Values the service does not understand are ignored (RFC 7240).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { Toolrun } from '@toolrun/sdk';
import { assertError } from './helpers/error-envelope.js';
import { uploadReadyFile } from './helpers/faults.js';
import { bearer, makeTeam, type TeamFixture } from './helpers/fixtures.js';
import { makePng } from './helpers/media.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { socketRequest } from './helpers/socket-request.js';
import { testRegistry } from './helpers/test-tools.js';
import { killWorkerProcesses, WorkerProcess } from './helpers/worker-processes.js';

let a: TestServer;
let b: TestServer;
let team: TeamFixture;
let fileId = '';

before(async () => {
  a = await startTestServer({ tools: testRegistry(), env: { TOOLRUN_WORKER_POLL_MS: '200' } });
  b = await startTestServer({ tools: testRegistry(), database: a.database });
  await WorkerProcess.spawn(a);
  team = await makeTeam(a.database.db, { sparks: 1000 });
  fileId = await uploadReadyFile(a.url, team.key, await makePng(32, 32), 'a.png', 'image/png');
});
after(async () => {
  await killWorkerProcesses();
  await b.close();
  await a.close();
});

interface RunJson {
  id: string;
  status: string;
}

function start(mode: string, prefer?: string) {
  return socketRequest(a.url, '/v1/tools/test_copy/runs', {
    method: 'POST',
    headers: { ...bearer(team.key), 'content-type': 'application/json', ...(prefer ? { prefer } : {}) },
    body: JSON.stringify({ inputs: { image: [fileId], mode } }),
  });
}

const get = (s: TestServer, id: string, prefer?: string, key = team.key) => socketRequest(s.url, `/v1/runs/${id}`, { headers: { ...bearer(key), ...(prefer ? { prefer } : {}) } });

async function cancel(id: string): Promise<void> {
  const res = await socketRequest(a.url, `/v1/runs/${id}/cancel`, { method: 'POST', headers: bearer(team.key) });
  assert.equal(res.statusCode, 200, res.body);
}

describe('Prefer: wait', () => {
  test('GET on the other API process waits until the worker process finishes the run', async () => {
    const started = await start('slow');
    assert.equal(started.statusCode, 202, started.body);
    const id = started.json<RunJson>().id;
    const res = await get(b, id, 'wait=60');
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json<RunJson>().status, 'succeeded');
    assert.equal(res.headers['preference-applied'], 'wait=60');
  });

  test('the SDK: runs.get with waitSeconds', async () => {
    const id = (await start('slow')).json<RunJson>().id;
    const client = new Toolrun({ apiKey: team.key, baseUrl: b.url });
    assert.equal((await client.runs.get(id, { waitSeconds: 50 })).status, 'succeeded');
  });

  test('the start waits too: 202 with the run final, when it finishes within the wait', async () => {
    const res = await start('ok', 'respond-async, wait=60');
    assert.equal(res.statusCode, 202, res.body);
    assert.equal(res.json<RunJson>().status, 'succeeded');
    assert.equal(res.headers['preference-applied'], 'wait=60');
  });

  test('a wait that runs out answers the run as it is; a cancel wakes every waiter at once; the 11th waiter of a key is answered at once', async () => {
    const hanging = (await start('hang')).json<RunJson>().id;
    const short = await get(a, hanging, 'wait=1');
    assert.equal(short.statusCode, 200);
    assert.ok(['queued', 'running'].includes(short.json<RunJson>().status));
    assert.equal(short.headers['preference-applied'], 'wait=1');

    // Eleven waiters of one key on API a (its bound is 10 per key) and five on API b.
    const onA = Array.from({ length: 11 }, () => get(a, hanging, 'wait=60'));
    const onB = Array.from({ length: 5 }, () => get(b, hanging, 'wait=60'));
    const first = await Promise.race([...onA, ...onB]);
    assert.equal(first.statusCode, 200);
    assert.equal(first.headers['preference-applied'], undefined, 'past the bound: answered at once, no wait applied');
    assert.ok(['queued', 'running'].includes(first.json<RunJson>().status));

    await cancel(hanging);
    const all = [...(await Promise.all(onA)), ...(await Promise.all(onB))];
    const applied = all.filter((r) => r.headers['preference-applied'] === 'wait=60');
    assert.equal(applied.length, 15, 'a held 10 of 11, b all 5');
    for (const r of applied) assert.equal(r.json<RunJson>().status, 'canceled', 'woken by the cancel, not by the 60 s timer');
  });

  test('a final run answers at once; wait above 60 counts as 60; values not understood are ignored', async () => {
    const id = (await start('ok', 'wait=60')).json<RunJson>().id;
    const capped = await get(a, id, 'wait=999');
    assert.equal(capped.headers['preference-applied'], 'wait=60');
    for (const prefer of ['wait=soon', 'wait=0', 'respond-async', 'wait=-1']) {
      const res = await get(a, id, prefer);
      assert.equal(res.statusCode, 200);
      assert.equal(res.headers['preference-applied'], undefined, prefer);
    }
  });

  test("another team's run, or an unknown id, is a 404 at once however long the wait", async () => {
    const other = await makeTeam(a.database.db);
    const id = (await start('ok')).json<RunJson>().id;
    assertError(await get(b, id, 'wait=60', other.key), 404, 'run_not_found');
    assertError(await get(b, randomUUID(), 'wait=60'), 404, 'run_not_found');
  });
});
