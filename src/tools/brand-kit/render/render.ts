import { chromium, type Browser, type Response } from 'playwright-core';
import type { Logger } from 'pino';
import type { OutboundResponse } from '../../../net/outbound.js';
import { RenderProxy, type ProxyStats } from './proxy.js';
import { checkReading, READ_PAGE_SCRIPT, type RenderedStyles } from './styles.js';

/** Bounds on one render: the browser's time, memory and traffic. */
export interface RenderLimits {
  /** From launch to the browser closed; past it the browser is killed and the render fails. */
  budgetMs: number;
  /** For the page's HTML to arrive and parse (DOMContentLoaded). */
  navigationMs: number;
  /** After DOMContentLoaded: how long to wait for load and a quiet network, at most. */
  settleMs: number;
  /** Everything the browser receives, all requests together. */
  maxBytes: number;
  maxRequests: number;
  /** One plain-HTTP response. */
  maxResponseBytes: number;
  requestTimeoutMs: number;
  /** V8 heap of each renderer, in MB. */
  heapMb: number;
  /** Stylesheets and images kept for the analysis, all together. */
  maxKeptBytes: number;
}

export const DEFAULT_RENDER_LIMITS: Readonly<RenderLimits> = Object.freeze({
  budgetMs: 25_000,
  navigationMs: 15_000,
  settleMs: 4_000,
  maxBytes: 20 * 1024 * 1024,
  maxRequests: 150,
  maxResponseBytes: 5 * 1024 * 1024,
  requestTimeoutMs: 10_000,
  heapMb: 256,
  maxKeptBytes: 12 * 1024 * 1024,
});

export interface RenderOptions {
  executablePath: string;
  allowPrivate: boolean;
  /** Tests only: which addresses count as allowed (see outboundRequest). */
  allowAddress?: ((ip: string) => boolean) | undefined;
  signal: AbortSignal;
  limits: RenderLimits;
  logger: Pick<Logger, 'warn'>;
}

export interface RenderedPage {
  /** The page's URL once loaded (after redirects and script navigation). */
  finalUrl: string;
  /** The DOM after scripts ran, serialised; CSS that scripts inserted through the CSSOM added as <style> blocks. */
  html: string;
  computed: RenderedStyles;
  /** Stylesheets and images the page loaded, by URL, for the analysis to read instead of fetching again. */
  resources: Map<string, OutboundResponse>;
  stats: ProxyStats;
}

export class RenderError extends Error {
  override readonly name = 'RenderError';
}

/**
 * Flags beside the proxy: Chromium resolves no host name itself (every name it would look up
 * fails; the proxy, an address, needs none), so nothing it does outside the proxy (DNS prefetch,
 * a preconnect) reaches a name; WebRTC sends no UDP outside the proxy and QUIC and WebTransport
 * (UDP, which an HTTP proxy cannot carry) are off. Memory: a bounded V8 heap per renderer, at
 * most two renderers, no /dev/shm (small in containers).
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
    '--disable-features=Prerender2,NetworkPrediction,SpeculationRulesPrefetchFuture,AutofillServerCommunication',
    '--disable-gpu',
    '--disable-dev-shm-usage',
    '--renderer-process-limit=2',
    `--js-flags=--max-old-space-size=${limits.heapMb}`,
  ];
}

const KEPT_TYPES = new Set(['stylesheet', 'image']);

/**
 * Loads the page in headless Chromium behind a proxy of the service's own (RenderProxy) and reads
 * it: the DOM after scripts ran, the computed styles, and the stylesheets and images it loaded.
 * One page, no popups, no service workers or downloads; bounded in time, bytes, requests and
 * heap; the browser is closed on every path, a cancel (the run's signal) included.
 */
export async function renderPage(url: string, opts: RenderOptions): Promise<RenderedPage> {
  const { limits } = opts;
  if (opts.signal.aborted) throw new RenderError('cancelled');
  const proxy = new RenderProxy({
    allowPrivate: opts.allowPrivate,
    allowAddress: opts.allowAddress,
    maxBytes: limits.maxBytes,
    maxRequests: limits.maxRequests,
    maxResponseBytes: limits.maxResponseBytes,
    requestTimeoutMs: limits.requestTimeoutMs,
    logger: opts.logger,
  });
  let browser: Browser | null = null;
  let ended: string | null = null;
  const started = Date.now();
  // Closing the browser is what stops a render: it rejects whatever is being awaited on it.
  const end = (why: string) => {
    ended ??= why;
    void browser?.close().catch(() => {});
  };
  const onAbort = () => end('cancelled');
  opts.signal.addEventListener('abort', onAbort, { once: true });
  const timer = setTimeout(() => end(`the render took longer than ${limits.budgetMs} ms`), limits.budgetMs);
  try {
    const server = await proxy.start();
    const launched = await chromium.launch({
      executablePath: opts.executablePath,
      headless: true,
      // Chromium refuses its sandbox to root; anyone else gets it.
      chromiumSandbox: process.getuid?.() !== 0,
      // No bypass: Playwright then adds <-loopback>, so loopback goes through the proxy too.
      proxy: { server, ...proxy.credentials },
      args: chromiumArgs(limits),
      timeout: Math.max(1000, limits.budgetMs - (Date.now() - started)),
      handleSIGINT: false,
      handleSIGTERM: false,
      handleSIGHUP: false,
    });
    browser = launched;
    if (ended) throw new RenderError(ended);
    const context = await launched.newContext({
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
    const resources = new Map<string, OutboundResponse>();
    let kept = 0;
    const pending: Promise<void>[] = [];
    page.on('response', (res: Response) => {
      if (!KEPT_TYPES.has(res.request().resourceType()) || res.status() < 200 || res.status() >= 300) return;
      pending.push(
        res.body().then(
          (body) => {
            if (kept + body.length > limits.maxKeptBytes || resources.has(res.url())) return;
            kept += body.length;
            // The browser hands the body decoded, so its content-encoding no longer applies.
            const { 'content-encoding': _coding, ...headers } = res.headers();
            resources.set(res.url(), { status: res.status(), headers, body, url: res.url(), address: '' });
          },
          () => {},
        ),
      );
    });
    const left = () => limits.budgetMs - (Date.now() - started);
    const response = await page.goto(url, { waitUntil: 'domcontentloaded', timeout: Math.min(limits.navigationMs, Math.max(1, left() - 2000)) });
    if (!response) throw new RenderError('the page did not load');
    if (response.status() < 200 || response.status() >= 300) throw new RenderError(`the page answered HTTP ${response.status()}`);
    // Scripts may build the page after load (from data they fetch): wait for a quiet network, within bounds.
    const settle = Math.max(0, Math.min(limits.settleMs, left() - 3000));
    const settleStart = Date.now();
    await page.waitForLoadState('load', { timeout: Math.max(1, settle) }).catch(() => {});
    await page.waitForLoadState('networkidle', { timeout: Math.max(1, settle - (Date.now() - settleStart)) }).catch(() => {});
    const reading = checkReading(await page.evaluate(READ_PAGE_SCRIPT));
    let html = await page.content();
    if (reading.css.length) {
      const blocks = reading.css.map((css) => `<style data-toolrun-cssom>${css.replace(/<\/style/gi, '<\\/style')}</style>`).join('\n');
      html = /<\/head>/i.test(html) ? html.replace(/<\/head>/i, `${blocks}\n</head>`) : `${blocks}\n${html}`;
    }
    await Promise.allSettled(pending);
    return { finalUrl: page.url(), html, computed: reading.computed, resources, stats: { ...proxy.stats } };
  } catch (err) {
    if (ended) throw new RenderError(ended);
    if (err instanceof RenderError) throw err;
    throw new RenderError(err instanceof Error ? err.message.split('\n')[0]!.slice(0, 300) : 'the browser failed');
  } finally {
    clearTimeout(timer);
    opts.signal.removeEventListener('abort', onAbort);
    await (browser as Browser | null)?.close().catch(() => {});
    await proxy.close();
  }
}
