// The presigned URLs of the S3 backend, against s3rver or the real S3 named by TEST_S3_ENDPOINT
// (test/helpers/s3-target.ts) over real sockets (test/helpers/files-s3.ts): part URLs are plain SigV4 presigned UploadParts, each signing
// its exact Content-Length, that a tampered copy would not pass; an expired part URL and an expired
// download URL are refused; a download URL gives the bytes under the file name. (The upload flow
// itself is in files-s3-uploads.test.ts.)
//
// s3rver 3.7.1 does NOT verify SigV4 signatures ("Signature version 4 calculation is
// unimplemented" in its authentication middleware): a URL with a tampered X-Amz-Signature, or no
// signature at all, is accepted. It does check the access key id and the expiry (X-Amz-Date +
// X-Amz-Expires). So the tests below check the signature of our part URLs themselves (an
// independent SigV4 verifier), and let s3rver refuse what it can: an unknown access key and an
// expired URL. For the same reason it takes a part body larger than the Content-Length each part
// URL signs (AWS and MinIO answer 403 SignatureDoesNotMatch): the verifier shows that such a
// request does not verify.
import assert from 'node:assert/strict';
import { createHash, createHmac } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import {
  ACCESS_KEY,
  BUCKET,
  complete,
  objectKey,
  PART,
  png,
  readObject,
  REGION,
  s,
  SECRET_KEY,
  startS3Service,
  startUpload,
  stopS3Service,
  team,
} from './helpers/files-s3.js';
import { putPart, uploadAll } from './helpers/uploads.js';

/** The <Code> of an S3 XML error body. */
async function s3ErrorCode(res: Response): Promise<string | null> {
  return /<Code>([^<]*)<\/Code>/.exec(await res.text())?.[1] ?? null;
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

before(() => startS3Service());
after(stopS3Service);

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

  test('an expired part URL is refused by the S3', async () => {
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
