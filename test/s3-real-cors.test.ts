// The bucket CORS rule docs/operator-guide.md gives, on the real S3 named by TEST_S3_ENDPOINT
// (Ceph's RADOS Gateway in `.ci/run`; skipped without one): with it, a browser page on the
// console's origin (under the console's Content-Security-Policy) PUTs a part straight to its
// presigned URL and reads the part's ETag, as the playground does; without it, the browser
// refuses. Real Chromium (Debian's, through playwright-core).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { DeleteBucketCorsCommand, PutBucketCorsCommand, type CORSRule } from '@aws-sdk/client-s3';
import type { Browser, Page } from 'playwright-core';
import { launchBrowser } from './helpers/browser.js';
import { BUCKET, complete, inspector, s, startS3Service, startUpload, stopS3Service } from './helpers/files-s3.js';
import { makePng } from './helpers/media.js';
import { ROOT } from './helpers/process.js';
import { NO_REAL_S3 } from './helpers/s3-target.js';
import { md5Etag } from './helpers/uploads.js';

/** The rule as the operator guide prints it, for its example origin. */
function guideRule(): { origin: string; rules: CORSRule[] } {
  const guide = fs.readFileSync(path.join(ROOT, 'docs', 'operator-guide.md'), 'utf8');
  const json = /`(\[\{"AllowedOrigins":.*?\}\])`/.exec(guide)?.[1];
  assert.ok(json, 'no CORS rule in docs/operator-guide.md');
  const rules = JSON.parse(json) as CORSRule[];
  const origin = rules[0]?.AllowedOrigins?.[0];
  assert.ok(origin);
  return { origin, rules };
}

/** A PUT from the page (its origin, its CSP): the status and the ETag the page can read, or the error. */
function putFromPage(page: Page, url: string, bytes: Buffer): Promise<{ status: number; etag: string | null } | { error: string }> {
  return page.evaluate(
    async ([u, b64]) => {
      try {
        const body = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
        const res = await fetch(u, { method: 'PUT', body });
        return { status: res.status, etag: res.headers.get('etag') };
      } catch (err) {
        return { error: String(err) };
      }
    },
    [url, bytes.toString('base64')] as const,
  );
}

describe('real S3: the operator guide\'s CORS rule, from a browser on the console\'s origin', { skip: NO_REAL_S3 }, () => {
  let browser: Browser;
  let page: Page;

  before(async () => {
    await startS3Service();
    browser = await launchBrowser();
    page = await (await browser.newContext()).newPage();
    // The console's page: its origin, and its Content-Security-Policy naming the bucket's origin.
    const res = await page.goto(`${s.url}/console/`);
    assert.equal(res?.status(), 200);
  }, { timeout: 120_000 });

  after(async () => {
    await browser?.close();
    await stopS3Service();
  });

  test('without the rule the browser refuses; with it a part is PUT, its ETag read, and the upload completes', async () => {
    const png = await makePng(320, 240);
    const upload = await startUpload(png.length, 'browser.png', 'image/png');
    assert.equal(upload.parts.length, 1);
    const url = upload.parts[0]?.url ?? '';

    await inspector.send(new DeleteBucketCorsCommand({ Bucket: BUCKET }));
    const refused = await putFromPage(page, url, png);
    assert.ok('error' in refused, `a PUT without a CORS rule was let through: ${JSON.stringify(refused)}`);

    const { origin, rules } = guideRule();
    const consoleOrigin = new URL(s.url).origin;
    const ours = rules.map((r) => ({ ...r, AllowedOrigins: (r.AllowedOrigins ?? []).map((o) => (o === origin ? consoleOrigin : o)) }));
    await inspector.send(new PutBucketCorsCommand({ Bucket: BUCKET, CORSConfiguration: { CORSRules: ours } }));
    const put = await putFromPage(page, url, png);
    assert.deepEqual(put, { status: 200, etag: md5Etag(png) });

    const res = await complete(upload, [{ part_number: 1, etag: md5Etag(png) }]);
    assert.equal(res.status, 200, await res.clone().text());
    assert.deepEqual(await res.json(), { object: 'file', id: upload.file_id, status: 'ready' });
  });
});
