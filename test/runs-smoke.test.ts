import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ledgerDrift } from '../src/sparks/ledger.js';
import type { RunWorker } from '../src/runs/worker.js';
import { callApi, makeTeam, type TeamFixture } from './helpers/fixtures.js';
import type { RunBody } from './helpers/runs-harness.js';
import { makePng } from './helpers/media.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { testRegistry } from './helpers/test-tools.js';
import { startTestWorker, waitFor } from './helpers/worker.js';

let s: TestServer;
let worker: RunWorker;
let team: TeamFixture;
let fileId: string;
const tools = testRegistry();


function api(method: string, url: string, body?: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return callApi(s.url, team.key, method, url, body, headers);
}

async function uploadPng(): Promise<string> {
  const png = await makePng(640, 480);
  const res = await api('POST', '/v1/files/upload-url', { file_name: 'a.png', mime_type: 'image/png', size_bytes: png.length });
  const up = (await res.json()) as { file_id: string; upload_id: string; parts: { part_number: number; url: string }[]; part_size_bytes: number };
  const parts = [];
  for (const p of up.parts) {
    const chunk = png.subarray((p.part_number - 1) * up.part_size_bytes, p.part_number * up.part_size_bytes);
    const r = await fetch(p.url, { method: 'PUT', body: Uint8Array.from(chunk) });
    parts.push({ part_number: p.part_number, etag: r.headers.get('etag') ?? '' });
  }
  const done = await api('POST', `/v1/files/${up.file_id}/complete`, { upload_id: up.upload_id, parts });
  assert.equal(((await done.json()) as { status: string }).status, 'ready');
  return up.file_id;
}

before(async () => {
  s = await startTestServer({ tools, env: { TOOLRUN_WORKER_POLL_MS: '200' } });
  worker = await startTestWorker(s, tools);
  team = await makeTeam(s.database.db, { sparks: 100 });
  fileId = await uploadPng();
});
after(async () => {
  await worker.stop(1000);
  await s.close();
});

describe('runs: the whole path through a real worker', () => {
  test('estimate, start, poll to success, download the output; Sparks charged once', async () => {
    const est = await api('POST', '/v1/tools/test_copy/estimate', { inputs: { image: [fileId] } });
    assert.equal(est.status, 200);
    assert.deepEqual(await est.json(), { object: 'estimate', tool_id: 'test_copy', product_id: 'test_copy', sparks: 3, reserve_sparks: 3 });

    const start = await api('POST', '/v1/tools/test_copy/runs', { inputs: { image: [fileId] } });
    assert.equal(start.status, 202);
    const run = (await start.json()) as RunBody;
    assert.equal(run.status, 'queued');
    assert.equal(run.cost_sparks, 3);
    const me = (await (await api('GET', '/v1/me')).json()) as { sparks_available: number };
    assert.ok(me.sparks_available === 97, `hold visible at once: ${me.sparks_available}`);

    const done = await waitFor('run to finish', async () => {
      const r = (await (await api('GET', `/v1/runs/${run.id}`, undefined, { prefer: 'wait=10' })).json()) as RunBody;
      return ['succeeded', 'failed', 'canceled'].includes(r.status) ? r : undefined;
    });
    assert.equal(done.status, 'succeeded', done.error ?? '');
    assert.equal(done.cost_sparks, 3);
    assert.equal(done.progress, 1);
    assert.ok(done.started_at && done.finished_at);
    assert.equal(done.outputs.length, 1);
    const out = done.outputs[0]!;
    assert.equal(out.width, 640);
    assert.equal(out.height, 480);
    assert.equal(out.mime_type, 'image/png');
    assert.equal(out.file_name, 'copy-1.png');

    const url = await waitFor('output check', async () => {
      const r = await api('GET', `/v1/runs/${run.id}/outputs/${out.asset_id}/url`);
      if (r.status === 409) return undefined;
      assert.equal(r.status, 200);
      return ((await r.json()) as { url: string }).url;
    });
    const dl = await fetch(url);
    assert.equal(dl.status, 200);
    assert.equal(dl.headers.get('content-type'), 'image/png');
    assert.equal(Number(dl.headers.get('content-length')), out.size_bytes);
    assert.match(dl.headers.get('content-disposition') ?? '', /filename="copy-1.png"/);
    assert.equal((await dl.arrayBuffer()).byteLength, out.size_bytes);

    const after = (await (await api('GET', '/v1/me')).json()) as { sparks_available: number };
    assert.equal(after.sparks_available, 97);
    assert.deepEqual(await ledgerDrift(s.database.db.pool), []);
  });

  test('a failing tool fails the run with its message and releases the hold', async () => {
    const before = ((await (await api('GET', '/v1/me')).json()) as { sparks_available: number }).sparks_available;
    const start = await api('POST', '/v1/tools/test_copy/runs', { inputs: { image: [fileId], mode: 'fail' } });
    const run = (await start.json()) as RunBody;
    const done = await waitFor('run to fail', async () => {
      const r = (await (await api('GET', `/v1/runs/${run.id}`, undefined, { prefer: 'wait=10' })).json()) as RunBody;
      return r.status === 'failed' ? r : undefined;
    });
    assert.equal(done.error, 'The test tool was asked to fail.');
    assert.equal(done.cost_sparks, 0);
    assert.deepEqual(done.outputs, []);
    const after = ((await (await api('GET', '/v1/me')).json()) as { sparks_available: number }).sparks_available;
    assert.equal(after, before);
  });

  test('cancel stops a hanging tool and releases the hold', async () => {
    const start = await api('POST', '/v1/tools/test_copy/runs', { inputs: { image: [fileId], mode: 'hang' } });
    const run = (await start.json()) as RunBody;
    await waitFor('run to start', async () => (worker.busy > 0 ? true : undefined));
    const res = await api('POST', `/v1/runs/${run.id}/cancel`);
    assert.equal(res.status, 200);
    assert.equal(((await res.json()) as RunBody).status, 'canceled');
    await waitFor('worker to let go', async () => (worker.busy === 0 ? true : undefined), 5000);
    const again = await api('POST', `/v1/runs/${run.id}/cancel`);
    assert.equal(again.status, 200);
    assert.deepEqual(await ledgerDrift(s.database.db.pool), []);
  });
});
