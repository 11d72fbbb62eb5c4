// Limits V: what brand_kit_extract fetches from a hostile site is bounded in bytes and time. A
// page that streams forever, a gzip bomb (a gigabyte inflated from 1 MB), a server that drips a
// byte at a time (never idle, never done), an endless chain of distinct redirects, a body that
// lies about its encoding, and SVG logos with an entity bomb or references to local files and
// internal URLs. (A page over 2 MB sent whole, a redirect loop and a stylesheet that never
// answers are covered in tools-brand-kit-runner.test.ts; outbound.test.ts covers the address rules.)
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import zlib from 'node:zlib';
import pino from 'pino';
import sharp from 'sharp';
import { resolveMediaBinaries } from '../src/media/binaries.js';
import { outboundRequest } from '../src/net/outbound.js';
import { createBrandKitRunner } from '../src/tools/brand-kit/run.js';
import type { BrandKit } from '../src/tools/brand-kit/schema.js';
import { ToolError, type RunContext } from '../src/tools/manifest.js';
import { svgHostile } from './helpers/hostile-media.js';

const PAGE = (title: string, body = '') =>
  `<!doctype html><html><head><title>${title}</title><meta name="description" content="${title} makes things."></head><body>${body}</body></html>`;

let server: http.Server;
let base: string;
let workDir: string;
const hits = new Map<string, number>();
const closedEarly = new Set<string>();
let redPng: string;
let bomb: Buffer;

before(async () => {
  workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'toolrun-limits-outbound-'));
  redPng = path.join(workDir, 'red.png');
  fs.writeFileSync(redPng, await sharp({ create: { width: 100, height: 100, channels: 3, background: '#ff0000' } }).png().toBuffer());
  // 16 gzip members of 64 MiB of spaces each: one valid gzip stream, about 1 MB, a gigabyte inflated.
  const member = zlib.gzipSync(Buffer.alloc(64 * 1024 * 1024, 0x20), { level: 9 });
  bomb = Buffer.concat(Array.from({ length: 16 }, () => member));
  server = http.createServer((req, res) => {
    const p = new URL(req.url ?? '/', 'http://x').pathname;
    hits.set(p, (hits.get(p) ?? 0) + 1);
    res.on('close', () => {
      if (!res.writableFinished) closedEarly.add(p);
    });
    const html = { 'content-type': 'text/html; charset=utf-8' };
    if (p === '/endless.html') {
      res.writeHead(200, html);
      const chunk = `<p>${'x'.repeat(64 * 1024)}</p>`;
      const pump = () => {
        while (!res.destroyed && res.write(chunk));
        if (!res.destroyed) res.once('drain', pump);
      };
      return pump();
    }
    if (p === '/drip.html') {
      res.writeHead(200, html);
      const timer = setInterval(() => (res.destroyed ? clearInterval(timer) : res.write('<')), 20);
      return res.on('close', () => clearInterval(timer));
    }
    if (p === '/bomb.html') {
      res.writeHead(200, { ...html, 'content-encoding': 'gzip', 'content-length': String(bomb.length) });
      return res.end(bomb);
    }
    if (p === '/gzip.html' || p === '/br.html') {
      const page = Buffer.from(PAGE(p === '/gzip.html' ? 'Gzip Co' : 'Brotli Co'));
      res.writeHead(200, { ...html, 'content-encoding': p === '/gzip.html' ? 'gzip' : 'br' });
      return res.end(p === '/gzip.html' ? zlib.gzipSync(page) : zlib.brotliCompressSync(page));
    }
    if (p === '/lying.html') {
      res.writeHead(200, { ...html, 'content-encoding': 'gzip' });
      return res.end(PAGE('Not Gzip'));
    }
    if (p === '/odd.html') {
      res.writeHead(200, { ...html, 'content-encoding': 'compress' });
      return res.end(PAGE('Odd'));
    }
    const chain = /^\/chain\/(\d+)$/.exec(p);
    if (chain) {
      res.writeHead(302, { location: `/chain/${Number(chain[1]) + 1}` });
      return res.end();
    }
    if (p === '/logos.html') {
      return res.writeHead(200, html).end(
        PAGE('Logo Co', '<header><img class="logo" src="/bomb.svg" alt="Bomb logo"><img class="logo" src="/refs.svg" alt="Refs logo"></header>'),
      );
    }
    if (p === '/bomb.svg') return res.writeHead(200, { 'content-type': 'image/svg+xml' }).end(svgHostile());
    if (p === '/refs.svg') {
      return res.writeHead(200, { 'content-type': 'image/svg+xml' }).end(
        '<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="100" height="100">' +
          `<image xlink:href="file://${redPng}" width="100" height="100"/><image href="${base}/secret.png" width="100" height="100"/></svg>`,
      );
    }
    if (p === '/secret.png') return res.writeHead(200, { 'content-type': 'image/png' }).end(fs.readFileSync(redPng));
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  fs.rmSync(workDir, { recursive: true, force: true });
});

function context(url: string): RunContext {
  const dir = fs.mkdtempSync(path.join(workDir, 'run-'));
  return {
    runId: '00000000-0000-4000-8000-000000000001',
    teamId: '00000000-0000-4000-8000-000000000002',
    values: { url, save: false },
    files: {},
    workDir: dir,
    signal: new AbortController().signal,
    progress: () => undefined,
    media: resolveMediaBinaries(),
    logger: pino({ level: 'silent' }),
    outbound: { allowPrivate: true },
    limits: { ffmpegThreads: 2, maxOutputBytes: 4 * 1024 ** 3 },
  };
}

async function fails(p: string, pattern: RegExp, limits: Parameters<typeof createBrandKitRunner>[0] = {}): Promise<void> {
  await assert.rejects(createBrandKitRunner(limits)(context(`${base}${p}`)), (err: unknown) => {
    assert.ok(err instanceof ToolError, `a ToolError, not ${String(err)}`);
    assert.match(err.message, pattern);
    return true;
  });
}

async function kitOf(p: string): Promise<{ kit: BrandKit; files: string[] }> {
  const outputs = await createBrandKitRunner()(context(`${base}${p}`));
  return { kit: outputs[0]!.data as BrandKit, files: outputs.map((o) => o.fileName) };
}

describe('pages that never end', () => {
  test('a page that streams forever is cut off at the 2 MB page limit, and the connection is dropped', async () => {
    await fails('/endless.html', /The page .*\/endless\.html is larger than the 2 MB limit/);
    await waitUntil(() => closedEarly.has('/endless.html'));
  });

  test('a server dripping a byte every 20 ms (never idle) is cut off by the request timeout', async () => {
    await fails('/drip.html', /\/drip\.html did not answer in time \(no complete answer within 1 s\)/, { requestTimeoutMs: 1000 });
    await waitUntil(() => closedEarly.has('/drip.html'));
  });

  test('an endless chain of distinct redirects stops after 3', async () => {
    hits.clear();
    await fails('/chain/0', /redirects more than 3 times/);
    assert.deepEqual([...hits.keys()].sort(), ['/chain/0', '/chain/1', '/chain/2', '/chain/3']);
  });
});

describe('compressed answers', () => {
  test('a gzip bomb (1 MB that inflates to 1 GiB) is inflated only up to the page limit', async () => {
    const peakBefore = peakMemory();
    await fails('/bomb.html', /\/bomb\.html is larger than the 2 MB limit/);
    // The limit counts inflated bytes as they come: this process's peak memory never came near a gigabyte.
    assert.ok(peakMemory() - peakBefore < 256 * 1024 * 1024, `peak grew by ${peakMemory() - peakBefore} bytes`);
    // The same through the outbound module directly, with a smaller limit.
    await assert.rejects(
      outboundRequest(`${base}/bomb.html`, { allowPrivate: true, timeoutMs: 10_000, maxBytes: 100_000, maxRedirects: 0 }),
      (err: unknown) => (err as { code?: string }).code === 'too_large',
    );
  });

  test('gzip and brotli pages the server sends unasked are read; a body that lies about its encoding fails clearly', async () => {
    assert.equal((await kitOf('/gzip.html')).kit.name, 'Gzip Co');
    assert.equal((await kitOf('/br.html')).kit.name, 'Brotli Co');
    await fails('/lying.html', /Could not fetch the page .*\/lying\.html: the response claims gzip encoding but does not decode as it/);
    await fails('/odd.html', /Could not fetch the page .*\/odd\.html: the response is encoded as "compress", which cannot be read/);
  });
});

describe('hostile SVG logos', () => {
  test('an entity bomb and references to a local file and an internal URL: nothing is expanded, read or fetched', async () => {
    hits.clear();
    const { kit, files } = await kitOf('/logos.html');
    assert.equal(kit.name, 'Logo Co');
    assert.deepEqual(files, ['brand-kit.json'], 'neither SVG became a logo');
    // The logo warnings (the kit may also say how sure its name is: issue 35).
    assert.deepEqual(kit.warnings.filter((w) => w.startsWith('logo ')), [`logo ${base}/bomb.svg: not a decodable image`, `logo ${base}/refs.svg: not a decodable image`]);
    assert.equal(hits.get('/secret.png'), undefined, 'the internal URL inside the SVG was never requested');
    assert.doesNotMatch(JSON.stringify(kit), /root:|#ff0000/i);
  });
});

/** This process's peak resident memory so far (the kernel's high-water mark), in bytes. */
function peakMemory(): number {
  return Number(/^VmHWM:\s+(\d+) kB$/m.exec(fs.readFileSync('/proc/self/status', 'utf8'))?.[1]) * 1024;
}

async function waitUntil(check: () => boolean): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
}
