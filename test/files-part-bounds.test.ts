// One part URL cannot fill the disk (local storage): a part PUT again replaces the bytes it held at
// once, so an upload holds at most its size_bytes plus the parts still arriving; a part larger
// than its exact size is refused before it is stored; and a part PUT again while the upload
// completes gives either a clear 422 or a consistent object, never a 5xx or mixed bytes.
// (The S3 side, each part URL signing its exact Content-Length, is in files-s3-presigned.test.ts.)
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { completeUpload } from '../src/files/service.js';
import { ApiError, envelope, type ErrorBody } from '../src/core/errors.js';
import { resolveMediaBinaries } from '../src/media/binaries.js';
import { LocalStorage } from '../src/storage/local.js';
import type { StoredPart } from '../src/storage/storage.js';
import { callApi, makeTeam, type TeamFixture } from './helpers/fixtures.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { md5Etag, putPart, uploadAll, type PartRef, type Upload } from './helpers/uploads.js';
import { waitFor } from './helpers/worker.js';

const MIB = 1024 * 1024;
/** meta.json and each part's 16-byte MD5: what an upload holds beyond its bytes. */
const OVERHEAD = 4096;
let s: TestServer;
let team: TeamFixture;

async function startUpload(size: number, name = 'part.bin', mime = 'application/octet-stream'): Promise<Upload> {
  const res = await callApi(s.url, team.key, 'POST', '/v1/files/upload-url', { file_name: name, mime_type: mime, size_bytes: size });
  assert.equal(res.status, 201, await res.clone().text());
  return (await res.json()) as Upload;
}

function complete(upload: Upload, parts: PartRef[]): Promise<Response> {
  return callApi(s.url, team.key, 'POST', `/v1/files/${upload.file_id}/complete`, { upload_id: upload.upload_id, parts });
}

function uploadDir(upload: Upload): string {
  return path.join(s.config.dataDir, 'storage', 'uploads', upload.upload_id);
}

/** The bytes of every file under dir: what the upload holds on disk. */
function diskBytes(dir: string): number {
  let total = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) total += diskBytes(p);
    else if (entry.isFile()) total += fs.statSync(p).size;
  }
  return total;
}

function storedObject(upload: Upload): Buffer {
  return fs.readFileSync(path.join(s.config.dataDir, 'storage', 'objects', 'files', team.teamId, upload.file_id));
}

async function put(url: string, bytes: Uint8Array): Promise<Response> {
  return fetch(url, { method: 'PUT', body: Uint8Array.from(bytes) });
}

function storageRoot(): string {
  assert.equal(s.config.storage.kind, 'local');
  return s.config.storage.kind === 'local' ? s.config.storage.root : '';
}

before(async () => {
  // The default part size (8 MiB): a 1 MiB upload is one part.
  s = await startTestServer();
  team = await makeTeam(s.database.db);
});
after(() => s.close());

describe('local storage: a part PUT again replaces its bytes', () => {
  test("20 PUTs of the one part of a 1 MiB upload leave one part's bytes; an oversized PUT stores nothing", async () => {
    const upload = await startUpload(MIB);
    assert.equal(upload.parts.length, 1);
    const url = upload.parts[0]?.url ?? '';
    const dir = uploadDir(upload);
    for (let i = 0; i < 10; i++) {
      const res = await put(url, randomBytes(MIB));
      assert.equal(res.status, 200, await res.text());
      const held = diskBytes(dir);
      assert.ok(held >= MIB && held <= MIB + OVERHEAD, `after PUT ${i + 1} the upload holds ${held} bytes`);
    }
    // Ten more at once: the last rename wins, and the others' bytes go with it.
    const bodies = Array.from({ length: 10 }, () => randomBytes(MIB));
    const etags = await Promise.all(
      bodies.map(async (b) => {
        const res = await put(url, b);
        assert.equal(res.status, 200, await res.clone().text());
        return res.headers.get('etag') ?? '';
      }),
    );
    assert.deepEqual(etags, bodies.map(md5Etag));
    const held = diskBytes(dir);
    assert.ok(held >= MIB && held <= MIB + OVERHEAD, `after 20 PUTs the upload holds ${held} bytes`);

    // One byte more than the part's exact size is refused before it is read, and stores nothing.
    const over = await put(url, new Uint8Array(MIB + 1));
    assert.equal(over.status, 413);
    const err = ((await over.json()) as ErrorBody).error;
    assert.equal(err.code, 'payload_too_large');
    assert.deepEqual(err.details, { max_bytes: MIB });
    assert.equal(diskBytes(dir), held);

    // The part held is one whole version: the one whose ETag storage lists.
    const [listed] = await s.storage.listParts('', upload.upload_id) ?? [];
    const winner = bodies[etags.indexOf(listed?.etag ?? '')];
    assert.ok(winner, `listed ${JSON.stringify(listed)}, not one of the PUTs`);
    const res = await complete(upload, [{ part_number: 1, etag: listed?.etag ?? '' }]);
    assert.equal(res.status, 200, await res.clone().text());
    assert.ok(storedObject(upload).equals(winner));
    assert.equal(fs.existsSync(dir), false);
  });

  test('a part PUT again after completion checked it: 422 etag_mismatch, and the new ETag then completes', async () => {
    // A PUT landing between completion's listing of the parts and its reading of them, every time:
    // this storage (the real one, on the same directory) makes the PUT right after listing.
    class PutAfterListing extends LocalStorage {
      putNext: (() => Promise<void>) | null = null;
      override async listParts(key: string, uploadId: string): Promise<StoredPart[]> {
        const parts = await super.listParts(key, uploadId);
        const putNow = this.putNext;
        this.putNext = null;
        await putNow?.();
        return parts;
      }
    }
    const storage = new PutAfterListing(storageRoot(), s.url, s.localStorage().signer);
    const deps = { config: s.config, db: s.database.db, storage, media: resolveMediaBinaries() };

    const size = 3 * MIB;
    const upload = await startUpload(size);
    const first = randomBytes(size);
    const second = Buffer.from(first);
    second.fill(7, 0, 1024);
    assert.equal(upload.parts.length, 1);
    const etag1 = await putPart(upload, first, 1);
    let etag2 = '';
    storage.putNext = async () => {
      etag2 = await putPart(upload, second, 1);
    };
    const refused = await completeUpload(deps, team.teamId, upload.file_id, { upload_id: upload.upload_id, parts: [{ part_number: 1, etag: etag1 }] }).then(
      () => assert.fail('completed with a replaced part'),
      (e: unknown) => e,
    );
    assert.ok(refused instanceof ApiError, String(refused));
    assert.equal(refused.status, 422);
    const body = envelope(refused, 'r').error;
    assert.equal(body.code, 'invalid_request');
    assert.deepEqual(
      body.errors?.map((e) => [e.loc, e.code]),
      [[['body', 'parts', 0, 'etag'], 'etag_mismatch']],
    );
    assert.equal(etag2, md5Etag(second));
    // Nothing was assembled, the upload is intact and holds only the new version.
    assert.equal(await s.storage.size(`files/${team.teamId}/${upload.file_id}`), null);
    assert.ok(diskBytes(uploadDir(upload)) <= size + OVERHEAD);
    const res = await complete(upload, [{ part_number: 1, etag: etag2 }]);
    assert.equal(res.status, 200, await res.clone().text());
    assert.ok(storedObject(upload).equals(second));
  });

  test('a part still arriving when its upload completes is told 404 upload_not_found, and the object is whole', async () => {
    const size = 2 * MIB;
    const bytes = randomBytes(size);
    const upload = await startUpload(size);
    const parts = await uploadAll(upload, bytes);
    const partsDir = path.join(uploadDir(upload), 'parts');

    // A second PUT of part 1 sends half its body and waits.
    const url = new URL(upload.parts[0]?.url ?? '');
    const late = http.request(url, { method: 'PUT', headers: { 'content-length': String(size) } });
    const answer = new Promise<{ status: number; body: string }>((resolve, reject) => {
      late.on('response', (r) => {
        let text = '';
        r.setEncoding('utf8');
        r.on('data', (c: string) => (text += c));
        r.on('end', () => resolve({ status: r.statusCode ?? 0, body: text }));
      });
      late.on('error', reject);
    });
    late.write(Buffer.alloc(size / 2, 1));
    await waitFor('the late part to be arriving', async () => (fs.readdirSync(partsDir).some((n) => n.endsWith('.tmp')) ? true : undefined));

    const res = await complete(upload, parts);
    assert.equal(res.status, 200, await res.clone().text());
    assert.ok(storedObject(upload).equals(bytes));
    assert.equal(fs.existsSync(uploadDir(upload)), false);

    late.end(Buffer.alloc(size / 2, 1));
    const { status, body } = await answer;
    assert.equal(status, 404, body);
    assert.equal((JSON.parse(body) as ErrorBody).error.code, 'upload_not_found');
    assert.ok(storedObject(upload).equals(bytes));
  });

  test('an upload begun before this layout (a symlink per part) completes, and a new PUT deletes its old bytes', async () => {
    const size = MIB;
    const old = randomBytes(size);
    const upload = await startUpload(size);
    const partsDir = path.join(uploadDir(upload), 'parts');
    const md5 = createHash('md5').update(old).digest('hex');
    // The layout earlier versions wrote: N -> N.<md5>.<size>.<nonce>.data
    const oldData = `1.${md5}.${size}.a1b2c3d4e5f6.data`;
    fs.writeFileSync(path.join(partsDir, oldData), old);
    fs.symlinkSync(oldData, path.join(partsDir, '1'));
    assert.deepEqual(await s.storage.listParts('', upload.upload_id), [{ partNumber: 1, etag: `"${md5}"`, size }]);

    const fresh = randomBytes(size);
    const etag = await putPart(upload, fresh, 1);
    assert.deepEqual(fs.readdirSync(partsDir), ['1']);
    assert.ok(diskBytes(uploadDir(upload)) <= size + OVERHEAD);
    const res = await complete(upload, [{ part_number: 1, etag }]);
    assert.equal(res.status, 200, await res.clone().text());
    assert.ok(storedObject(upload).equals(fresh));

    const kept = await startUpload(size);
    const keptDir = path.join(uploadDir(kept), 'parts');
    fs.writeFileSync(path.join(keptDir, oldData), old);
    fs.symlinkSync(oldData, path.join(keptDir, '1'));
    const done = await complete(kept, [{ part_number: 1, etag: `"${md5}"` }]);
    assert.equal(done.status, 200, await done.clone().text());
    assert.ok(storedObject(kept).equals(old));
  });
});
