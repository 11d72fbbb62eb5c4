// The file upload flow on the S3 backend, against a real S3-compatible server (s3rver) started
// here, over real sockets: presigned UploadPart PUTs, CompleteMultipartUpload, probing through a
// presigned GET, presigned downloads and the janitor's deletes.
//
// What s3rver 3.7.1 can and cannot show (read from its source, and seen here):
// - It does NOT verify SigV4 signatures ("Signature version 4 calculation is unimplemented" in its
//   authentication middleware): a URL with a tampered X-Amz-Signature, or no signature at all, is
//   accepted. It does check the access key id and the expiry (X-Amz-Date + X-Amz-Expires). So the
//   tests below check the signature of our part URLs themselves (an independent SigV4 verifier),
//   and let s3rver refuse what it can: an unknown access key and an expired URL. For the same
//   reason it takes a part body larger than the Content-Length each part URL signs (AWS and MinIO
//   answer 403 SignatureDoesNotMatch): the verifier shows that such a request does not verify.
// - ListParts answers 405 MethodNotAllowed, so S3Storage.listParts returns null ("cannot list") and
//   completion checks only what it can without it: the part numbers before completing, the
//   assembled size after. A full S3 (AWS, MinIO) lists parts, so checkParts also names a wrong
//   ETag (etag_mismatch), a part never uploaded (part_not_uploaded) and the part of the wrong size
//   (size_mismatch on ["body","parts",i]) before anything is assembled.
// - It does not compare ETags at CompleteMultipartUpload (AWS answers InvalidPart), and does not
//   implement AbortMultipartUpload (405, which S3Storage.abortUpload tolerates): parts of an
//   abandoned upload stay on its disk, where AWS would discard them.
// - It does not enforce S3's 5 MiB minimum for all parts but the last, which lets the test use
//   16 KiB parts (TOOLRUN_PART_SIZE_BYTES); AWS would refuse those with EntityTooSmall.
import assert from 'node:assert/strict';
import { createHash, createHmac } from 'node:crypto';
import fs from 'node:fs';
import type { IncomingMessage } from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import {
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  S3Client,
  S3ServiceException,
} from '@aws-sdk/client-s3';
import S3rver from 's3rver';
import { expireFiles } from '../src/files/janitor.js';
import { getTeamFiles } from '../src/files/repository.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { md5Etag, putPart, uploadAll, type PartRef, type Upload } from './helpers/uploads.js';
import { callApi, makeTeam, type TeamFixture } from './helpers/fixtures.js';
import { makeMp4, makePng } from './helpers/media.js';

const PART = 16 * 1024;
const BUCKET = 'toolrun-test';
const PREFIX = 'some/prefix';
const ACCESS_KEY = 'S3RVER';
const SECRET_KEY = 'S3RVER';
const REGION = 'us-east-1';

let s3: S3rver;
let s3Dir: string;
let endpoint: string;
/** A client of our own, to look into the bucket independently of the code under test. */
let inspector: S3Client;
/** Every request s3rver received, in order. */
const s3Requests: { method: string; url: URL; userAgent: string }[] = [];
const savedEnv: Record<string, string | undefined> = {};
let s: TestServer;
let team: TeamFixture;
let png: Buffer;
let mp4: Buffer;

function api(method: string, url: string, key: string, body?: unknown): Promise<Response> {
  return callApi(s.url, key, method, url, body);
}

async function startUpload(size: number, name: string, mime: string): Promise<Upload> {
  const res = await api('POST', '/v1/files/upload-url', team.key, { file_name: name, mime_type: mime, size_bytes: size });
  assert.equal(res.status, 201, await res.clone().text());
  return (await res.json()) as Upload;
}


async function complete(upload: Upload, parts: PartRef[]): Promise<Response> {
  return api('POST', `/v1/files/${upload.file_id}/complete`, team.key, { upload_id: upload.upload_id, parts });
}

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

/** The <Code> of an S3 XML error body. */
async function s3ErrorCode(res: Response): Promise<string | null> {
  return /<Code>([^<]*)<\/Code>/.exec(await res.text())?.[1] ?? null;
}

function objectKey(fileId: string): string {
  return `${PREFIX}/files/${team.teamId}/${fileId}`;
}

async function readObject(key: string): Promise<Buffer> {
  const out = await inspector.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
  assert.ok(out.Body, `no body for ${key}`);
  return Buffer.from(await out.Body.transformToByteArray());
}

function isS3NotFound(err: unknown): boolean {
  return err instanceof S3ServiceException && err.$metadata.httpStatusCode === 404;
}

/** Polls `attempt` until it returns a value, or fails after the deadline. */
async function pollUntil<T>(what: string, timeoutMs: number, attempt: () => Promise<T | null>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await attempt();
    if (value !== null) return value;
    if (Date.now() > deadline) assert.fail(`${what}: not within ${timeoutMs} ms`);
    await delay(100);
  }
}

function rfc3986(s: string): string {
  return encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/**
 * An independent SigV4 check of a presigned S3 URL (query-string auth, unsigned payload) for a
 * request with these headers besides `host`: what AWS and MinIO verify and s3rver does not.
 */
function presignedSignatureValid(method: string, url: URL, secret: string, headers: Record<string, string> = {}): boolean {
  const q = url.searchParams;
  const signed = { ...headers, host: url.host };
  const names = (q.get('X-Amz-SignedHeaders') ?? '').split(';');
  if (names.some((n) => !(n in signed))) return false;
  const canonicalHeaders = names.map((n) => `${n}:${signed[n as keyof typeof signed]}\n`).join('');
  const credential = q.get('X-Amz-Credential') ?? '';
  const [, date, region, service, terminator] = credential.split('/');
  if (!date || !region || !service || terminator !== 'aws4_request') return false;
  const query = [...q]
    .filter(([k]) => k !== 'X-Amz-Signature')
    .map(([k, v]) => `${rfc3986(k)}=${rfc3986(v)}`)
    .sort()
    .join('&');
  const canonical = [method, url.pathname, query, canonicalHeaders, names.join(';'), 'UNSIGNED-PAYLOAD'].join('\n');
  const stringToSign = [
    'AWS4-HMAC-SHA256',
    q.get('X-Amz-Date') ?? '',
    [date, region, service, terminator].join('/'),
    createHash('sha256').update(canonical).digest('hex'),
  ].join('\n');
  let key: Buffer = Buffer.from(`AWS4${secret}`);
  for (const part of [date, region, service, terminator]) key = createHmac('sha256', key).update(part).digest();
  return createHmac('sha256', key).update(stringToSign).digest('hex') === q.get('X-Amz-Signature');
}

before(async () => {
  for (const name of ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_REGION']) savedEnv[name] = process.env[name];
  // The service's S3Client takes its credentials from the SDK's default chain, i.e. these.
  process.env.AWS_ACCESS_KEY_ID = ACCESS_KEY;
  process.env.AWS_SECRET_ACCESS_KEY = SECRET_KEY;
  process.env.AWS_REGION = REGION;

  s3Dir = fs.mkdtempSync(path.join(os.tmpdir(), 'toolrun-s3rver-'));
  s3 = new S3rver({ port: 0, address: '127.0.0.1', silent: true, directory: s3Dir, configureBuckets: [{ name: BUCKET }] });
  const address = await s3.run();
  endpoint = `http://127.0.0.1:${address.port}`;
  assert.ok(s3.httpServer, 's3rver has no HTTP server after run()');
  s3.httpServer.on('request', (req: IncomingMessage) => {
    s3Requests.push({ method: req.method ?? '', url: new URL(req.url ?? '/', endpoint), userAgent: req.headers['user-agent'] ?? '' });
  });
  inspector = new S3Client({
    region: REGION,
    endpoint,
    forcePathStyle: true,
    credentials: { accessKeyId: ACCESS_KEY, secretAccessKey: SECRET_KEY },
  });

  s = await startTestServer({
    env: {
      TOOLRUN_STORAGE: `s3://${BUCKET}/${PREFIX}`,
      TOOLRUN_S3_ENDPOINT: endpoint,
      TOOLRUN_PART_SIZE_BYTES: String(PART),
      TOOLRUN_S3_ALLOW_SMALL_PARTS: '1',
      AWS_REGION: REGION,
    },
  });
  assert.equal(s.storage.kind, 's3');
  team = await makeTeam(s.database.db);
  png = await makePng(320, 240);
  mp4 = await makeMp4({ seconds: 2, width: 320, height: 240 });
  assert.ok(png.length > 2 * PART, `test PNG must span several parts (${png.length} bytes)`);
  assert.ok(mp4.length > 2 * PART, `test MP4 must span several parts (${mp4.length} bytes)`);
});

after(async () => {
  if (s) {
    await s.close();
    fs.rmSync(s.config.dataDir, { recursive: true, force: true });
  }
  inspector?.destroy();
  if (s3?.httpServer?.listening) await s3.close();
  if (s3Dir) fs.rmSync(s3Dir, { recursive: true, force: true });
  for (const [name, value] of Object.entries(savedEnv)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
});

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
    assert.equal(row?.width, 320);
    assert.equal(row?.height, 240);
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
    const text = Buffer.from('hello, this is not an image at all\n'.repeat(1000));
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
  test('fewer bytes than size_bytes: 422 size_mismatch on ["body","parts"]', async () => {
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

describe('S3 backend: presigned URLs', () => {
  test('part URLs are plain SigV4 presigned UploadParts that a tampered copy would not pass', async () => {
    const upload = await startUpload(png.length, 'signed.png', 'image/png');
    for (const [i, p] of upload.parts.entries()) {
      const u = new URL(p.url);
      // The host and the part's Content-Length are signed and the payload is unsigned, so a plain
      // PUT of the part's bytes fits; and no SDK checksum of the (empty, at signing time) body is
      // baked in: servers that honour x-amz-checksum-crc32=AAAAAA== (R2, SeaweedFS, reportedly AWS)
      // would refuse every real part. s3rver ignores it, so this is checked on the URL itself.
      assert.equal(u.searchParams.get('X-Amz-Algorithm'), 'AWS4-HMAC-SHA256');
      assert.equal(u.searchParams.get('X-Amz-SignedHeaders'), 'content-length;host');
      assert.equal(u.searchParams.get('X-Amz-Content-Sha256'), 'UNSIGNED-PAYLOAD');
      assert.match(u.searchParams.get('X-Amz-Credential') ?? '', new RegExp(`^${ACCESS_KEY}/\\d{8}/${REGION}/s3/aws4_request$`));
      assert.deepEqual(
        [...u.searchParams.keys()].filter((k) => /checksum/i.test(k)),
        [],
        `checksum parameters in ${p.url}`,
      );
      const size = Math.min(PART, png.length - i * PART);
      assert.equal(presignedSignatureValid('PUT', u, SECRET_KEY, { 'content-length': String(size) }), true, `bad signature: ${p.url}`);
    }
    const url = new URL(upload.parts[0]?.url ?? '');
    const tampered = (change: (u: URL) => void): URL => {
      const u = new URL(url);
      change(u);
      return u;
    };
    const sig = url.searchParams.get('X-Amz-Signature') ?? '';
    const variants = {
      signature: tampered((u) => u.searchParams.set('X-Amz-Signature', (sig[0] === 'a' ? 'b' : 'a') + sig.slice(1))),
      'another part': tampered((u) => u.searchParams.set('partNumber', '2')),
      'another upload': tampered((u) => u.searchParams.set('uploadId', `${upload.upload_id}x`)),
      'a longer life': tampered((u) => u.searchParams.set('X-Amz-Expires', '604800')),
      'another key': tampered((u) => (u.pathname = u.pathname.replace(upload.file_id, '00000000-0000-4000-8000-000000000000'))),
    };
    const length = { 'content-length': String(PART) };
    for (const [what, u] of Object.entries(variants)) {
      assert.equal(presignedSignatureValid('PUT', u, SECRET_KEY, length), false, `${what}: still verifies`);
    }
    // The same URL for another method (a GET of the object) does not verify either.
    assert.equal(presignedSignatureValid('GET', url, SECRET_KEY, length), false);

    // What s3rver itself refuses: a credential it does not know...
    const unknownKey = tampered((u) =>
      u.searchParams.set('X-Amz-Credential', (u.searchParams.get('X-Amz-Credential') ?? '').replace(ACCESS_KEY, 'NOT-A-KEY')),
    );
    const res = await fetch(unknownKey, { method: 'PUT', body: 'x' });
    assert.equal(res.status, 403);
    assert.equal(await s3ErrorCode(res), 'InvalidAccessKeyId');
    // ...and the genuine URL still works.
    await putPart(upload, png, 1);
  });

  test('each part URL signs its exact Content-Length (the last: the remainder), so S3 refuses any other body', async () => {
    const upload = await startUpload(png.length, 'exact.png', 'image/png');
    const n = upload.parts.length;
    const last = png.length - (n - 1) * PART;
    assert.ok(last > 0 && last < PART, `the test PNG must end in a short part (${png.length} bytes)`);
    for (const [i, p] of upload.parts.entries()) {
      const u = new URL(p.url);
      const exact = i + 1 < n ? PART : last;
      const verifies = (length?: number) =>
        presignedSignatureValid('PUT', u, SECRET_KEY, length === undefined ? {} : { 'content-length': String(length) });
      assert.equal(u.searchParams.get('X-Amz-SignedHeaders'), 'content-length;host');
      assert.equal(verifies(exact), true, `part ${i + 1} is not signed for ${exact} bytes`);
      // What AWS and MinIO answer 403 SignatureDoesNotMatch before storing a byte (s3rver checks no
      // SigV4 signature, so it would take these: see the top of this file).
      assert.equal(verifies(exact + 1), false, `part ${i + 1} verifies with one byte more`);
      assert.equal(verifies(exact - 1), false, `part ${i + 1} verifies with one byte less`);
      assert.equal(verifies(), false, `part ${i + 1} verifies without a Content-Length`);
    }
    // Plain PUTs of each part's bytes (fetch sends their Content-Length) are taken and complete.
    const res = await complete(upload, await uploadAll(upload, png));
    assert.equal(res.status, 200, await res.clone().text());
    assert.deepEqual(await res.json(), { object: 'file', id: upload.file_id, status: 'ready' });
    assert.ok((await readObject(objectKey(upload.file_id))).equals(png));
  });

  test('an expired part URL is refused by s3rver', async () => {
    const upload = await startUpload(png.length, 'late.png', 'image/png');
    // The service signs part URLs for at least 60 s; the storage signs one for 1 s here.
    const url = await s.storage.partUrl(`files/${team.teamId}/${upload.file_id}`, upload.upload_id, { partNumber: 1, sizeBytes: PART }, 1);
    assert.equal(new URL(url).searchParams.get('X-Amz-Expires'), '1');
    const refused = await pollUntil('the 1 s part URL expires', 10_000, async () => {
      const res = await fetch(url, { method: 'PUT', body: Uint8Array.from(png.subarray(0, PART)) });
      if (res.status === 200) return null;
      return { status: res.status, code: await s3ErrorCode(res) };
    });
    assert.deepEqual(refused, { status: 403, code: 'AccessDenied' });
    // The URL the service handed out (an hour) still takes the part.
    await putPart(upload, png, 1);
  });

  test('a presigned download URL gives the bytes under the file name, then expires', async () => {
    const upload = await startUpload(png.length, 'download.png', 'image/png');
    assert.equal((await complete(upload, await uploadAll(upload, png))).status, 200);
    const key = `files/${team.teamId}/${upload.file_id}`;

    const url = await s.storage.downloadUrl(key, { expiresInSeconds: 60, fileName: 'photo été "1".png', contentType: 'image/png' });
    assert.equal(new URL(url).pathname, `/${BUCKET}/${objectKey(upload.file_id)}`);
    const res = await fetch(url);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'image/png');
    assert.equal(
      res.headers.get('content-disposition'),
      `attachment; filename="photo _t_ _1_.png"; filename*=UTF-8''photo%20%C3%A9t%C3%A9%20_1_.png`,
    );
    assert.ok(Buffer.from(await res.arrayBuffer()).equals(png));

    const shortLived = await s.storage.downloadUrl(key, { expiresInSeconds: 1, fileName: 'download.png', contentType: 'image/png' });
    assert.equal(new URL(shortLived).searchParams.get('X-Amz-Expires'), '1');
    const refused = await pollUntil('the 1 s download URL expires', 10_000, async () => {
      const r = await fetch(shortLived);
      if (r.status === 200) {
        assert.ok(Buffer.from(await r.arrayBuffer()).equals(png));
        return null;
      }
      return { status: r.status, code: await s3ErrorCode(r) };
    });
    assert.deepEqual(refused, { status: 403, code: 'AccessDenied' });
    // It is the expiry that refuses it: the longer-lived URL still works.
    const still = await fetch(url);
    assert.equal(still.status, 200);
    assert.ok(Buffer.from(await still.arrayBuffer()).equals(png));
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
