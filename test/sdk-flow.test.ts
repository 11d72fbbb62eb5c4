// The SDK against the real server over a socket, with a real run worker: every API method, the
// whole upload procedure, the full flow for the test tool and for image_upscale, and the errors.
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import sharp from 'sharp';
import { Toolrun, ToolrunError, type Run, type ToolrunOptions, type UploadProgress } from '@toolrun/sdk';
import type { RunWorker } from '../src/runs/worker.js';
import { makeTeam, type TeamFixture } from './helpers/fixtures.js';
import { makePng } from './helpers/media.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { testRegistry } from './helpers/test-tools.js';
import { startTestWorker, waitFor } from './helpers/worker.js';

const tools = testRegistry();
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
let s: TestServer;
let worker: RunWorker;
let team: TeamFixture;
let tmp: string;

before(async () => {
  s = await startTestServer({ tools, env: { TOOLRUN_PART_SIZE_BYTES: String(1024 * 1024) } });
  worker = await startTestWorker(s, tools);
  team = await makeTeam(s.database.db, { sparks: 1000, rate: 300 });
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'sdk-flow-'));
});
after(async () => {
  await worker.stop(1000);
  await s.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

/** A client for the team's key; wait() may poll every 50 ms here (tests only). */
const sdk = (opts: Partial<ToolrunOptions> = {}) => new Toolrun({ apiKey: team.key, baseUrl: s.url, testing: { minPollIntervalMs: 50 }, ...opts });

async function declared(fileId: string): Promise<{ file_name: string; declared_mime: string; part_count: number }> {
  const { rows } = await s.database.db.pool.query<{ file_name: string; declared_mime: string; part_count: number }>(
    'SELECT file_name, declared_mime, part_count FROM files WHERE id = $1::uuid',
    [fileId],
  );
  assert.ok(rows[0], `no file ${fileId}`);
  return rows[0];
}

describe('reading', () => {
  test('me() and tools.list()', async () => {
    const me = await sdk().me();
    assert.equal(me.object, 'me');
    assert.equal(me.team.id, team.teamId);
    assert.equal(me.api_key.id, team.keyId);
    assert.equal(me.sparks_available, 1000);
    const list = await sdk().tools.list();
    assert.equal(list.object, 'list');
    const ids = list.data.map((t) => t.id);
    for (const id of ['image_upscale', 'image_color_grade', 'video_transition', 'video_upscale', 'brand_kit_extract', 'test_copy']) assert.ok(ids.includes(id), id);
    assert.deepEqual(list.data.find((t) => t.id === 'image_upscale')?.inputs.map((i) => i.name), ['image', 'method', 'scale']);
  });
});

describe('the full flow', () => {
  test('test_copy: upload a path, estimate, start, wait with progress, download byte-identical outputs', async () => {
    const png = await makePng(40, 30);
    const file = path.join(tmp, 'photo.png');
    fs.writeFileSync(file, png);
    const progress: UploadProgress[] = [];
    const uploaded = await sdk().files.upload(file, { onProgress: (p) => progress.push(p) });
    assert.equal(uploaded.object, 'file');
    assert.equal(uploaded.status, 'ready');
    assert.deepEqual(progress.at(-1), { uploadedBytes: png.length, totalBytes: png.length, partsDone: 1, partsTotal: 1 });
    assert.deepEqual(await declared(uploaded.id), { file_name: 'photo.png', declared_mime: 'image/png', part_count: 1 });

    const body = { inputs: { image: [uploaded.id], copies: 2 } };
    const sparksBefore = (await sdk().me()).sparks_available;
    const estimate = await sdk().tools.estimate('test_copy', body);
    assert.equal(estimate.sparks, 3);
    const started = await sdk().runs.start('test_copy', body);
    assert.equal(started.status, 'queued');
    assert.equal(started.cost_sparks, 3);
    const seen: Run[] = [];
    const done = await sdk().runs.wait(started, { onProgress: (r) => seen.push(r) });
    assert.equal(done.status, 'succeeded');
    assert.equal(done.cost_sparks, 3);
    assert.equal(seen.at(-1)?.status, 'succeeded');
    assert.equal(done.outputs.length, 2);

    const out = path.join(tmp, 'out-copy');
    const files = await sdk().runs.download(done, out);
    assert.deepEqual(files.map((f) => path.basename(f.path)).sort(), ['copy-1.png', 'copy-2.png']);
    for (const f of files) {
      assert.deepEqual(fs.readFileSync(f.path), png, `${f.path} is the input's bytes`);
      assert.equal(f.size_bytes, png.length);
      assert.equal(f.mime_type, 'image/png');
    }
    assert.equal((await sdk().me()).sparks_available, sparksBefore - 3, 'the run charged its estimate');

    // runs.get and runs.outputUrl directly.
    const again = await sdk().runs.get(done.id);
    assert.deepEqual(again.outputs, done.outputs);
    const first = done.outputs[0];
    assert.ok(first);
    const signed = await sdk().runs.outputUrl(done.id, first.asset_id);
    assert.equal(signed.object, 'output_url');
    const res = await fetch(signed.url);
    assert.equal(res.status, 200);
    assert.deepEqual(Buffer.from(await res.arrayBuffer()), png);
  });

  test('image_upscale on a small PNG from memory: MIME and name guessed, output twice the size', async () => {
    const png = await makePng(48, 32);
    const uploaded = await sdk().files.upload(png);
    assert.equal(uploaded.status, 'ready');
    assert.deepEqual(await declared(uploaded.id), { file_name: 'upload.png', declared_mime: 'image/png', part_count: 1 });
    const before = (await sdk().me()).sparks_available;
    const run = await sdk().runs.wait(await sdk().runs.start('image_upscale', { inputs: { image: [uploaded.id] } }));
    assert.equal(run.status, 'succeeded', run.error ?? '');
    const [out] = await sdk().runs.download(run.id, path.join(tmp, 'out-upscale'));
    assert.ok(out);
    const meta = await sharp(out.path).metadata();
    assert.equal(meta.width, 96);
    assert.equal(meta.height, 64);
    assert.equal((await sdk().me()).sparks_available, before - run.cost_sparks);
    assert.ok(run.cost_sparks >= 3);
  });

  test('a multi-part upload: parts in parallel, a failed part sent again, ETags kept, complete', async () => {
    const bytes = randomBytes(2.5 * 1024 * 1024);
    const putsByPart = new Map<string, number>();
    let inFlight = 0;
    let maxInFlight = 0;
    const faulty: typeof fetch = async (input, init) => {
      if (init?.method !== 'PUT') return fetch(input, init);
      const part = new URL(String(input)).pathname.split('/').at(-1) ?? '';
      putsByPart.set(part, (putsByPart.get(part) ?? 0) + 1);
      // The first PUT of part 2 is lost on the way, as a dropped connection would be.
      if (part === '2' && putsByPart.get(part) === 1) throw new TypeError('fetch failed');
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      try {
        return await fetch(input, init);
      } finally {
        inFlight--;
      }
    };
    const progress: UploadProgress[] = [];
    const retried: number[] = [];
    const client = sdk({ fetch: faulty, testing: { backoffBaseMs: 20 }, onRetry: (r) => retried.push(r.attempt) });
    const file = await client.files.upload(bytes, { fileName: 'noise.bin', concurrency: 3, onProgress: (p) => progress.push(p) });
    // Random bytes are no media file: completed, then rejected by the service's probe.
    assert.equal(file.status, 'rejected');
    assert.deepEqual(Object.fromEntries(putsByPart), { '1': 1, '2': 2, '3': 1 });
    assert.deepEqual(retried, [1]);
    assert.ok(maxInFlight >= 2, `parts went in parallel (at most ${maxInFlight} at once)`);
    assert.deepEqual(progress.map((p) => p.partsDone), [0, 1, 2, 3]);
    assert.equal(progress.at(-1)?.uploadedBytes, bytes.length);
    assert.deepEqual(await declared(file.id), { file_name: 'noise.bin', declared_mime: 'application/octet-stream', part_count: 3 });
  });
});

describe('runs that do not succeed, idempotency and errors', () => {
  let image = '';
  before(async () => {
    image = (await sdk().files.upload(await makePng(16, 16), { fileName: 'small.png' })).id;
  });

  test('cancel a running run; wait resolves canceled; download refuses', async () => {
    const run = await sdk().runs.start('test_copy', { inputs: { image: [image], mode: 'hang' } });
    await waitFor('the run to be running', async () => ((await sdk().runs.get(run.id)).status === 'running' ? true : undefined));
    const canceled = await sdk().runs.cancel(run);
    assert.equal(canceled.status, 'canceled');
    const waited = await sdk().runs.wait(run.id);
    assert.equal(waited.status, 'canceled');
    await assert.rejects(sdk().runs.download(waited, tmp), (err: unknown) => err instanceof ToolrunError && err.code === 'run_not_succeeded');
  });

  test('a failed run: wait resolves with status failed and the reason', async () => {
    const run = await sdk().runs.wait(await sdk().runs.start('test_copy', { inputs: { image: [image], mode: 'fail' } }));
    assert.equal(run.status, 'failed');
    assert.match(run.error ?? '', /asked to fail/);
    assert.equal(run.cost_sparks, 0);
  });

  test('the same idempotency key returns the same run; no key makes a fresh one each time', async () => {
    const body = { inputs: { image: [image], mode: 'fail' } };
    const key = `k-${randomUUID()}`;
    const a = await sdk().runs.start('test_copy', body, { idempotencyKey: key });
    const b = await sdk().runs.start('test_copy', body, { idempotencyKey: key });
    assert.equal(a.id, b.id);
    const c = await sdk().runs.start('test_copy', body);
    const d = await sdk().runs.start('test_copy', body);
    assert.notEqual(c.id, d.id);
    await Promise.all([a, c, d].map((r) => sdk().runs.wait(r)));
  });

  test('ToolrunError on a 422 carries status, code, message, request id and errors[]', async () => {
    const err = await sdk().runs.start('test_copy', { inputs: { mode: 'ok' } }).then(
      () => assert.fail('expected a 422'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof ToolrunError);
    assert.equal(err.status, 422);
    assert.equal(err.code, 'invalid_request');
    assert.match(err.message, /image/);
    assert.match(err.requestId ?? '', UUID);
    assert.deepEqual(err.errors?.map((e) => [e.loc, e.code]), [[['body', 'inputs', 'image'], 'missing']]);
  });

  test('ToolrunError on 404s: run_not_found, tool_not_found; 403 insufficient_scope has details', async () => {
    const missing = await sdk().runs.get(randomUUID()).catch((e: unknown) => e);
    assert.ok(missing instanceof ToolrunError);
    assert.equal(missing.status, 404);
    assert.equal(missing.code, 'run_not_found');
    assert.match(missing.requestId ?? '', UUID);
    assert.equal(missing.errors, null);
    const tool = await sdk().tools.estimate('no_such_tool', {}).catch((e: unknown) => e);
    assert.ok(tool instanceof ToolrunError);
    assert.equal(tool.code, 'tool_not_found');
    const scope = await sdk().webhookEndpoints.list().catch((e: unknown) => e);
    assert.ok(scope instanceof ToolrunError);
    assert.equal(scope.status, 403);
    assert.deepEqual(scope.details, { required_scope: 'webhooks' });
  });

  test('a rate-limited key: the SDK waits Retry-After and succeeds', async () => {
    const slow = await makeTeam(s.database.db, { rate: 30 });
    const retries: { delayMs: number; status: number; retryAfter: number | null }[] = [];
    const client = new Toolrun({ apiKey: slow.key, baseUrl: s.url, onRetry: (r) => retries.push({ delayMs: r.delayMs, status: r.error.status, retryAfter: r.error.retryAfterSeconds }) });
    // The SDK's own calls drain the bucket (30 tokens); the call that meets the 429 waits and succeeds.
    let calls = 0;
    while (retries.length === 0 && calls < 45) {
      const me = await client.me();
      assert.equal(me.api_key.rate_limit_per_minute, 30);
      calls++;
    }
    assert.ok(retries.length >= 1, `no 429 after ${calls} calls`);
    assert.ok(calls >= 25, `the bucket held about a minute's worth (${calls} calls)`);
    for (const r of retries) {
      assert.equal(r.status, 429);
      assert.ok(r.retryAfter !== null && r.retryAfter >= 1 && r.retryAfter <= 2, `Retry-After ${r.retryAfter}`);
      assert.equal(r.delayMs, (r.retryAfter ?? 0) * 1000, 'waited exactly Retry-After');
    }
  });
});
