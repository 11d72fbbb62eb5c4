// The console's pages and assets as the service serves them (src/console/pages.ts): every
// /console path answers the one index.html (the browser routes), the bundle it loads comes from
// the service with the right type, caching and compression, every answer carries a strict content
// security policy, and the first page's JavaScript stays under 150 KB compressed.
import assert from 'node:assert/strict';
import http from 'node:http';
import { describe, test } from 'node:test';
import { gunzipSync } from 'node:zlib';
import { consoleSuite } from './helpers/console-suite.js';
import { consoleCsp, storageOrigin } from '../src/console/pages.js';

const { url } = consoleSuite();

interface Fetched {
  status: number;
  headers: Headers;
  body: Buffer;
}

/** The bytes as sent, over node:http (fetch would undo the gzip itself). */
function get(path: string, opts: { gzip?: boolean } = {}): Promise<Fetched> {
  return new Promise((resolve, reject) => {
    const req = http.get(`${url()}${path}`, { headers: { 'accept-encoding': opts.gzip ? 'gzip' : 'identity' } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => {
        const headers = new Headers();
        for (const [name, value] of Object.entries(res.headers)) if (typeof value === 'string') headers.set(name, value);
        resolve({ status: res.statusCode ?? 0, headers, body: Buffer.concat(chunks) });
      });
    });
    req.on('error', reject);
  });
}

function assetRefs(html: string): string[] {
  return [...html.matchAll(/<(?:script|link)\b[^>]*?\s(?:src|href)="([^"]+)"/g)].map((m) => m[1] ?? '');
}

function assertSecurityHeaders(res: Fetched, what: string): void {
  const csp = res.headers.get('content-security-policy') ?? '';
  assert.match(csp, /(^|; )default-src 'none'(;|$)/, what);
  assert.match(csp, /(^|; )script-src 'self'(;|$)/, what);
  assert.match(csp, /(^|; )style-src 'self'(;|$)/, what);
  assert.match(csp, /(^|; )connect-src 'self'(;|$)/, what);
  // Output previews: images and videos (a missing media-src falls back to default-src 'none').
  assert.match(csp, /(^|; )img-src 'self'(;|$)/, what);
  assert.match(csp, /(^|; )media-src 'self'(;|$)/, what);
  assert.match(csp, /(^|; )frame-ancestors 'none'(;|$)/, what);
  assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|https?:|\*/, what);
  assert.equal(res.headers.get('x-content-type-options'), 'nosniff', what);
  assert.equal(res.headers.get('referrer-policy'), 'no-referrer', what);
}

describe('the console CSP with S3 storage', () => {
  const s3 = { kind: 's3' as const, bucket: 'media', prefix: '', region: 'eu-west-1' };
  test("previews, part uploads and JSON may come from the storage's origin; scripts and styles never", () => {
    const csp = consoleCsp(storageOrigin({ ...s3, endpoint: 'http://127.0.0.1:9000/', forcePathStyle: true }));
    for (const d of ['img-src', 'media-src', 'connect-src']) assert.match(csp, new RegExp(`(^|; )${d} 'self' http://127\\.0\\.0\\.1:9000(;|$)`), d);
    assert.match(csp, /(^|; )script-src 'self'(;|$)/);
    assert.match(csp, /(^|; )style-src 'self'(;|$)/);
  });
  test('the origin of the signed URLs: path style at the endpoint, virtual-hosted under the bucket, AWS by region', () => {
    assert.equal(storageOrigin({ ...s3, endpoint: 'https://minio.example:9000', forcePathStyle: true }), 'https://minio.example:9000');
    assert.equal(storageOrigin({ ...s3, endpoint: 'https://r2.example', forcePathStyle: false }), 'https://media.r2.example');
    assert.equal(storageOrigin({ ...s3, endpoint: null, forcePathStyle: false }), 'https://media.s3.eu-west-1.amazonaws.com');
    assert.equal(storageOrigin({ ...s3, endpoint: null, forcePathStyle: true }), 'https://s3.eu-west-1.amazonaws.com');
    assert.equal(storageOrigin({ kind: 'local', root: '/x', partLockWaitMs: 1 }), null);
  });
});

describe('console pages', () => {
  test('/console and every page path under it answer the same index.html, with no inline script or style', async () => {
    const first = await get('/console');
    assert.equal(first.status, 200);
    const html = first.body.toString('utf8');
    for (const path of ['/console/', '/console/sign-in', '/console/invite', '/console/keys', '/console/webhooks', '/console/members', '/console/runs/abc?x=1']) {
      const res = await get(path);
      assert.equal(res.status, 200, path);
      assert.match(res.headers.get('content-type') ?? '', /^text\/html; charset=utf-8/, path);
      assert.equal(res.headers.get('cache-control'), 'no-cache', path);
      assert.equal(res.body.toString('utf8'), html, path);
      assertSecurityHeaders(res, path);
    }
    assert.match(html, /<div id="app"><\/div>/);
    // Scripts only by src, from this service; no style attribute or element.
    for (const m of html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)) {
      assert.match(m[1] ?? '', /\ssrc="\/console\/assets\//);
      assert.equal(m[2], '');
    }
    assert.doesNotMatch(html, /<style|\sstyle=|\son[a-z]+=/i);
    const refs = assetRefs(html);
    assert.ok(refs.length >= 2, html);
    for (const ref of refs) assert.match(ref, /^\/console\/assets\/[A-Za-z0-9._-]+$/, 'every asset from the service (no CDN)');
  });

  test('assets are served with their content type, cached for good under hashed names, gzipped when asked', async () => {
    const html = (await get('/console')).body.toString('utf8');
    const refs = assetRefs(html);
    const script = refs.find((r) => r.endsWith('.js'));
    const style = refs.find((r) => r.endsWith('.css'));
    assert.ok(script && style, html);
    for (const [ref, type] of [
      [script, /^text\/javascript; charset=utf-8$/],
      [style, /^text\/css; charset=utf-8$/],
    ] as const) {
      const plain = await get(ref);
      assert.equal(plain.status, 200, ref);
      assert.match(plain.headers.get('content-type') ?? '', type, ref);
      assert.equal(plain.headers.get('cache-control'), 'public, max-age=31536000, immutable', ref);
      assert.equal(plain.headers.get('content-encoding'), null, ref);
      assert.equal(plain.headers.get('vary'), 'Accept-Encoding', ref);
      assertSecurityHeaders(plain, ref);
      const zipped = await get(ref, { gzip: true });
      assert.equal(zipped.headers.get('content-encoding'), 'gzip', ref);
      assert.deepEqual(gunzipSync(zipped.body), plain.body, ref);
    }
    const icon = await get('/console/assets/icon.svg');
    assert.equal(icon.status, 200);
    assert.equal(icon.headers.get('content-type'), 'image/svg+xml');
  });

  test('the first page loads less than 150 KB of compressed JavaScript', async () => {
    const html = (await get('/console')).body.toString('utf8');
    let total = 0;
    for (const ref of assetRefs(html).filter((r) => r.endsWith('.js'))) {
      const res = await get(ref, { gzip: true });
      assert.equal(res.headers.get('content-encoding'), 'gzip');
      total += res.body.length;
    }
    assert.ok(total > 1000, `suspiciously small bundle: ${total} bytes`);
    assert.ok(total < 150 * 1024, `the console's first page loads ${total} bytes of gzipped JavaScript`);
  });

  test('an unknown asset and an unknown /console/api path answer 404 in the error envelope, not the page', async () => {
    for (const path of ['/console/assets/nope.js', '/console/assets/main.js', '/console/api/nope']) {
      const res = await get(path);
      assert.equal(res.status, 404, path);
      assert.match(res.headers.get('content-type') ?? '', /^application\/json/, path);
      const body = JSON.parse(res.body.toString('utf8')) as { error: { code: string; request_id: string } };
      assert.equal(body.error.code, 'not_found', path);
      assert.equal(body.error.request_id, res.headers.get('x-request-id'), path);
    }
  });

  test('other methods on a /console/api path no route has: 404 not_found too, not 405', async () => {
    for (const method of ['POST', 'PUT', 'PATCH', 'DELETE']) {
      const res = await fetch(`${url()}/console/api/nope`, { method });
      assert.equal(res.status, 404, method);
      const body = (await res.json()) as { error: { code: string; request_id: string } };
      assert.equal(body.error.code, 'not_found', method);
      assert.equal(body.error.request_id, res.headers.get('x-request-id'), method);
    }
  });

  test('pages are not /v1 operations: absent from /v1/openapi.json', async () => {
    const doc = JSON.parse((await get('/v1/openapi.json')).body.toString('utf8')) as { paths: Record<string, unknown> };
    assert.deepEqual(Object.keys(doc.paths).filter((p) => p.startsWith('/console')), []);
  });
});
