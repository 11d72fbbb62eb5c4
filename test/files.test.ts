import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { getTeamFiles } from '../src/files/repository.js';
import { expireFiles } from '../src/files/janitor.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { callApi, makeTeam, type TeamFixture } from './helpers/fixtures.js';
import { makeMp4, makePng } from './helpers/media.js';
import { putPart, uploadAll, type PartRef, type Upload } from './helpers/uploads.js';

const PART = 16 * 1024;
let s: TestServer;
let team: TeamFixture;
let other: TeamFixture;
let png: Buffer;
let mp4: Buffer;

function api(method: string, url: string, key: string, body?: unknown): Promise<Response> {
  return callApi(s.url, key, method, url, body);
}

async function startUpload(bytes: Buffer, name: string, mime: string, key = team.key): Promise<Upload> {
  const res = await api('POST', '/v1/files/upload-url', key, { file_name: name, mime_type: mime, size_bytes: bytes.length });
  assert.equal(res.status, 201, await res.clone().text());
  return (await res.json()) as Upload;
}

async function complete(upload: Upload, parts: PartRef[], key = team.key): Promise<Response> {
  return api('POST', `/v1/files/${upload.file_id}/complete`, key, { upload_id: upload.upload_id, parts });
}

before(async () => {
  s = await startTestServer({ env: { TOOLRUN_PART_SIZE_BYTES: String(PART), TOOLRUN_MAX_FILE_BYTES: String(1024 * 1024 * 1024) } });
  team = await makeTeam(s.database.db);
  other = await makeTeam(s.database.db);
  png = await makePng(320, 240);
  mp4 = await makeMp4({ seconds: 2, width: 320, height: 240 });
  assert.ok(png.length > 2 * PART, `test PNG must span several parts (${png.length} bytes)`);
  assert.ok(mp4.length > PART, `test MP4 must span several parts (${mp4.length} bytes)`);
});
after(() => s.close());

describe('file upload: happy path over real sockets', () => {
  test('a PNG uploaded in parts, out of order and in parallel, becomes a ready image with its probe', async () => {
    const upload = await startUpload(png, 'photo.png', 'image/png');
    assert.equal(upload.part_size_bytes, PART);
    assert.equal(upload.parts.length, Math.ceil(png.length / PART));
    assert.deepEqual(upload.parts.map((p) => p.part_number), upload.parts.map((_, i) => i + 1));
    assert.equal(upload.expires_in_seconds, 3600);
    const parts = await uploadAll(upload, png);
    const res = await complete(upload, parts);
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { object: 'file', id: upload.file_id, status: 'ready' });
    const [row] = await getTeamFiles(s.database.db.pool, team.teamId, [upload.file_id]);
    assert.equal(row?.media_kind, 'image');
    assert.equal(row?.detected_mime, 'image/png');
    assert.equal(row?.width, 320);
    assert.equal(row?.height, 240);
  });

  test('an MP4 becomes a ready video with size, duration and codecs', async () => {
    const upload = await startUpload(mp4, 'clip.mp4', 'video/mp4');
    const res = await complete(upload, await uploadAll(upload, mp4));
    assert.equal(res.status, 200);
    assert.equal(((await res.json()) as { status: string }).status, 'ready');
    const { rows } = await s.database.db.pool.query(
      'SELECT media_kind, width, height, duration_seconds, video_codec, audio_codec FROM files WHERE id = $1::uuid',
      [upload.file_id],
    );
    assert.equal(rows[0].media_kind, 'video');
    assert.equal(rows[0].width, 320);
    assert.equal(rows[0].height, 240);
    assert.ok(Math.abs(rows[0].duration_seconds - 2) < 0.2, `duration ${rows[0].duration_seconds}`);
    assert.equal(rows[0].video_codec, 'h264');
    assert.equal(rows[0].audio_codec, 'aac');
  });

  test('a part PUT may be repeated: the last one wins', async () => {
    const upload = await startUpload(png, 'again.png', 'image/png');
    const garbage = Buffer.alloc(PART, 7);
    const first = await fetch(upload.parts[0]?.url ?? '', { method: 'PUT', body: Uint8Array.from(garbage) });
    assert.equal(first.status, 200);
    const parts = await uploadAll(upload, png);
    const res = await complete(upload, parts);
    assert.equal(((await res.json()) as { status: string }).status, 'ready');
    // The assembled object is byte for byte the PNG.
    const stored = fs.readFileSync(path.join(s.config.dataDir, 'storage', 'objects', 'files', team.teamId, upload.file_id));
    assert.ok(stored.equals(png));
  });

  test('completing twice returns the same file', async () => {
    const upload = await startUpload(png, 'twice.png', 'image/png');
    const parts = await uploadAll(upload, png);
    const [a, b] = await Promise.all([complete(upload, parts), complete(upload, parts)]);
    assert.equal(a.status, 200);
    assert.equal(b.status, 200);
    assert.deepEqual(await a.json(), await b.json());
    const again = await complete(upload, parts);
    assert.deepEqual(await again.json(), { object: 'file', id: upload.file_id, status: 'ready' });
  });

  test('bytes that are not media are rejected, whatever the declared type', async () => {
    const text = Buffer.from('hello, this is not an image at all\n'.repeat(100));
    const upload = await startUpload(text, 'fake.png', 'image/png');
    const res = await complete(upload, await uploadAll(upload, text));
    assert.equal(res.status, 200);
    assert.equal(((await res.json()) as { status: string }).status, 'rejected');
  });

  test('a truncated PNG (valid header, broken data) is rejected', async () => {
    const broken = png.subarray(0, Math.floor(png.length / 2));
    const upload = await startUpload(broken, 'broken.png', 'image/png');
    const res = await complete(upload, await uploadAll(upload, broken));
    assert.equal(((await res.json()) as { status: string }).status, 'rejected');
  });

  test('the part size grows so that no upload needs more than 10,000 parts', async () => {
    const res = await api('POST', '/v1/files/upload-url', team.key, {
      file_name: 'big.bin',
      mime_type: 'video/mp4',
      size_bytes: 200 * 1024 * 1024,
    });
    assert.equal(res.status, 201);
    const body = (await res.json()) as Upload;
    // 200 MiB in 16 KiB parts would be 12,800 parts: grown to whole MiB instead.
    assert.equal(body.part_size_bytes, 1024 * 1024);
    assert.equal(body.parts.length, 200);
  });
});

describe('file upload: errors', () => {
  async function expectError(res: Response, status: number, code: string, locs: unknown[][]): Promise<void> {
    assert.equal(res.status, status);
    const body = (await res.json()) as { error: { code: string; request_id: string; errors: { loc: unknown[]; code: string }[] | null } };
    assert.equal(body.error.code, code);
    assert.equal(body.error.request_id, res.headers.get('x-request-id'));
    assert.deepEqual(
      (body.error.errors ?? []).map((e) => e.loc),
      locs,
    );
  }

  test('upload-url body bounds', async () => {
    await expectError(await api('POST', '/v1/files/upload-url', team.key, { file_name: '', mime_type: 'image/png', size_bytes: 1 }), 422, 'invalid_request', [['body', 'file_name']]);
    await expectError(
      await api('POST', '/v1/files/upload-url', team.key, { file_name: 'a'.repeat(256), mime_type: 'x'.repeat(256), size_bytes: 0 }),
      422,
      'invalid_request',
      [['body', 'file_name'], ['body', 'mime_type'], ['body', 'size_bytes']],
    );
    await expectError(await api('POST', '/v1/files/upload-url', team.key, { file_name: 'a', mime_type: 'b', size_bytes: 1.5 }), 422, 'invalid_request', [['body', 'size_bytes']]);
    await expectError(await api('POST', '/v1/files/upload-url', team.key, { file_name: 'a', mime_type: 'b', size_bytes: '12' }), 422, 'invalid_request', [['body', 'size_bytes']]);
    await expectError(await api('POST', '/v1/files/upload-url', team.key, { file_name: 'a', mime_type: 'b' }), 422, 'invalid_request', [['body', 'size_bytes']]);
    await expectError(await api('POST', '/v1/files/upload-url', team.key, { file_name: 'a', mime_type: 'b', size_bytes: 1, extra: 1 }), 422, 'invalid_request', [['body', 'extra']]);
    await expectError(
      await api('POST', '/v1/files/upload-url', team.key, { file_name: 'a', mime_type: 'b', size_bytes: 1024 * 1024 * 1024 + 1 }),
      422,
      'invalid_request',
      [['body', 'size_bytes']],
    );
  });

  test('a read-only key may not upload', async () => {
    const readOnly = await makeTeam(s.database.db, { scopes: ['read'] });
    const res = await api('POST', '/v1/files/upload-url', readOnly.key, { file_name: 'a', mime_type: 'b', size_bytes: 1 });
    assert.equal(res.status, 403);
    const body = (await res.json()) as { error: { code: string; details: { required_scope: string } } };
    assert.equal(body.error.code, 'insufficient_scope');
    assert.equal(body.error.details.required_scope, 'run');
  });

  test('complete: wrong upload_id, unknown, other team and malformed ids', async () => {
    const upload = await startUpload(png, 'x.png', 'image/png');
    const parts = await uploadAll(upload, png);
    await expectError(
      await api('POST', `/v1/files/${upload.file_id}/complete`, team.key, { upload_id: 'nope', parts }),
      422,
      'invalid_request',
      [['body', 'upload_id']],
    );
    await expectError(await complete({ ...upload, file_id: '6a1f6a4e-3f0c-4b7a-9a53-1e2a0a6c9d11' }, parts), 404, 'file_not_found', []);
    await expectError(await complete(upload, parts, other.key), 404, 'file_not_found', []);
    await expectError(
      await api('POST', '/v1/files/not-a-uuid/complete', team.key, { upload_id: upload.upload_id, parts }),
      422,
      'invalid_request',
      [['path', 'file_id']],
    );
    await expectError(
      await api('POST', `/v1/files/${upload.file_id}/complete`, team.key, { upload_id: upload.upload_id, parts: [] }),
      422,
      'invalid_request',
      [['body', 'parts']],
    );
    await expectError(
      await api('POST', `/v1/files/${upload.file_id}/complete`, team.key, { upload_id: upload.upload_id, parts: [{ part_number: 0, etag: '' }] }),
      422,
      'invalid_request',
      [['body', 'parts', 0, 'part_number'], ['body', 'parts', 0, 'etag']],
    );
  });

  test('complete: missing, duplicate, unknown and mismatched parts, one entry each', async () => {
    const upload = await startUpload(png, 'y.png', 'image/png');
    const parts = await uploadAll(upload, png);
    assert.ok(parts.length >= 3);
    const [p1, p2, ...rest] = parts;
    assert.ok(p1 && p2);
    const res = await complete(upload, [
      p1,
      p1,
      { part_number: p2.part_number, etag: '"0123456789abcdef0123456789abcdef"' },
      { part_number: parts.length + 1, etag: 'x' },
      ...rest.slice(1),
    ]);
    assert.equal(res.status, 422);
    const body = (await res.json()) as { error: { errors: { loc: unknown[]; code: string }[] } };
    assert.deepEqual(
      body.error.errors.map((e) => [e.loc, e.code]),
      [
        [['body', 'parts', 1, 'part_number'], 'duplicate_part'],
        [['body', 'parts', 2, 'etag'], 'etag_mismatch'],
        [['body', 'parts', 3, 'part_number'], 'unknown_part'],
        [['body', 'parts'], 'part_missing'],
      ],
    );
    // Nothing was lost: the right list still completes.
    const ok = await complete(upload, parts);
    assert.equal(ok.status, 200);
  });

  test('complete: parts that do not add up to size_bytes', async () => {
    const declared = Buffer.concat([png, Buffer.alloc(10)]);
    const upload = await startUpload(declared, 'short.png', 'image/png');
    const parts = await uploadAll(upload, png); // 10 bytes short in the last part
    const res = await complete(upload, parts);
    assert.equal(res.status, 422);
    const body = (await res.json()) as { error: { errors: { loc: unknown[]; code: string }[] } };
    assert.deepEqual(body.error.errors.map((e) => [e.loc, e.code]), [[['body', 'parts'], 'size_mismatch']]);
  });

  test('complete: a part that was never uploaded', async () => {
    const upload = await startUpload(png, 'z.png', 'image/png');
    const first = await putPart(upload, png, 1);
    const res = await complete(
      upload,
      upload.parts.map((p) => ({ part_number: p.part_number, etag: p.part_number === 1 ? first : '"00000000000000000000000000000000"' })),
    );
    assert.equal(res.status, 422);
    const body = (await res.json()) as { error: { errors: { loc: unknown[]; code: string }[] } };
    assert.deepEqual(
      body.error.errors.map((e) => e.code),
      upload.parts.slice(1).map(() => 'part_not_uploaded'),
    );
  });
});

describe('file upload: signed part URLs (security)', () => {
  async function refused(res: Response, code: string): Promise<void> {
    assert.equal(res.status, 403);
    const body = (await res.json()) as { error: { code: string; request_id: string } };
    assert.equal(body.error.code, code);
    assert.equal(body.error.request_id, res.headers.get('x-request-id'));
  }

  test('a tampered signature is refused', async () => {
    const upload = await startUpload(png, 't.png', 'image/png');
    const url = new URL(upload.parts[0]?.url ?? '');
    const sig = url.searchParams.get('signature') ?? '';
    url.searchParams.set('signature', (sig[0] === 'a' ? 'b' : 'a') + sig.slice(1));
    await refused(await fetch(url, { method: 'PUT', body: 'x' }), 'signature_invalid');
  });

  test('a URL reused for another part is refused', async () => {
    const upload = await startUpload(png, 'r.png', 'image/png');
    const url = new URL(upload.parts[0]?.url ?? '');
    url.pathname = url.pathname.replace(/\/parts\/1$/, '/parts/2');
    await refused(await fetch(url, { method: 'PUT', body: 'x' }), 'signature_invalid');
  });

  test('an extended expiry is refused, and an expired URL is refused', async () => {
    const upload = await startUpload(png, 'e.png', 'image/png');
    const url = new URL(upload.parts[0]?.url ?? '');
    url.searchParams.set('expires', String(Number(url.searchParams.get('expires')) + 3600));
    await refused(await fetch(url, { method: 'PUT', body: 'x' }), 'signature_invalid');
    const signer = s.localStorage().signer;
    const expired = signer.sign('PUT', s.url, new URL(upload.parts[0]?.url ?? '').pathname, 60, {}, Date.now() - 120_000);
    await refused(await fetch(expired, { method: 'PUT', body: 'x' }), 'url_expired');
  });

  test('a part larger than the part size is refused', async () => {
    const upload = await startUpload(png, 'l.png', 'image/png');
    const res = await fetch(upload.parts[0]?.url ?? '', { method: 'PUT', body: new Uint8Array(PART + 1) });
    assert.equal(res.status, 413);
  });
});

describe('file expiry', () => {
  test('abandoned uploads and files past retention are deleted and stop being usable', async () => {
    const abandoned = await startUpload(png, 'abandoned.png', 'image/png');
    await putPart(abandoned, png, 1);
    const kept = await startUpload(png, 'kept.png', 'image/png');
    const keptParts = await uploadAll(kept, png);
    assert.equal((await complete(kept, keptParts)).status, 200);
    const db = s.database.db.pool;
    await db.query(`UPDATE files SET upload_expires_at = now() - interval '1 second' WHERE id = $1::uuid`, [abandoned.file_id]);
    await db.query(`UPDATE files SET expires_at = now() - interval '1 second' WHERE id = $1::uuid`, [kept.file_id]);
    const expired = await expireFiles(s.database.db, s.storage, s.logger);
    assert.ok(expired >= 2);
    const rows = await getTeamFiles(db, team.teamId, [abandoned.file_id, kept.file_id]);
    assert.deepEqual(rows.map((r) => r.status), ['expired', 'expired']);
    assert.equal(await s.storage.size(`files/${team.teamId}/${kept.file_id}`), null);
    const uploadsDir = path.join(s.config.dataDir, 'storage', 'uploads', abandoned.upload_id);
    assert.equal(fs.existsSync(uploadsDir), false);
    // The expired upload's part URLs no longer take bytes, and completing answers 404.
    const put = await fetch(abandoned.parts[1]?.url ?? '', { method: 'PUT', body: 'x' });
    assert.equal(put.status, 404);
    const res = await complete(kept, keptParts);
    assert.equal(res.status, 404);
  });
});
