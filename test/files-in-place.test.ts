// Local uploads written in place (src/storage/local-slots.ts): each part PUT writes at its offset
// in the upload's data file, and completion renames that file into place (no copy). A replacing
// PUT that fails leaves the version before it; a part locked by a writer waits for it; a lock
// whose holder died stops counting when it expires; uploads begun with one file per part still
// complete.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { ErrorBody } from '../src/core/errors.js';
import { callApi, makeTeam, type TeamFixture } from './helpers/fixtures.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { md5Etag, putPart, uploadAll, type PartRef, type Upload } from './helpers/uploads.js';
import { waitFor } from './helpers/worker.js';

const PART = 64 * 1024;
let s: TestServer;
let team: TeamFixture;

async function startUpload(size: number): Promise<Upload> {
  const res = await callApi(s.url, team.key, 'POST', '/v1/files/upload-url', { file_name: 'x.bin', mime_type: 'application/octet-stream', size_bytes: size });
  assert.equal(res.status, 201, await res.clone().text());
  return (await res.json()) as Upload;
}

function complete(upload: Upload, parts: PartRef[]): Promise<Response> {
  return callApi(s.url, team.key, 'POST', `/v1/files/${upload.file_id}/complete`, { upload_id: upload.upload_id, parts });
}

const uploadDir = (upload: Upload) => path.join(s.config.dataDir, 'storage', 'uploads', upload.upload_id);
const partsDir = (upload: Upload) => path.join(uploadDir(upload), 'parts');
const objectPath = (upload: Upload) => path.join(s.config.dataDir, 'storage', 'objects', 'files', team.teamId, upload.file_id);

/** A PUT of part n that sends `sent` bytes of the `declared` it announces, then waits; abort() cuts it. */
function partialPut(upload: Upload, n: number, declared: number, sent: Buffer): { abort(): void; end(rest: Buffer): void; answer: Promise<{ status: number; body: string }> } {
  const req = http.request(new URL(upload.parts[n - 1]?.url ?? ''), { method: 'PUT', headers: { 'content-length': String(declared) } });
  const answer = new Promise<{ status: number; body: string }>((resolve, reject) => {
    req.on('response', (r) => {
      let text = '';
      r.setEncoding('utf8');
      r.on('data', (c: string) => (text += c));
      r.on('end', () => resolve({ status: r.statusCode ?? 0, body: text }));
    });
    req.on('error', reject);
  });
  // A cut-off PUT's answer is never awaited: its failure is the point.
  answer.catch(() => undefined);
  req.write(sent);
  return { abort: () => req.destroy(), end: (rest) => req.end(rest), answer };
}

const tempFiles = (upload: Upload) => fs.readdirSync(partsDir(upload)).filter((n) => n.endsWith('.tmp'));

before(async () => {
  s = await startTestServer({ env: { TOOLRUN_PART_SIZE_BYTES: String(PART) } });
  team = await makeTeam(s.database.db);
});
after(() => s.close());

describe('local uploads written in place', () => {
  test('parts PUT at once, out of order and again, land at their offsets; completion renames the data file into place', async () => {
    const size = 5 * PART + 123;
    const bytes = randomBytes(size);
    const upload = await startUpload(size);
    assert.equal(upload.parts.length, 6);
    const first = await uploadAll(upload, randomBytes(size));
    // Every part again, at once: each is replaced whole by the one PUT after it.
    const parts = await uploadAll(upload, bytes);
    assert.notDeepEqual(parts, first);
    const data = fs.statSync(path.join(uploadDir(upload), 'data'));
    assert.equal(data.size, size);

    const res = await complete(upload, parts);
    assert.equal(res.status, 200, await res.clone().text());
    const stored = fs.statSync(objectPath(upload));
    assert.equal(stored.ino, data.ino, 'the object is the data file itself, renamed');
    assert.ok(fs.readFileSync(objectPath(upload)).equals(bytes));
    assert.equal(fs.existsSync(uploadDir(upload)), false);
  });

  test('a first PUT cut off mid-body leaves no part; a replacing PUT cut off leaves the version before it', async () => {
    const size = 2 * PART;
    const bytes = randomBytes(size);
    const upload = await startUpload(size);

    const cut = partialPut(upload, 1, PART, bytes.subarray(0, PART / 2));
    await waitFor('the first part to be arriving', async () => (fs.readdirSync(partsDir(upload)).some((n) => n.startsWith('.1.lock.')) ? true : undefined));
    cut.abort();
    await waitFor('the cut-off PUT to let go of its part', async () => (fs.readdirSync(partsDir(upload)).some((n) => n.startsWith('.1.lock.')) ? undefined : true));
    assert.deepEqual(await s.storage.listParts('', upload.upload_id), []);

    const parts = await uploadAll(upload, bytes);
    const again = partialPut(upload, 2, PART, randomBytes(PART / 2));
    await waitFor('the replacing PUT to be arriving', async () => (tempFiles(upload).length ? true : undefined));
    again.abort();
    await waitFor('its temporary file to be removed', async () => (tempFiles(upload).length ? undefined : true));
    assert.deepEqual(
      (await s.storage.listParts('', upload.upload_id))?.map((p) => p.etag),
      parts.map((p) => p.etag),
    );
    const res = await complete(upload, parts);
    assert.equal(res.status, 200, await res.clone().text());
    assert.ok(fs.readFileSync(objectPath(upload)).equals(bytes));
  });

  test("a part another writer holds is written once it lets go; a lock whose holder died counts no more once expired", async () => {
    const upload = await startUpload(PART);
    // A holder that died: its lock expired a second ago. The first PUT goes straight in.
    fs.writeFileSync(path.join(partsDir(upload), `.1.lock.${Date.now() - 1000}.00aa00aa00aa00aa`), '');
    const old = randomBytes(PART);
    await putPart(upload, old, 1);

    // A live holder (another process, say): the PUT arrives whole, then waits for the part.
    const held = path.join(partsDir(upload), `.1.lock.${Date.now() + 60_000}.00bb00bb00bb00bb`);
    fs.writeFileSync(held, '');
    const bytes = randomBytes(PART);
    const put = partialPut(upload, 1, PART, bytes.subarray(0, PART - 1));
    let answered = false;
    void put.answer.then(() => (answered = true), () => (answered = true));
    put.end(bytes.subarray(PART - 1));
    await waitFor('the PUT to have arrived whole', async () => {
      const [tmp] = tempFiles(upload);
      return tmp && fs.statSync(path.join(partsDir(upload), tmp)).size === PART ? true : undefined;
    });
    assert.equal(answered, false, 'answered while the part was held');
    assert.deepEqual((await s.storage.listParts('', upload.upload_id))?.map((p) => p.etag), [md5Etag(old)]);
    fs.rmSync(held);
    const { status, body } = await put.answer;
    assert.equal(status, 200, body);
    const res = await complete(upload, [{ part_number: 1, etag: md5Etag(bytes) }]);
    assert.equal(res.status, 200, await res.clone().text());
    assert.ok(fs.readFileSync(objectPath(upload)).equals(bytes));
  });

  test('a part another PUT keeps holding past the wait: the replacing PUT and the completion answer 409 part_in_progress, and the upload stays usable', async () => {
    const short = await startTestServer({ database: s.database, env: { TOOLRUN_PART_SIZE_BYTES: String(PART), TOOLRUN_PART_LOCK_WAIT_MS: '1500' } });
    try {
      const res = await callApi(short.url, team.key, 'POST', '/v1/files/upload-url', { file_name: 'x.bin', mime_type: 'application/octet-stream', size_bytes: PART });
      assert.equal(res.status, 201, await res.clone().text());
      const upload = (await res.json()) as Upload;
      const first = randomBytes(PART);
      await putPart(upload, first, 1);
      // A live writer (another process, say) holds the part and keeps renewing its lock.
      const dir = path.join(short.config.dataDir, 'storage', 'uploads', upload.upload_id, 'parts');
      const held = path.join(dir, `.1.lock.${Date.now() + 3_600_000}.00cc00cc00cc00cc`);
      fs.writeFileSync(held, '');
      const again = partialPut(upload, 1, PART, randomBytes(PART));
      const refused = await again.answer;
      assert.equal(refused.status, 409, refused.body);
      const error = (JSON.parse(refused.body) as ErrorBody).error;
      assert.equal(error.code, 'part_in_progress');
      assert.deepEqual(error.details, { part_numbers: [1] });
      const completing = await callApi(short.url, team.key, 'POST', `/v1/files/${upload.file_id}/complete`, {
        upload_id: upload.upload_id,
        parts: [{ part_number: 1, etag: md5Etag(first) }],
      });
      assert.equal(completing.status, 409, await completing.clone().text());
      assert.equal(((await completing.json()) as ErrorBody).error.code, 'part_in_progress');
      // The writer lets go: the part is the first PUT's, and the upload completes with it.
      fs.rmSync(held);
      const done = await callApi(short.url, team.key, 'POST', `/v1/files/${upload.file_id}/complete`, {
        upload_id: upload.upload_id,
        parts: [{ part_number: 1, etag: md5Etag(first) }],
      });
      assert.equal(done.status, 200, await done.clone().text());
      const object = path.join(short.config.dataDir, 'storage', 'objects', 'files', team.teamId, upload.file_id);
      assert.ok(fs.readFileSync(object).equals(first));
    } finally {
      await short.close();
    }
  });

  test('an upload begun with one file per part (before this layout) takes PUTs the old way and completes', async () => {
    const size = 3 * PART;
    const bytes = randomBytes(size);
    const upload = await startUpload(size);
    // What earlier versions wrote: meta.json without the layout, no data file.
    const metaFile = path.join(uploadDir(upload), 'meta.json');
    const meta = JSON.parse(fs.readFileSync(metaFile, 'utf8')) as Record<string, unknown>;
    delete meta.layout;
    fs.writeFileSync(metaFile, JSON.stringify(meta));
    fs.rmSync(path.join(uploadDir(upload), 'data'));

    const parts = await uploadAll(upload, bytes);
    assert.deepEqual(fs.readdirSync(partsDir(upload)).sort(), ['1', '2', '3']);
    assert.equal(fs.statSync(path.join(partsDir(upload), '2')).size, PART + 16, 'the bytes and their MD5, in one file');
    const res = await complete(upload, parts);
    assert.equal(res.status, 200, await res.clone().text());
    assert.ok(fs.readFileSync(objectPath(upload)).equals(bytes));
  });

  test('completing with a stale ETag after a part was PUT again: 422, and the upload completes with the new one', async () => {
    const upload = await startUpload(PART);
    const first = randomBytes(PART);
    const etag1 = await putPart(upload, first, 1);
    const second = randomBytes(PART);
    const etag2 = await putPart(upload, second, 1);
    const stale = await complete(upload, [{ part_number: 1, etag: etag1 }]);
    assert.equal(stale.status, 422);
    assert.equal(((await stale.json()) as ErrorBody).error.errors?.[0]?.code, 'etag_mismatch');
    const res = await complete(upload, [{ part_number: 1, etag: etag2 }]);
    assert.equal(res.status, 200, await res.clone().text());
    assert.ok(fs.readFileSync(objectPath(upload)).equals(second));
  });
});
