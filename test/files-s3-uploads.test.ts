// The file upload flow on the S3 backend, against s3rver or the real S3 named by TEST_S3_ENDPOINT
// (Ceph's RADOS Gateway in `.ci/run`; test/helpers/s3-target.ts) over real sockets (test/helpers/files-s3.ts): presigned UploadPart PUTs, CompleteMultipartUpload, probing
// through a presigned GET, what upload-url and completion refuse, and the janitor's deletes. (The
// presigned URLs themselves, their signatures and expiry, are in files-s3-presigned.test.ts.)
//
// What s3rver 3.7.1 can and cannot show here (read from its source, and seen here):
// - ListParts answers 405 MethodNotAllowed, so S3Storage.listParts returns null ("cannot list") and
//   completion checks only what it can without it: the part numbers before completing, the
//   assembled size after. A full S3 (AWS, MinIO) lists parts, so checkParts also names a wrong
//   ETag (etag_mismatch), a part never uploaded (part_not_uploaded) and the part of the wrong size
//   (size_mismatch on ["body","parts",i]) before anything is assembled.
// - It does not compare ETags at CompleteMultipartUpload (AWS answers InvalidPart), and does not
//   implement AbortMultipartUpload (405, which S3Storage.abortUpload tolerates): parts of an
//   abandoned upload stay on its disk, where AWS would discard them.
// What only a real S3 answers (ListParts, signed lengths, ETags, aborts, its minimum part size) is
// in s3-real-*.test.ts.
import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { HeadObjectCommand, ListObjectsV2Command, S3ServiceException } from '@aws-sdk/client-s3';
import { expireFiles } from '../src/files/janitor.js';
import { getTeamFiles } from '../src/files/repository.js';
import {
  api,
  BUCKET,
  complete,
  endpoint,
  inspector,
  objectKey,
  PART,
  png,
  PNG_SIZE,
  PREFIX,
  readObject,
  s,
  startS3Service,
  startUpload,
  stopS3Service,
  team,
} from './helpers/files-s3.js';
import { makeMp4 } from './helpers/media.js';
import { realS3 } from './helpers/s3-target.js';
import { md5Etag, putPart, uploadAll } from './helpers/uploads.js';

/** A real S3 refuses a short part's PUT itself (its URL signs the Content-Length): s3-real-parts. */
const SHORT_PUT_TAKEN = realS3() ? 'a real S3 refuses the short PUT itself (see s3-real-parts.test.ts)' : false;

/** Every request s3rver received, in order. */
const s3Requests: { method: string; url: URL; userAgent: string }[] = [];
let mp4: Buffer;

async function expectError(res: Response, status: number, code: string, entries: [unknown[], string][]): Promise<void> {
  const text = await res.text();
  assert.equal(res.status, status, text);
  const body = JSON.parse(text) as { error: { code: string; request_id: string; errors: { loc: unknown[]; code: string }[] | null } };
  assert.equal(body.error.code, code);
  assert.equal(body.error.request_id, res.headers.get('x-request-id'));
  assert.deepEqual(
    (body.error.errors ?? []).map((e) => [e.loc, e.code]),
    entries,
  );
}

function isS3NotFound(err: unknown): boolean {
  return err instanceof S3ServiceException && err.$metadata.httpStatusCode === 404;
}

before(async () => {
  await startS3Service({
    onS3Request: (req: IncomingMessage) => {
      s3Requests.push({ method: req.method ?? '', url: new URL(req.url ?? '/', endpoint), userAgent: req.headers['user-agent'] ?? '' });
    },
  });
  mp4 = await makeMp4({ seconds: 2, width: 320, height: 240 });
  // On a real S3 (5 MiB parts) the MP4 fits one part; the PNG tests cover several there.
  assert.ok(realS3() || mp4.length > 2 * PART, `test MP4 must span several parts (${mp4.length} bytes)`);
});

after(stopS3Service);

describe('S3 backend: uploads through presigned part URLs', () => {
  test('a PNG in parts, PUT in parallel and out of order, is assembled under the prefix and probed', async () => {
    const upload = await startUpload(png.length, 'photo.png', 'image/png');
    assert.equal(upload.part_size_bytes, PART);
    assert.equal(upload.parts.length, Math.ceil(png.length / PART));
    assert.ok(upload.parts.length >= 3);
    // The part URLs are S3's own: the bucket and the prefixed key, one UploadPart per part number.
    for (const [i, p] of upload.parts.entries()) {
      const u = new URL(p.url);
      assert.equal(u.origin, endpoint);
      assert.equal(u.pathname, `/${BUCKET}/${objectKey(upload.file_id)}`);
      assert.equal(u.searchParams.get('partNumber'), String(i + 1));
      assert.equal(u.searchParams.get('uploadId'), upload.upload_id);
      assert.equal(u.searchParams.get('X-Amz-Expires'), String(upload.expires_in_seconds));
    }
    assert.equal(upload.expires_in_seconds, 3600);

    const parts = await uploadAll(upload, png);
    const res = await complete(upload, parts);
    assert.equal(res.status, 200, await res.clone().text());
    assert.deepEqual(await res.json(), { object: 'file', id: upload.file_id, status: 'ready' });

    const [row] = await getTeamFiles(s.database.db.pool, team.teamId, [upload.file_id]);
    assert.equal(row?.status, 'ready');
    assert.equal(row?.detected_mime, 'image/png');
    assert.equal(row?.media_kind, 'image');
    assert.equal(row?.width, PNG_SIZE.width);
    assert.equal(row?.height, PNG_SIZE.height);
    assert.equal(row?.storage_key, `files/${team.teamId}/${upload.file_id}`);

    // The object in s3rver: below the prefix, byte for byte the PNG, with the declared type.
    assert.ok((await readObject(objectKey(upload.file_id))).equals(png));
    const head = await inspector.send(new HeadObjectCommand({ Bucket: BUCKET, Key: objectKey(upload.file_id) }));
    assert.equal(head.ContentLength, png.length);
    assert.equal(head.ContentType, 'image/png');
    const listed = await inspector.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: `${PREFIX}/files/${team.teamId}/` }));
    assert.ok(
      (listed.Contents ?? []).some((o) => o.Key === objectKey(upload.file_id)),
      `not listed under the prefix: ${JSON.stringify(listed.Contents?.map((o) => o.Key))}`,
    );
    // Nothing was written outside the prefix.
    const all = await inspector.send(new ListObjectsV2Command({ Bucket: BUCKET }));
    assert.deepEqual((all.Contents ?? []).filter((o) => !o.Key?.startsWith(`${PREFIX}/files/`)), []);
  });

  test('an MP4 is probed by ffprobe through a presigned GET: size, duration and codecs', async () => {
    const upload = await startUpload(mp4.length, 'clip.mp4', 'video/mp4');
    const parts = await uploadAll(upload, mp4);
    const seen = s3Requests.length;
    const res = await complete(upload, parts);
    assert.equal(res.status, 200, await res.clone().text());
    assert.deepEqual(await res.json(), { object: 'file', id: upload.file_id, status: 'ready' });

    const { rows } = await s.database.db.pool.query<{
      detected_mime: string;
      media_kind: string;
      width: number;
      height: number;
      duration_seconds: number;
      video_codec: string;
      audio_codec: string;
      frame_rate: number;
      has_audio: boolean;
    }>(
      `SELECT detected_mime, media_kind, width, height, duration_seconds, video_codec, audio_codec, frame_rate, has_audio
         FROM files WHERE id = $1::uuid`,
      [upload.file_id],
    );
    const row = rows[0];
    assert.ok(row);
    assert.equal(row.detected_mime, 'video/mp4');
    assert.equal(row.media_kind, 'video');
    assert.equal(row.width, 320);
    assert.equal(row.height, 240);
    assert.ok(Math.abs(row.duration_seconds - 2) < 0.2, `duration ${row.duration_seconds}`);
    assert.equal(row.video_codec, 'h264');
    assert.equal(row.audio_codec, 'aac');
    assert.equal(row.frame_rate, 25);
    assert.equal(row.has_audio, true);
    assert.ok((await readObject(objectKey(upload.file_id))).equals(mp4));

    // ffprobe/ffmpeg (libavformat, "Lavf/…") read the object from s3rver with a presigned GET.
    const probeReads = s3Requests
      .slice(seen)
      .filter((r) => r.method === 'GET' && r.url.pathname === `/${BUCKET}/${objectKey(upload.file_id)}` && r.userAgent.startsWith('Lavf/'));
    assert.ok(probeReads.length > 0, `no ffprobe GET among ${JSON.stringify(s3Requests.slice(seen).map((r) => [r.method, r.userAgent]))}`);
    for (const r of probeReads) assert.ok(r.url.searchParams.get('X-Amz-Signature'), 'the probe read is presigned');
  });

  test('completing twice (at once, then again) returns the same file', async () => {
    const upload = await startUpload(png.length, 'twice.png', 'image/png');
    const parts = await uploadAll(upload, png);
    const [a, b] = await Promise.all([complete(upload, parts), complete(upload, parts)]);
    assert.equal(a.status, 200);
    assert.equal(b.status, 200);
    const expected = { object: 'file', id: upload.file_id, status: 'ready' };
    assert.deepEqual(await a.json(), expected);
    assert.deepEqual(await b.json(), expected);
    const again = await complete(upload, parts);
    assert.equal(again.status, 200);
    assert.deepEqual(await again.json(), expected);
    assert.ok((await readObject(objectKey(upload.file_id))).equals(png));
  });

  test('bytes that are not media are rejected, whatever the declared type', async () => {
    const line = 'hello, this is not an image at all\n';
    const text = Buffer.from(line.repeat(Math.max(1000, Math.ceil((1.5 * PART) / line.length))));
    assert.ok(text.length > PART);
    const upload = await startUpload(text.length, 'fake.png', 'image/png');
    const res = await complete(upload, await uploadAll(upload, text));
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { object: 'file', id: upload.file_id, status: 'rejected', problem: 'unrecognised file type' });
    const [row] = await getTeamFiles(s.database.db.pool, team.teamId, [upload.file_id]);
    assert.equal(row?.status, 'rejected');
    assert.equal(row?.media_kind, 'other');
    assert.equal(row?.detected_mime, null);
  });
});

describe('S3 backend: what upload-url refuses before S3 sees it', () => {
  test('a mime_type that cannot be a Content-Type header (outside printable ASCII): 422, and no request to S3', async () => {
    const seen = s3Requests.length;
    for (const mime of ['image/p\u00f1g', 'image/\u0100', 'image/png\r\nx-amz-acl: public-read', `image/a\u0000`]) {
      const res = await api('POST', '/v1/files/upload-url', team.key, { file_name: 'a.png', mime_type: mime, size_bytes: 100 });
      await expectError(res, 422, 'invalid_request', [[['body', 'mime_type'], mime.includes('\u0000') ? 'invalid_character' : 'invalid_format']]);
    }
    assert.equal(s3Requests.length, seen, JSON.stringify(s3Requests.slice(seen).map((r) => [r.method, r.url.pathname])));
  });
});

describe('S3 backend: completion errors', () => {
  test('fewer bytes than size_bytes: 422 size_mismatch on ["body","parts"]', { skip: SHORT_PUT_TAKEN }, async () => {
    // s3rver cannot list parts, so the shortfall is seen in the assembled object. (On AWS or MinIO
    // the short part's PUT is refused already, as its URL signs the exact Content-Length; and with
    // ListParts, checkParts would name a short part: ["body","parts",i].)
    const short = png.subarray(0, png.length - 10);
    const upload = await startUpload(png.length, 'short.png', 'image/png');
    assert.equal(Math.ceil(short.length / PART), upload.parts.length);
    const parts = await uploadAll(upload, short);
    await expectError(await complete(upload, parts), 422, 'invalid_request', [[['body', 'parts'], 'size_mismatch']]);
    const [row] = await getTeamFiles(s.database.db.pool, team.teamId, [upload.file_id]);
    assert.notEqual(row?.status, 'ready');
  });

  test(
    'after a size_mismatch seen only in the assembled object, a retry is told so and no wrong bytes are kept',
    { skip: SHORT_PUT_TAKEN },
    async () => {
      const short = png.subarray(0, png.length - 10);
      const upload = await startUpload(png.length, 'short-again.png', 'image/png');
      const parts = await uploadAll(upload, short);
      await expectError(await complete(upload, parts), 422, 'invalid_request', [[['body', 'parts'], 'size_mismatch']]);
      await assert.rejects(inspector.send(new HeadObjectCommand({ Bucket: BUCKET, Key: objectKey(upload.file_id) })), isS3NotFound);
      await expectError(await complete(upload, parts), 404, 'file_not_found', []);
    },
  );

  test('missing, duplicate and unknown part numbers: one entry each, and the upload stays usable', async () => {
    // These checks need no ListParts. (A wrong ETag is not among them: s3rver neither lists parts
    // nor compares ETags at completion, so only a full S3 answers etag_mismatch.)
    const upload = await startUpload(png.length, 'parts.png', 'image/png');
    const parts = await uploadAll(upload, png);
    assert.ok(parts.length >= 3);
    const [p1, p2, ...rest] = parts;
    assert.ok(p1 && p2);
    await expectError(
      await complete(upload, [p1, p1, { part_number: parts.length + 1, etag: p1.etag }, ...rest]),
      422,
      'invalid_request',
      [
        [['body', 'parts', 1, 'part_number'], 'duplicate_part'],
        [['body', 'parts', 2, 'part_number'], 'unknown_part'],
        [['body', 'parts'], 'part_missing'],
      ],
    );
    // Nothing was sent to S3 for the bad list: the right list still completes.
    await assert.rejects(inspector.send(new HeadObjectCommand({ Bucket: BUCKET, Key: objectKey(upload.file_id) })), isS3NotFound);
    const ok = await complete(upload, parts);
    assert.equal(ok.status, 200);
    assert.deepEqual(await ok.json(), { object: 'file', id: upload.file_id, status: 'ready' });
  });
});

describe('S3 backend: file expiry', () => {
  test('the janitor deletes expired files from S3 and ends abandoned uploads', async () => {
    const kept = await startUpload(png.length, 'kept.png', 'image/png');
    const keptParts = await uploadAll(kept, png);
    assert.equal((await complete(kept, keptParts)).status, 200);
    const abandoned = await startUpload(png.length, 'abandoned.png', 'image/png');
    await putPart(abandoned, png, 1);
    await inspector.send(new HeadObjectCommand({ Bucket: BUCKET, Key: objectKey(kept.file_id) }));

    const db = s.database.db.pool;
    await db.query(`UPDATE files SET expires_at = now() - interval '1 second' WHERE id = $1::uuid`, [kept.file_id]);
    await db.query(`UPDATE files SET upload_expires_at = now() - interval '1 second' WHERE id = $1::uuid`, [abandoned.file_id]);
    const expired = await expireFiles(s.database.db, s.storage, s.logger);
    assert.equal(expired, 2);

    const rows = await getTeamFiles(db, team.teamId, [kept.file_id, abandoned.file_id]);
    assert.deepEqual(
      rows.map((r) => [r.id, r.status]).sort(),
      [
        [kept.file_id, 'expired'],
        [abandoned.file_id, 'expired'],
      ].sort(),
    );
    await assert.rejects(inspector.send(new HeadObjectCommand({ Bucket: BUCKET, Key: objectKey(kept.file_id) })), isS3NotFound);
    assert.equal(await s.storage.size(`files/${team.teamId}/${kept.file_id}`), null);
    // The abandoned upload was aborted as far as s3rver allows (it answers AbortMultipartUpload with
    // 405, which abortUpload tolerates; AWS would discard the parts). Either way, it is over:
    await expectError(await complete(abandoned, [{ part_number: 1, etag: md5Etag(png.subarray(0, PART)) }]), 404, 'file_not_found', []);
    await expectError(await complete(kept, keptParts), 404, 'file_not_found', []);
    // A second run finds nothing more to do.
    assert.equal(await expireFiles(s.database.db, s.storage, s.logger), 0);
  });
});
