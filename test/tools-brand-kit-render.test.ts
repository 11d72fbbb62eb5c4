// brand_kit_extract's render mode (TOOLRUN_BROWSER_PATH) on an empty-shell page built by a
// script (test/helpers/brand-shell.ts), against the static reader on the same page; the render's
// proxy refusing a private address while the page still renders; its time bound and cancel, with
// the browser gone after each; and the settings' checks at start-up. The render runs in a child
// process (supervisor.ts); what a hostile page can do to it: tools-brand-kit-render-bounds.test.ts.
// Uses Debian's chromium.
import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test, type TestContext } from 'node:test';
import pino from 'pino';
import { ConfigError, loadConfig } from '../src/config/config.js';
import { resolveMediaBinaries } from '../src/media/binaries.js';
import { RenderProxy } from '../src/tools/brand-kit/render/proxy.js';
import { DEFAULT_RENDER_LIMITS } from '../src/tools/brand-kit/render/limits.js';
import { renderIsolated } from '../src/tools/brand-kit/render/supervisor.js';
import { SHELL_WARNING } from '../src/tools/brand-kit/render/shell.js';
import { createBrandKitRunner } from '../src/tools/brand-kit/run.js';
import type { BrandKit } from '../src/tools/brand-kit/schema.js';
import type { RunContext } from '../src/tools/manifest.js';
import { assertValidKit } from './helpers/brand-kit.js';
import { SHELL_BRAND, ShellSite } from './helpers/brand-shell.js';
import { BrandSite } from './helpers/brand-site.js';
import { DnsServer } from './helpers/dns-server.js';
import { CHROMIUM } from './helpers/browser.js';
import { descendants, isChromium } from './helpers/process-tree.js';
import { waitFor } from './helpers/worker.js';

const present = fs.existsSync(CHROMIUM);
const MISSING = `no Chromium at ${CHROMIUM}: install Debian's chromium (apt-get install chromium), as .ci/run does`;

let site: ShellSite;
let privateServer: net.Server;
let privateConnections = 0;
let privateUdp: dgram.Socket;
let privateDatagrams = 0;
const workDirs: string[] = [];

before(async () => {
  // The "private" address: another loopback address, refused like any internal one.
  privateServer = net.createServer((socket) => {
    privateConnections++;
    socket.destroy();
  });
  await new Promise<void>((resolve) => privateServer.listen(0, '127.0.0.2', resolve));
  // The same port over UDP, for STUN (WebRTC) and QUIC (WebTransport).
  privateUdp = dgram.createSocket('udp4');
  privateUdp.on('message', () => privateDatagrams++);
  await new Promise<void>((resolve) => privateUdp.bind((privateServer.address() as net.AddressInfo).port, '127.0.0.2', resolve));
  site = await new ShellSite().start();
  site.probeTarget = `http://127.0.0.2:${(privateServer.address() as net.AddressInfo).port}`;
});
after(async () => {
  await site.close();
  await new Promise<void>((resolve) => privateServer.close(() => resolve()));
  privateUdp.close();
  for (const d of workDirs) fs.rmSync(d, { recursive: true, force: true });
});

function workDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'toolrun-bk-render-'));
  workDirs.push(dir);
  return dir;
}

function context(values: Record<string, unknown>, opts: { browser: boolean; allowPrivate?: boolean; signal?: AbortSignal }): RunContext {
  return {
    runId: '00000000-0000-4000-8000-000000000001',
    teamId: '00000000-0000-4000-8000-000000000002',
    values,
    files: {},
    workDir: workDir(),
    signal: opts.signal ?? new AbortController().signal,
    progress: () => {},
    media: resolveMediaBinaries(),
    logger: pino({ level: 'silent' }),
    outbound: { allowPrivate: opts.allowPrivate ?? true },
    browserPath: opts.browser ? CHROMIUM : null,
    limits: { ffmpegThreads: 2, maxOutputBytes: 4 * 1024 ** 3 },
  };
}

async function kitOf(outputs: Awaited<ReturnType<ReturnType<typeof createBrandKitRunner>>>): Promise<BrandKit> {
  const data = outputs[0]?.data;
  assertValidKit(data);
  return data;
}

/** Chromium processes this test process started (through the render's child process) that are still alive. */
const chromiumChildren = () => descendants().filter(isChromium).map((p) => p.pid);

const noBrowserLeft = () => waitFor('every Chromium process to exit', async () => (chromiumChildren().length === 0 ? true : undefined), 10_000);

function skipWithoutChromium(t: TestContext): boolean {
  if (present) return false;
  t.skip(MISSING);
  return true;
}

describe('brand_kit_extract on a page built by a script', () => {
  test('static mode: the kit says the page looks rendered by script, and has none of its brand', async () => {
    const kit = await kitOf(await createBrandKitRunner()(context({ url: `${site.url}/` }, { browser: false })));
    assert.ok(kit.warnings.includes(SHELL_WARNING), `warnings: ${JSON.stringify(kit.warnings)}`);
    assert.notEqual(kit.name, SHELL_BRAND.name);
    assert.deepEqual(kit.fonts, []);
    assert.equal(kit.roles.primary, null);
  });

  test('render mode: name, colours, fonts and logo as the script built them, and no shell warning', async (t) => {
    if (skipWithoutChromium(t)) return;
    const kit = await kitOf(await createBrandKitRunner()(context({ url: `${site.url}/` }, { browser: true })));
    assert.deepEqual(kit.warnings, []);
    assert.equal(kit.name, SHELL_BRAND.name);
    assert.equal(kit.roles.primary, SHELL_BRAND.primary);
    assert.equal(kit.roles.background, SHELL_BRAND.background);
    assert.equal(kit.roles.text, SHELL_BRAND.text);
    assert.equal(kit.roles.accent, SHELL_BRAND.accent);
    const role = (r: 'heading' | 'body') => kit.fonts.find((f) => f.roles.includes(r))?.family;
    assert.equal(role('heading'), SHELL_BRAND.heading);
    assert.equal(role('body'), SHELL_BRAND.body);
    const logo = kit.logos[0];
    assert.ok(logo, 'a logo');
    assert.equal(logo.url, `${site.url}/img/logo.png`);
    assert.equal(logo.alt, SHELL_BRAND.name);
    assert.ok(logo.file, 'the logo image was read');
    await noBrowserLeft();
  });

  test('render mode on an ordinary static page gives no shell warning either way', async (t) => {
    if (skipWithoutChromium(t)) return;
    // The probe page's own text is static HTML with a script: not a shell once rendered.
    const kit = await kitOf(await createBrandKitRunner()(context({ url: `${site.url}/probe` }, { browser: true })));
    assert.ok(!kit.warnings.includes(SHELL_WARNING));
  });
});

describe("the render's proxy", () => {
  test('a page reaching for a private address gets nothing from it (production rules), and still renders', async (t) => {
    if (skipWithoutChromium(t)) return;
    privateConnections = 0;
    const onlyTheSite = ['127.0.0.1'];
    const page = await renderIsolated(`${site.url}/probe`, {
      executablePath: CHROMIUM,
      allowPrivate: false,
      allowAddresses: onlyTheSite,
      signal: new AbortController().signal,
      limits: DEFAULT_RENDER_LIMITS,
      workDir: workDir(),
      logger: pino({ level: 'silent' }),
    });
    assert.match(page.html, /<h1>Private Probe<\/h1>/);
    // Stylesheet, preconnect, image, iframe, fetch, WebSocket, beacon, EventSource, popup: every
    // one asked the proxy, which refused it; none reached the private address, nor did STUN or
    // QUIC datagrams.
    assert.ok(page.stats.refused >= 4, `refused: ${page.stats.refused}`);
    assert.equal(privateConnections, 0);
    assert.equal(privateDatagrams, 0);

    const kit = await kitOf(await createBrandKitRunner({}, { allowAddresses: onlyTheSite })(context({ url: `${site.url}/probe` }, { browser: true, allowPrivate: false })));
    assert.equal(kit.name, 'Private Probe');
    assert.equal(privateConnections, 0);
    await noBrowserLeft();
  });

  test('the page itself on a private address is refused as not public, as without a browser', async (t) => {
    if (skipWithoutChromium(t)) return;
    await assert.rejects(createBrandKitRunner()(context({ url: `${site.url}/` }, { browser: true, allowPrivate: false })), /url is not public/);
    await noBrowserLeft();
  });
});

const basic = (proxy: RenderProxy) => `Basic ${Buffer.from(`${proxy.credentials.username}:${proxy.credentials.password}`).toString('base64')}`;

/** A proxy with room for a few requests, resolving through the test's DNS server. */
const proxyOn = (dns: DnsServer) =>
  new RenderProxy({
    allowPrivate: true,
    maxBytes: 1024 * 1024,
    maxRequests: 10,
    maxResponseBytes: 1024 * 1024,
    requestTimeoutMs: 5000,
    logger: pino({ level: 'silent' }),
    resolver: () => dns.resolver(),
  });

describe('what the render hands back', () => {
  test('every stylesheet and image the page loaded, byte for byte, beside the rendered DOM', async (t) => {
    if (skipWithoutChromium(t)) return;
    const brand = await new BrandSite().start();
    try {
      const page = await renderIsolated(`${brand.url}/`, {
        executablePath: CHROMIUM,
        allowPrivate: true,
        signal: new AbortController().signal,
        limits: DEFAULT_RENDER_LIMITS,
        workDir: workDir(),
        logger: pino({ level: 'silent' }),
      });
      assert.match(page.html, /<h1>Fly higher<\/h1>/);
      assert.equal(page.truncated, false);
      for (const p of ['/css/main.css', '/css/extra.css', '/img/logo.png', '/img/photo.png']) {
        const kept = page.resources.get(`${brand.url}${p}`);
        assert.ok(kept, `${p} kept`);
        const served = await fetch(`${brand.url}${p}`);
        assert.deepEqual(kept.body, Buffer.from(await served.arrayBuffer()), `${p} as served`);
        assert.equal(kept.headers['content-type'], served.headers.get('content-type'));
      }
    } finally {
      await brand.close();
    }
  });
});

describe('the render proxy on its own', () => {
  test("requests without the render's credentials (Chromium's own background requests) get 407 and no name is looked up", async () => {
    const dns = await DnsServer.start(null);
    const proxy = proxyOn(dns);
    try {
      const proxyUrl = new URL(await proxy.start());
      const ask = (headers: Record<string, string>, path: string, method = 'GET') =>
        new Promise<number>((resolve, reject) => {
          const req = http.request({ host: '127.0.0.1', port: Number(proxyUrl.port), method, path, headers }, (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          });
          req.on('connect', (res: http.IncomingMessage, socket: net.Socket) => {
            socket.destroy();
            resolve(res.statusCode ?? 0);
          });
          req.on('error', reject);
          req.end();
        });
      const wrong = `Basic ${Buffer.from(`${proxy.credentials.username}:not-it`).toString('base64')}`;
      assert.equal(await ask({}, 'http://update.example/service/update2/json'), 407);
      assert.equal(await ask({ 'proxy-authorization': wrong }, 'http://update.example/'), 407);
      assert.equal(await ask({}, 'accounts.example:443', 'CONNECT'), 407);
      assert.equal(await ask({ 'proxy-authorization': wrong }, 'accounts.example:443', 'CONNECT'), 407);
      assert.deepEqual(dns.queries, [], 'no name was looked up for a request without credentials');
      assert.equal(proxy.stats.requests, 0);
      // With them, the same proxy carries the page's request.
      assert.equal(await ask({ host: `127.0.0.1:${site.port}`, 'proxy-authorization': basic(proxy) }, `${site.url}/`), 200);
    } finally {
      await proxy.close();
      await dns.close();
    }
  });

  test('a browser that resets a tunnel while its host is being resolved does not take the process down', async () => {
    const dns = await DnsServer.start(null);
    const proxy = proxyOn(dns);
    try {
      const proxyUrl = new URL(await proxy.start());
      const socket = net.connect(Number(proxyUrl.port), '127.0.0.1');
      socket.on('error', () => {});
      await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
      socket.write(`CONNECT slow.example:443 HTTP/1.1\r\nhost: slow.example:443\r\nproxy-authorization: ${basic(proxy)}\r\n\r\n`);
      await waitFor('the proxy to ask DNS', async () => (dns.queries.some((q) => q.name === 'slow.example') ? true : undefined));
      socket.resetAndDestroy();
      // Still serving: a plain request through it gets the site's page.
      const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = http.get({ host: '127.0.0.1', port: Number(proxyUrl.port), path: `${site.url}/`, headers: { host: `127.0.0.1:${site.port}`, 'proxy-authorization': basic(proxy) } }, (res) => {
          let body = '';
          res.on('data', (c: Buffer) => (body += c.toString()));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        });
        req.on('error', reject);
      });
      assert.equal(answer.status, 200);
      assert.match(answer.body, /<div id="root">/);
    } finally {
      await proxy.close();
      await dns.close();
    }
  });
});

describe('render bounds', () => {
  test('a page whose script never yields: the render stops at its budget, the static reader reads the page, a warning says so', async (t) => {
    if (skipWithoutChromium(t)) return;
    const started = Date.now();
    const kit = await kitOf(await createBrandKitRunner({}, { render: { budgetMs: 4000, navigationMs: 3000 } })(context({ url: `${site.url}/busy` }, { browser: true })));
    assert.ok(Date.now() - started < 12_000, `took ${Date.now() - started} ms`);
    assert.equal(kit.name, 'Busy Loop Co');
    assert.ok(kit.warnings.some((w) => /could not be rendered/.test(w)), JSON.stringify(kit.warnings));
    await noBrowserLeft();
  });

  test('a cancel stops the render at once and closes the browser', async (t) => {
    if (skipWithoutChromium(t)) return;
    const controller = new AbortController();
    const run = createBrandKitRunner()(context({ url: `${site.url}/busy` }, { browser: true, signal: controller.signal }));
    await waitFor('Chromium to start', async () => (chromiumChildren().length ? true : undefined));
    const cancelled = Date.now();
    controller.abort(new Error('cancelled by the test'));
    await assert.rejects(run, /cancelled by the test/);
    assert.ok(Date.now() - cancelled < 3000, `took ${Date.now() - cancelled} ms`);
    await noBrowserLeft();
  });

  test('a byte budget smaller than the page: what is over it is refused and the render still finishes', async (t) => {
    if (skipWithoutChromium(t)) return;
    const page = await renderIsolated(`${site.url}/`, {
      executablePath: CHROMIUM,
      allowPrivate: true,
      signal: new AbortController().signal,
      limits: { ...DEFAULT_RENDER_LIMITS, maxBytes: 1500 },
      workDir: workDir(),
      logger: pino({ level: 'silent' }),
    });
    assert.ok(page.stats.refused >= 1, `refused: ${page.stats.refused}`);
    assert.ok(page.stats.bytes <= 1500 + 2000, `bytes: ${page.stats.bytes}`);
  });
});

describe('TOOLRUN_BROWSER_PATH and TOOLRUN_BROWSER_MEMORY_MB', () => {
  const refused = (value: string) => {
    assert.throws(
      () => loadConfig({ TOOLRUN_BROWSER_PATH: value }, '/srv/app'),
      (err: unknown) => err instanceof ConfigError && err.variable === 'TOOLRUN_BROWSER_PATH' && /^TOOLRUN_BROWSER_PATH: /.test(err.message),
    );
  };
  test('unset: no browser; an executable: its path', (t) => {
    assert.equal(loadConfig({}, '/srv/app').browserPath, null);
    if (skipWithoutChromium(t)) return;
    assert.equal(loadConfig({ TOOLRUN_BROWSER_PATH: CHROMIUM }, '/srv/app').browserPath, CHROMIUM);
  });
  test('TOOLRUN_BROWSER_MEMORY_MB: 1024 unless set; outside 256..65536 or not a number stops start-up naming the variable', () => {
    assert.equal(loadConfig({}, '/srv/app').browserMemoryMb, 1024);
    assert.equal(loadConfig({ TOOLRUN_BROWSER_MEMORY_MB: '2048' }, '/srv/app').browserMemoryMb, 2048);
    for (const bad of ['100', '70000', '1g', '-5']) {
      assert.throws(
        () => loadConfig({ TOOLRUN_BROWSER_MEMORY_MB: bad }, '/srv/app'),
        (err: unknown) => err instanceof ConfigError && err.variable === 'TOOLRUN_BROWSER_MEMORY_MB',
      );
    }
  });
  test('a missing file, a directory, a file that does not run or a relative path stops start-up naming the variable', () => {
    refused('/nonexistent/chromium');
    refused('/usr/bin');
    const plain = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'toolrun-bk-render-')), 'chromium');
    workDirs.push(path.dirname(plain));
    fs.writeFileSync(plain, '#!/bin/sh\n', { mode: 0o644 });
    refused(plain);
    refused('chromium');
  });
});
