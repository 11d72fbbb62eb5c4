import fs from 'node:fs/promises';
import path from 'node:path';
import { chromium, type Browser, type Response } from 'playwright-core';
import type { Logger } from 'pino';
import { RenderError, type RenderLimits } from './limits.js';
import type { ChildResult, KeptFile, RenderJob } from './protocol.js';
import { RenderProxy } from './proxy.js';
import { readPage } from './read.js';

// The analysis's fetcher reads the rendered page through this type (fetcher.ts).
export type { RenderedPage } from './limits.js';

/**
 * Playwright's own --disable-features list (playwright-core 1.65, chromiumSwitches.ts), exactly
 * as it writes it. Chromium keeps one --disable-features switch of several, so Playwright's is
 * left out (ignoreDefaultArgs takes a switch exactly as written) and its features are given again
 * in the one merged switch. Should an upgrade change Playwright's list, the launched command line
 * carries two switches again, and test/tools-brand-kit-render-bounds.test.ts (which reads it
 * from /proc) fails until this list is brought up to date.
 */
export const PLAYWRIGHT_DISABLED_FEATURES = [
  'AvoidUnnecessaryBeforeUnloadCheckSync',
  'DestroyProfileOnBrowserClose',
  'HttpsUpgrades',
  'HttpsFirstBalancedModeAutoEnable',
  'LensOverlay',
  'MediaRouter',
  'PaintHolding',
  'ThirdPartyStoragePartitioning',
  'AvoidCorsURLLoaderRestartOnRedirect',
  'TcpPortRandomizationWin',
  'OptimizationHints',
  'NetworkTimeServiceQuerying',
  'AimEnabled',
  'PreconnectToSearch',
  'msForceBrowserSignIn',
  'msEdgeUpdateLaunchServicesPreferredVersion',
];
/** Prerendering and prediction would open connections the page did not ask for; autofill asks Google. */
const SERVICE_DISABLED_FEATURES = ['Prerender2', 'NetworkPrediction', 'SpeculationRulesPrefetchFuture', 'AutofillServerCommunication'];

/**
 * Flags beside the proxy: Chromium resolves no host name itself (every name it would look up
 * fails; the proxy, an address, needs none), so nothing it does outside the proxy (DNS prefetch,
 * a preconnect) reaches a name; WebRTC sends no UDP outside the proxy and QUIC and WebTransport
 * (UDP, which an HTTP proxy cannot carry) are off. Memory: a bounded V8 heap per renderer, at
 * most two renderers, no /dev/shm (small in containers); the whole tree is bounded by the
 * service (supervisor.ts).
 */
function chromiumArgs(limits: RenderLimits): string[] {
  return [
    '--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1',
    '--force-webrtc-ip-handling-policy=disable_non_proxied_udp',
    '--webrtc-ip-handling-policy=disable_non_proxied_udp',
    '--disable-quic',
    '--disable-blink-features=WebTransport',
    '--dns-prefetch-disable',
    '--no-pings',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
    '--disable-extensions',
    `--disable-features=${[...PLAYWRIGHT_DISABLED_FEATURES, ...SERVICE_DISABLED_FEATURES].join(',')}`,
    '--disable-gpu',
    '--disable-dev-shm-usage',
    '--renderer-process-limit=2',
    `--js-flags=--max-old-space-size=${limits.heapMb}`,
  ];
}

const KEPT_TYPES = new Set(['stylesheet', 'image']);

/** The UTF-8 bytes of `text`, at most `max`, cut at a character boundary. */
function utf8Within(text: string, max: number): { bytes: Buffer; cut: boolean } {
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= max) return { bytes, cut: false };
  let end = max;
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--;
  return { bytes: bytes.subarray(0, end), cut: true };
}

/**
 * One page rendered in headless Chromium behind a proxy of the render's own (RenderProxy), in
 * the render's child process (render-child.ts): the DOM after scripts ran, the computed styles,
 * and the stylesheets and images it loaded, written as files in the render's directory. One
 * page, no popups, no service workers or downloads; bounded in time, bytes, requests and heap.
 */
export class PageRender {
  private browser: Browser | null = null;
  private ended: string | null = null;
  private readonly proxy: RenderProxy;

  constructor(
    private readonly job: RenderJob,
    logger: Pick<Logger, 'warn'>,
  ) {
    const allowed = job.allowAddresses;
    this.proxy = new RenderProxy({
      allowPrivate: job.allowPrivate,
      allowAddress: allowed ? (ip) => allowed.includes(ip) : undefined,
      maxBytes: job.limits.maxBytes,
      maxRequests: job.limits.maxRequests,
      maxResponseBytes: job.limits.maxResponseBytes,
      requestTimeoutMs: job.limits.requestTimeoutMs,
      logger,
    });
  }

  /** Stops the render: closing the browser rejects whatever is being awaited on it. */
  end(why: string): void {
    this.ended ??= why;
    void this.browser?.close().catch(() => {});
  }

  async run(): Promise<ChildResult> {
    const { limits, deadline } = this.job;
    const left = () => deadline - Date.now();
    const timer = setTimeout(() => this.end(`the render took longer than ${limits.budgetMs} ms`), Math.max(0, left()));
    try {
      return await this.render(left);
    } catch (err) {
      if (this.ended) throw new RenderError(this.ended);
      if (err instanceof RenderError) throw err;
      throw new RenderError(err instanceof Error ? err.message.split('\n')[0]!.slice(0, 300) : 'the browser failed');
    } finally {
      clearTimeout(timer);
    }
  }

  /** Closes the browser and the proxy, waiting at most `graceMs` for the browser (the service kills what is left). */
  async close(graceMs: number): Promise<void> {
    const closing = this.browser?.close().catch(() => {});
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([closing, new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs)))]);
    clearTimeout(timer);
    await this.proxy.close();
  }

  private async render(left: () => number): Promise<ChildResult> {
    const { limits, url, dir } = this.job;
    const server = await this.proxy.start();
    const browser = await chromium.launch({
      executablePath: this.job.executablePath,
      headless: true,
      // Chromium refuses its sandbox to root; anyone else gets it.
      chromiumSandbox: process.getuid?.() !== 0,
      // No bypass: Playwright then adds <-loopback>, so loopback goes through the proxy too.
      proxy: { server, ...this.proxy.credentials },
      ignoreDefaultArgs: [`--disable-features=${PLAYWRIGHT_DISABLED_FEATURES.join(',')}`],
      args: chromiumArgs(limits),
      timeout: Math.max(1000, left()),
      handleSIGINT: false,
      handleSIGTERM: false,
      handleSIGHUP: false,
    });
    this.browser = browser;
    if (this.ended) throw new RenderError(this.ended);
    const context = await browser.newContext({
      serviceWorkers: 'block',
      acceptDownloads: false,
      viewport: { width: 1280, height: 900 },
      javaScriptEnabled: true,
    });
    const page = await context.newPage();
    // One page: a popup or window.open gets closed at once.
    context.on('page', (p) => {
      if (p !== page) void p.close().catch(() => {});
    });
    const kept: KeptFile[] = [];
    let keptBytes = 0;
    let files = 0;
    const keptUrls = new Set<string>();
    const pending: Promise<void>[] = [];
    page.on('response', (res: Response) => {
      if (!KEPT_TYPES.has(res.request().resourceType()) || res.status() < 200 || res.status() >= 300 || res.url().length > 8192) return;
      pending.push(
        res.body().then(
          async (body) => {
            if (keptBytes + body.length > limits.maxKeptBytes || keptUrls.has(res.url())) return;
            keptBytes += body.length;
            keptUrls.add(res.url());
            // Named before the write: responses arrive together, and each write takes a while.
            const file = `kept-${files++}.bin`;
            await fs.writeFile(path.join(dir, file), body);
            // The browser hands the body decoded, so its content-encoding no longer applies.
            kept.push({ url: res.url(), status: res.status(), contentType: (res.headers()['content-type'] ?? '').slice(0, 500) || null, file, bytes: body.length });
          },
          () => {},
        ),
      );
    });
    const response = await page.goto(url, { waitUntil: 'domcontentloaded', timeout: Math.min(limits.navigationMs, Math.max(1, left() - 2000)) });
    if (!response) throw new RenderError('the page did not load');
    if (response.status() < 200 || response.status() >= 300) throw new RenderError(`the page answered HTTP ${response.status()}`);
    // Scripts may build the page after load (from data they fetch): wait for a quiet network, within bounds.
    const settle = Math.max(0, Math.min(limits.settleMs, left() - 3000));
    const settleStart = Date.now();
    await page.waitForLoadState('load', { timeout: Math.max(1, settle) }).catch(() => {});
    await page.waitForLoadState('networkidle', { timeout: Math.max(1, settle - (Date.now() - settleStart)) }).catch(() => {});
    const { reading, dom } = await readPage(context, page, { htmlChars: limits.htmlBytes, timeoutMs: left() });
    let html = dom.html;
    if (reading.css.length) {
      const blocks = reading.css.map((css) => `<style data-toolrun-cssom>${css.replace(/<\/style/gi, '<\\/style')}</style>`).join('\n');
      html = /<\/head>/i.test(html) ? html.replace(/<\/head>/i, `${blocks}\n</head>`) : `${blocks}\n${html}`;
    }
    const { bytes, cut } = utf8Within(html, limits.htmlBytes);
    await fs.writeFile(path.join(dir, 'page.bin'), bytes);
    await Promise.allSettled(pending);
    const finalUrl = page.url();
    return {
      finalUrl: finalUrl.length <= 8192 ? finalUrl : url,
      htmlFile: 'page.bin',
      htmlBytes: bytes.length,
      truncated: cut || dom.cut || dom.full > limits.htmlBytes,
      computed: reading.computed,
      kept: kept.slice(0, 150),
      stats: { ...this.proxy.stats },
    };
  }
}
