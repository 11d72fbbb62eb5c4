// Parts under a real S3's minimum, on the S3 named by TEST_S3_ENDPOINT (Ceph's RADOS Gateway in
// `.ci/run`; skipped without one), with the test-only TOOLRUN_S3_ALLOW_SMALL_PARTS=1 and 1 KiB
// parts: ListParts pages past 1,000 parts, and completion of parts the store refuses as too small
// is a 4xx that says so, not a 500 that invites retries that can never succeed. And where the
// minimum is known (AWS itself), the setting is refused at start-up.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ConfigError, loadConfig } from '../src/config/config.js';
import { getTeamFiles } from '../src/files/repository.js';
import { complete, s, startS3Service, startUpload, stopS3Service, team } from './helpers/files-s3.js';
import { NO_REAL_S3 } from './helpers/s3-target.js';
import { md5Etag, putPart, type PartRef, type Upload } from './helpers/uploads.js';

const SMALL = 1024;

/** PUTs every part, `width` at a time (a thousand at once would only queue in the gateway). */
async function putAll(upload: Upload, bytes: Buffer, width = 16): Promise<PartRef[]> {
  const out: PartRef[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      for (let n = ++next; n <= upload.parts.length; n = ++next) out.push({ part_number: n, etag: await putPart(upload, bytes, n) });
    }),
  );
  return out.sort((a, b) => a.part_number - b.part_number);
}

describe('start-up: small parts where the store minimum is known', () => {
  test('TOOLRUN_S3_ALLOW_SMALL_PARTS is refused on AWS itself (no endpoint), whose minimum is 5 MiB', () => {
    const env = { TOOLRUN_STORAGE: 's3://bucket', TOOLRUN_PART_SIZE_BYTES: String(SMALL), TOOLRUN_S3_ALLOW_SMALL_PARTS: '1' };
    assert.throws(
      () => loadConfig(env),
      (err: unknown) => err instanceof ConfigError && /TOOLRUN_S3_ALLOW_SMALL_PARTS/.test(err.message) && /5242880|5 MiB/.test(err.message),
    );
    // Any other endpoint's minimum is not known here: the test-only setting stays possible there.
    assert.equal(loadConfig({ ...env, TOOLRUN_S3_ENDPOINT: 'http://127.0.0.1:9000' }).files.partSizeBytes, SMALL);
  });
});

describe('real S3: parts under its minimum (test-only TOOLRUN_S3_ALLOW_SMALL_PARTS=1)', { skip: NO_REAL_S3 }, () => {
  before(() => startS3Service({ env: { TOOLRUN_PART_SIZE_BYTES: String(SMALL), TOOLRUN_S3_ALLOW_SMALL_PARTS: '1' } }), { timeout: 120_000 });
  after(stopS3Service);

  test('ListParts is paged past 1,000 parts: a wrong ETag on part 1,002 is named', async () => {
    const bytes = Buffer.alloc(1001 * SMALL + 10, 7);
    const upload = await startUpload(bytes.length, 'many.bin', 'application/octet-stream');
    assert.equal(upload.part_size_bytes, SMALL);
    assert.equal(upload.parts.length, 1002);
    const parts = await putAll(upload, bytes);
    const wrong = parts.map((p) => (p.part_number === 1002 ? { ...p, etag: md5Etag(Buffer.from('other')) } : p));
    const res = await complete(upload, wrong);
    const text = await res.text();
    assert.equal(res.status, 422, text);
    const body = JSON.parse(text) as { error: { code: string; errors: { loc: unknown[]; code: string }[] } };
    // Only part 1,002 is wrong: the parts past the first page (1,001 and 1,002) were listed.
    assert.deepEqual(body.error.errors.map((e) => [e.loc, e.code]), [[['body', 'parts', 1001, 'etag'], 'etag_mismatch']]);
  });

  test('parts the store refuses as too small: 409 part_too_small, saying so, and the file is over', async () => {
    const bytes = Buffer.alloc(2 * SMALL + 10, 3);
    const upload = await startUpload(bytes.length, 'small.bin', 'application/octet-stream');
    const parts = await putAll(upload, bytes);
    const res = await complete(upload, parts);
    const text = await res.text();
    assert.equal(res.status, 409, text);
    const body = JSON.parse(text) as { error: { code: string; message: string; request_id: string; details: Record<string, unknown> | null } };
    assert.equal(body.error.code, 'part_too_small');
    assert.equal(body.error.request_id, res.headers.get('x-request-id'));
    assert.match(body.error.message, /TOOLRUN_PART_SIZE_BYTES/);
    assert.deepEqual(body.error.details, { part_size_bytes: SMALL });
    const [row] = await getTeamFiles(s.database.db.pool, team.teamId, [upload.file_id]);
    assert.equal(row?.status, 'expired');
    // A retry is not invited: the file is gone, with a 4xx.
    const again = await complete(upload, parts);
    assert.equal(again.status, 404, await again.clone().text());
  });
});
