// toolrun.run(), the SDK's one call, against the real server over a socket with a real run worker:
// a path, bytes, streams and Blobs uploaded and the outputs downloaded; a file id passed through
// without an upload; failed and canceled runs; and bad requests refused before anything is uploaded.
import assert from 'node:assert/strict';
import { createHash, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import sharp from 'sharp';
import { RunFailedError, Toolrun, ToolrunError, type Run, type RunResult } from '@toolrun/sdk';
import type { RunWorker } from '../src/runs/worker.js';
import { makeTeam, type TeamFixture } from './helpers/fixtures.js';
import { makePng } from './helpers/media.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { testRegistry } from './helpers/test-tools.js';
import { startTestWorker } from './helpers/worker.js';

const tools = testRegistry();
let s: TestServer;
let worker: RunWorker;
let team: TeamFixture;
let tmp: string;
let png: Buffer;
let photo: string;

before(async () => {
  s = await startTestServer({ tools });
  worker = await startTestWorker(s, tools);
  team = await makeTeam(s.database.db, { sparks: 1000, rate: 300 });
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'sdk-run-'));
  png = await makePng(40, 30);
  photo = path.join(tmp, 'photo.png');
  fs.writeFileSync(photo, png);
});
after(async () => {
  await worker.stop(1000);
  await s.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

/** A client whose every request is written down as `METHOD /path` (storage PUTs included). */
function recorded(): { client: Toolrun; requests: string[] } {
  const requests: string[] = [];
  const client = new Toolrun({
    apiKey: team.key,
    baseUrl: s.url,
    testing: { minPollIntervalMs: 50 },
    fetch: (input, init) => {
      requests.push(`${init?.method ?? 'GET'} ${new URL(String(input)).pathname}`);
      return fetch(input, init);
    },
  });
  return { client, requests };
}

const sdk = () => recorded().client;
const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

/** The team's file rows: the API has no list of files, so the database is asked. */
async function teamFiles(): Promise<{ id: string; file_name: string; declared_mime: string }[]> {
  const { rows } = await s.database.db.pool.query<{ id: string; file_name: string; declared_mime: string }>(
    'SELECT id, file_name, declared_mime FROM files WHERE team_id = $1::uuid ORDER BY created_at, id',
    [team.teamId],
  );
  return rows;
}

/**
 * Each downloaded output is the bytes the service serves for it (its signed URL, fetched here),
 * of the size GET /v1/runs/{id} gives; returns their sha256s.
 */
async function assertDownloadsMatch(result: RunResult, dir: string): Promise<string[]> {
  const fresh = await sdk().runs.get(result.id);
  assert.equal(result.downloaded.length, fresh.outputs.length);
  const shas: string[] = [];
  for (const [i, output] of fresh.outputs.entries()) {
    const got = result.downloaded[i];
    assert.ok(got);
    assert.equal(got.asset_id, output.asset_id);
    assert.equal(path.dirname(got.path), dir);
    const bytes = fs.readFileSync(got.path);
    assert.equal(bytes.length, output.size_bytes);
    assert.equal(got.size_bytes, output.size_bytes);
    assert.equal(got.mime_type, output.mime_type);
    const served = await fetch((await sdk().runs.outputUrl(result.id, output.asset_id)).url);
    assert.equal(served.status, 200);
    assert.equal(sha256(bytes), sha256(new Uint8Array(await served.arrayBuffer())), `${got.path} is the output's bytes`);
    shas.push(sha256(bytes));
  }
  return shas;
}

describe('inputs uploaded, outputs downloaded', () => {
  test('a local path (image_upscale): uploaded under its name, the run succeeds, the output is downloaded', async () => {
    const before = await teamFiles();
    const { client, requests } = recorded();
    const seen: Run[] = [];
    const dir = path.join(tmp, 'out-path');
    const run = await client.run('image_upscale', { image: photo }, { download: dir, onProgress: (r) => seen.push(r) });
    assert.equal(run.status, 'succeeded', run.error ?? '');
    assert.equal(seen[0]?.status, 'queued', 'onProgress has the run from its start');
    assert.equal(seen[0]?.id, run.id);
    assert.equal(seen.at(-1)?.status, 'succeeded');
    await assertDownloadsMatch(run, dir);
    const [out] = run.downloaded;
    assert.ok(out);
    assert.equal(path.basename(out.path), 'photo-upscaled.png', 'the output is named after the uploaded file');
    const meta = await sharp(out.path).metadata();
    assert.deepEqual([meta.width, meta.height], [80, 60]);

    const added = (await teamFiles()).slice(before.length);
    assert.deepEqual(added.map((f) => [f.file_name, f.declared_mime]), [['photo.png', 'image/png']]);
    // The tool list, the check before the upload, the upload, the start: in that order.
    const firstPut = requests.findIndex((r) => r.startsWith('PUT '));
    assert.deepEqual(requests.slice(0, firstPut), ['GET /v1/tools', 'POST /v1/tools/image_upscale/estimate', 'POST /v1/files/upload-url']);
    assert.deepEqual(requests.filter((r) => r.startsWith('POST /v1/tools/')), ['POST /v1/tools/image_upscale/estimate', 'POST /v1/tools/image_upscale/runs']);
    assert.ok(requests.indexOf(`POST /v1/files/${added[0]?.id}/complete`) < requests.indexOf('POST /v1/tools/image_upscale/runs'));
  });

  test('a Buffer, with other inputs as they are: every output downloaded, each the input bytes', async () => {
    const dir = path.join(tmp, 'out-buffer');
    const uploads: { slot: string; index: number; done: number }[] = [];
    const run = await sdk().run('test_copy', { image: png, copies: 2 }, { download: dir, onUpload: (e) => uploads.push({ slot: e.slot, index: e.index, done: e.progress.partsDone }) });
    assert.equal(run.status, 'succeeded');
    const shas = await assertDownloadsMatch(run, dir);
    assert.deepEqual(shas, [sha256(png), sha256(png)]);
    assert.deepEqual(run.downloaded.map((d) => path.basename(d.path)).sort(), ['copy-1.png', 'copy-2.png']);
    assert.deepEqual(uploads.at(-1), { slot: 'image', index: 0, done: 1 });
    assert.deepEqual((await teamFiles()).at(-1)?.file_name, 'upload.png');
  });

  test('a Node Readable (fs.createReadStream): read, uploaded under the file name, output downloaded', async () => {
    const dir = path.join(tmp, 'out-stream');
    const run = await sdk().run('test_copy', { image: fs.createReadStream(photo) }, { download: dir });
    assert.equal(run.status, 'succeeded');
    assert.deepEqual(await assertDownloadsMatch(run, dir), [sha256(png)]);
    assert.deepEqual((await teamFiles()).at(-1)?.file_name, 'photo.png');
  });

  test('a Readable of several chunks, a web ReadableStream, a Blob and a File: each uploaded whole', async () => {
    const inputs = [
      Readable.from([png.subarray(0, 100), png.subarray(100, 1000), png.subarray(1000)]),
      new Blob([new Uint8Array(png)]).stream(),
      new Blob([new Uint8Array(png)], { type: 'image/png' }),
      new File([new Uint8Array(png)], 'from-file.png'),
    ];
    const names: string[] = [];
    for (const [i, image] of inputs.entries()) {
      const dir = path.join(tmp, `out-stream-${i}`);
      const run = await sdk().run('test_copy', { image: [image] }, { download: dir });
      assert.equal(run.status, 'succeeded');
      assert.deepEqual(await assertDownloadsMatch(run, dir), [sha256(png)], `input ${i}`);
      names.push((await teamFiles()).at(-1)?.file_name ?? '');
    }
    assert.deepEqual(names, ['upload.png', 'upload.png', 'upload.png', 'from-file.png']);
  });

  test('without download: nothing is written, downloaded is empty', async () => {
    const run = await sdk().run('test_copy', { image: png });
    assert.equal(run.status, 'succeeded');
    assert.deepEqual(run.downloaded, []);
    assert.equal(run.outputs.length, 1);
  });
});

describe('file ids and idempotency', () => {
  test('a file id is passed through unchanged: no upload, no check before the start', async () => {
    const file = await sdk().files.upload(png, { fileName: 'kept.png' });
    const before = await teamFiles();
    const { client, requests } = recorded();
    const dir = path.join(tmp, 'out-id');
    const run = await client.run('test_copy', { image: file.id.toUpperCase() }, { download: dir });
    assert.equal(run.status, 'succeeded');
    assert.deepEqual(await assertDownloadsMatch(run, dir), [sha256(png)]);
    assert.deepEqual(await teamFiles(), before, 'no file was created');
    assert.deepEqual(requests.filter((r) => !r.startsWith('GET /v1/runs/')).slice(0, 2), ['GET /v1/tools', 'POST /v1/tools/test_copy/runs']);
    assert.equal(requests.filter((r) => r.includes('/files/') || r.startsWith('PUT ')).length, 0);
  });

  test('the same idempotencyKey twice: one run', async () => {
    const file = await sdk().files.upload(png);
    const key = `sdk-run-${randomUUID()}`;
    const a = await sdk().run('test_copy', { image: [file.id] }, { idempotencyKey: key });
    const b = await sdk().run('test_copy', { image: [file.id] }, { idempotencyKey: key });
    assert.equal(b.id, a.id);
  });
});

describe('runs that do not succeed', () => {
  test('a failed run throws RunFailedError carrying the run; check: false returns it', async () => {
    const dir = path.join(tmp, 'out-failed');
    const err = await sdk()
      .run('test_copy', { image: png, mode: 'fail' }, { download: dir })
      .then(() => assert.fail('expected RunFailedError'), (e: unknown) => e);
    assert.ok(err instanceof RunFailedError);
    assert.ok(err instanceof ToolrunError);
    assert.equal(err.status, 0);
    assert.equal(err.code, 'run_not_succeeded');
    assert.equal(err.run.status, 'failed');
    assert.match(err.run.error ?? '', /asked to fail/);
    assert.match(err.message, /failed: The test tool was asked to fail/);
    assert.deepEqual(err.details, { run_id: err.run.id, status: 'failed', error: err.run.error });
    assert.equal(fs.existsSync(dir), false, 'nothing was downloaded');

    const returned = await sdk().run('test_copy', { image: png, mode: 'fail' }, { download: dir, check: false });
    assert.equal(returned.status, 'failed');
    assert.deepEqual(returned.downloaded, []);
    assert.equal(fs.existsSync(dir), false);
  });

  test('a run canceled while it works (its id from onProgress) throws RunFailedError with status canceled', async () => {
    const client = sdk();
    const cancels: Promise<Run>[] = [];
    const onProgress = (r: Run) => {
      if (r.status === 'running' && cancels.length === 0) cancels.push(client.runs.cancel(r.id));
    };
    const err = await client.run('test_copy', { image: png, mode: 'hang' }, { onProgress }).catch((e: unknown) => e);
    assert.equal(cancels.length, 1, 'the run was seen running');
    assert.equal((await cancels[0])?.status, 'canceled');
    assert.ok(err instanceof RunFailedError);
    assert.equal(err.run.status, 'canceled');
    assert.match(err.message, /was canceled/);
  });
});

describe('bad requests are refused before anything is uploaded', () => {
  /** Runs the call with a recording client; the error it threw, after checking nothing was uploaded. */
  async function refused(call: (client: Toolrun) => Promise<unknown>): Promise<{ err: unknown; requests: string[] }> {
    const before = await teamFiles();
    const { client, requests } = recorded();
    const err = await call(client).then(() => assert.fail('expected an error'), (e: unknown) => e);
    assert.deepEqual(await teamFiles(), before, 'no file was created');
    assert.deepEqual(requests.filter((r) => r.includes('/files/') || r.startsWith('PUT ')), [], 'no upload');
    return { err, requests };
  }

  test('an unknown tool: 404 tool_not_found', async () => {
    const { err, requests } = await refused((c) => c.run('no_such_tool', { image: photo }));
    assert.ok(err instanceof ToolrunError);
    assert.deepEqual([err.status, err.code, err.errors], [404, 'tool_not_found', null]);
    assert.deepEqual(requests, ['GET /v1/tools', 'POST /v1/tools/no_such_tool/estimate']);
  });

  test('a slot the tool does not have: 422 invalid_request, unknown_slot at body.inputs.sharpen', async () => {
    const { err, requests } = await refused((c) => c.run('image_upscale', { image: photo, sharpen: 2 }, { download: path.join(tmp, 'never') }));
    assert.ok(err instanceof ToolrunError);
    assert.equal(err.status, 422);
    assert.equal(err.code, 'invalid_request');
    assert.deepEqual(err.errors?.map((e) => [e.loc, e.code]), [[['body', 'inputs', 'sharpen'], 'unknown_slot']]);
    assert.equal(err.message, 'Invalid request: body.inputs.sharpen: is not an input of image_upscale');
    assert.deepEqual(requests, ['GET /v1/tools', 'POST /v1/tools/image_upscale/estimate']);
  });

  test('bad values beside bytes to upload: 422 naming those slots (the slot to upload is not reported missing)', async () => {
    const { err, requests } = await refused((c) => c.run('test_copy', { image: png, mode: 'explode', copies: 9 }));
    assert.ok(err instanceof ToolrunError);
    assert.equal(err.status, 422);
    assert.equal(err.code, 'invalid_request');
    assert.deepEqual(err.errors?.map((e) => [e.loc, e.code]), [
      [['body', 'inputs', 'mode'], 'invalid_choice'],
      [['body', 'inputs', 'copies'], 'out_of_range'],
    ]);
    assert.equal(err.message, 'Invalid request: body.inputs.mode: must be one of ok, fail, hang, garbage, crash, slow; body.inputs.copies: must be from 1 to 3');
    assert.match(err.requestId ?? '', /^[0-9a-f-]{36}$/);
    assert.deepEqual(requests, ['GET /v1/tools', 'POST /v1/tools/test_copy/estimate']);
  });

  test('a required file slot left out, nothing to upload: 422 missing, from the start itself', async () => {
    const { err, requests } = await refused((c) => c.run('test_copy', { mode: 'ok' }));
    assert.ok(err instanceof ToolrunError);
    assert.deepEqual(requests, ['GET /v1/tools', 'POST /v1/tools/test_copy/runs']);
    assert.deepEqual([err.status, err.code], [422, 'invalid_request']);
    assert.deepEqual(err.errors?.map((e) => [e.loc, e.code]), [[['body', 'inputs', 'image'], 'missing']]);
  });

  test('a path that names no file, and bytes in a slot that takes no file: thrown before any request but the tool list', async () => {
    const missing = await refused((c) => c.run('test_copy', { image: path.join(tmp, 'no-such.png') }));
    assert.ok(missing.err instanceof Error && !(missing.err instanceof ToolrunError));
    assert.match(missing.err.message, /^inputs\.image: ".*no-such\.png" is neither a file id \(a UUID\) nor a file that can be read here$/);
    assert.deepEqual(missing.requests, ['GET /v1/tools']);

    const misplaced = await refused((c) => c.run('test_copy', { imag: png }));
    assert.ok(misplaced.err instanceof TypeError);
    assert.equal(misplaced.err.message, 'inputs.imag: bytes, Blobs and streams go only in a file slot of test_copy (image)');
    assert.deepEqual(misplaced.requests, ['GET /v1/tools']);
  });
});
