// What only a real S3 can answer about parts, on the S3 named by TEST_S3_ENDPOINT (Ceph's RADOS
// Gateway in `.ci/run`; skipped without one): it verifies the signed Content-Length of each part
// URL, lists parts, compares ETags, discards the parts of an aborted upload, and enforces its
// 5 MiB minimum part size (the parts here are that size). s3rver does none of these (see the top
// of files-s3-uploads.test.ts).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  AbortMultipartUploadCommand,
  ListMultipartUploadsCommand,
  ListPartsCommand,
  S3ServiceException,
} from '@aws-sdk/client-s3';
import { expireFiles } from '../src/files/janitor.js';
import { getTeamFiles } from '../src/files/repository.js';
import { BUCKET, complete, inspector, objectKey, PART, png, readObject, s, startS3Service, startUpload, stopS3Service, team } from './helpers/files-s3.js';
import { NO_REAL_S3 } from './helpers/s3-target.js';
import { putPart, uploadAll, type Upload } from './helpers/uploads.js';

const MIB = 1024 * 1024;

interface Envelope {
  error: { code: string; message: string; request_id: string; errors: { loc: unknown[]; code: string }[] | null };
}

async function expectError(res: Response, status: number, code: string, entries: [unknown[], string][]): Promise<Envelope> {
  const text = await res.text();
  assert.equal(res.status, status, text);
  const body = JSON.parse(text) as Envelope;
  assert.equal(body.error.code, code);
  assert.equal(body.error.request_id, res.headers.get('x-request-id'));
  assert.deepEqual((body.error.errors ?? []).map((e) => [e.loc, e.code]), entries);
  return body;
}

/** The <Code> of an S3 XML error body. */
async function s3ErrorCode(res: Response): Promise<string | null> {
  return /<Code>([^<]*)<\/Code>/.exec(await res.text())?.[1] ?? null;
}

/** Part numbers S3 holds for an upload, or the S3 error name when it knows no such upload. */
async function storedParts(upload: Upload): Promise<number[] | string> {
  try {
    const out = await inspector.send(new ListPartsCommand({ Bucket: BUCKET, Key: objectKey(upload.file_id), UploadId: upload.upload_id }));
    return (out.Parts ?? []).map((p) => p.PartNumber ?? 0);
  } catch (err) {
    if (err instanceof S3ServiceException && err.$metadata.httpStatusCode === 404) return err.name;
    throw err;
  }
}

describe('real S3: parts', { skip: NO_REAL_S3 }, () => {
  before(() => startS3Service(), { timeout: 120_000 });
  after(stopS3Service);

  test('the parts are the real 5 MiB minimum', () => {
    assert.ok(PART >= 5 * MIB, `PART is ${PART}`);
    assert.ok(png.length > 2 * PART);
  });

  test('the signed Content-Length refuses a part one byte short or long, before storing a byte', async () => {
    const upload = await startUpload(png.length, 'exact.png', 'image/png');
    assert.equal(upload.part_size_bytes, PART);
    const url = upload.parts[0]?.url ?? '';
    for (const body of [png.subarray(0, PART - 1), png.subarray(0, PART + 1)]) {
      const res = await fetch(url, { method: 'PUT', body: Uint8Array.from(body) });
      assert.equal(res.status, 403, `a ${body.length}-byte body for a ${PART}-byte part`);
      assert.equal(await s3ErrorCode(res), 'SignatureDoesNotMatch');
    }
    assert.deepEqual(await storedParts(upload), [], 'nothing stored for the refused PUTs');
    // The exact parts, 5 MiB each but the last, are taken and assemble the PNG.
    const res = await complete(upload, await uploadAll(upload, png));
    assert.equal(res.status, 200, await res.clone().text());
    assert.deepEqual(await res.json(), { object: 'file', id: upload.file_id, status: 'ready' });
    assert.ok((await readObject(objectKey(upload.file_id))).equals(png));
  });

  test('a wrong ETag at completion is etag_mismatch on that part, and the right one completes', async () => {
    const upload = await startUpload(png.length, 'etag.png', 'image/png');
    const parts = await uploadAll(upload, png);
    const wrong = parts.map((p, i) => (i === 1 ? { ...p, etag: '"0123456789abcdef0123456789abcdef"' } : p));
    await expectError(await complete(upload, wrong), 422, 'invalid_request', [[['body', 'parts', 1, 'etag'], 'etag_mismatch']]);
    const ok = await complete(upload, parts);
    assert.equal(ok.status, 200, await ok.clone().text());
  });

  test('a part never PUT is part_not_uploaded, seen through ListParts before anything is assembled', async () => {
    const upload = await startUpload(png.length, 'missing.png', 'image/png');
    const first = await putPart(upload, png, 1);
    const parts = upload.parts.map((p) => ({ part_number: p.part_number, etag: first }));
    const errs = parts.slice(1).map((_, i): [unknown[], string] => [['body', 'parts', i + 1, 'etag'], 'part_not_uploaded']);
    await expectError(await complete(upload, parts), 422, 'invalid_request', errs);
  });

  test('an upload the janitor aborts leaves no parts in S3', async () => {
    const upload = await startUpload(png.length, 'abandoned.png', 'image/png');
    await putPart(upload, png, 1);
    await putPart(upload, png, 2);
    assert.deepEqual(await storedParts(upload), [1, 2]);
    await s.database.db.pool.query(`UPDATE files SET upload_expires_at = now() - interval '1 second' WHERE id = $1::uuid`, [upload.file_id]);
    assert.equal(await expireFiles(s.database.db, s.storage, s.logger), 1);
    assert.match(String(await storedParts(upload)), /^NoSuch(Upload|Key)$/, 'S3 no longer knows the upload');
    const open = await inspector.send(new ListMultipartUploadsCommand({ Bucket: BUCKET, Prefix: objectKey(upload.file_id) }));
    assert.deepEqual(open.Uploads ?? [], []);
  });

  test('an upload aborted underneath the service (lifecycle rule, operator): 404 upload_not_found, start a new upload', async () => {
    const upload = await startUpload(png.length, 'lifecycle.png', 'image/png');
    const parts = await uploadAll(upload, png);
    // What a bucket lifecycle rule (AbortIncompleteMultipartUpload) or an operator does.
    await inspector.send(new AbortMultipartUploadCommand({ Bucket: BUCKET, Key: objectKey(upload.file_id), UploadId: upload.upload_id }));
    const body = await expectError(await complete(upload, parts), 404, 'upload_not_found', []);
    assert.match(body.error.message, /start a new upload/i);
    const [row] = await getTeamFiles(s.database.db.pool, team.teamId, [upload.file_id]);
    assert.equal(row?.status, 'expired', 'the file is over: the janitor has nothing left to do for it');
    // Completing again is told the same thing in the file's terms; a new upload works.
    await expectError(await complete(upload, parts), 404, 'file_not_found', []);
    const again = await startUpload(png.length, 'lifecycle.png', 'image/png');
    const res = await complete(again, await uploadAll(again, png));
    assert.equal(res.status, 200, await res.clone().text());
  });

  test('S3 errors with an empty <Message> carry their code (radosgw sends none; the SDK would say "UnknownError")', async () => {
    const err = await s.storage.readHead(`files/${team.teamId}/00000000-0000-4000-8000-000000000000`, 16).then(
      () => assert.fail('read a missing object'),
      (e: unknown) => e as Error,
    );
    assert.doesNotMatch(err.message, /UnknownError/);
    assert.match(err.message, /NoSuchKey/);
    assert.match(err.message, /404/);
  });
});
