import type { OutboundResponse } from '../../../net/outbound.js';
import { DEFAULT_FETCH_LIMITS } from '../fetch.js';
import type { ProxyStats } from './proxy.js';
import type { RenderedStyles } from './styles.js';

/** Bounds on one render: the browser's time, memory and traffic, and what it may hand back. */
export interface RenderLimits {
  /** From the render's start to its reading; past it the browser is closed and the render fails. */
  budgetMs: number;
  /** After the budget: how long closing may take before the render's processes are killed. */
  closeGraceMs: number;
  /** For the page's HTML to arrive and parse (DOMContentLoaded). */
  navigationMs: number;
  /** After DOMContentLoaded: how long to wait for load and a quiet network, at most. */
  settleMs: number;
  /** Everything the browser receives and sends, all requests and tunnels together. */
  maxBytes: number;
  maxRequests: number;
  /** One plain-HTTP response. */
  maxResponseBytes: number;
  requestTimeoutMs: number;
  /** V8 heap of each renderer, in MB. */
  heapMb: number;
  /** V8 heap of the process that drives the browser (Playwright and the proxy), in MB. */
  controllerHeapMb: number;
  /** The render's whole process tree (its controller and every Chromium process), in MB (TOOLRUN_BROWSER_MEMORY_MB). */
  memoryMb: number;
  /** Whether to hold the tree in a memory cgroup where one can be made; false leaves the watchdog alone (tests). */
  cgroup: boolean;
  /** The rendered DOM handed to the analysis: the static reader's page limit. */
  htmlBytes: number;
  /** Stylesheets and images kept for the analysis, all together. */
  maxKeptBytes: number;
}

/** TOOLRUN_BROWSER_MEMORY_MB's default (src/config/config.ts): what the service passes every run. */
export const DEFAULT_RENDER_MEMORY_MB = 1024;

export const DEFAULT_RENDER_LIMITS: Readonly<RenderLimits> = Object.freeze({
  budgetMs: 25_000,
  closeGraceMs: 3_000,
  navigationMs: 15_000,
  settleMs: 4_000,
  maxBytes: 20 * 1024 * 1024,
  maxRequests: 150,
  maxResponseBytes: 5 * 1024 * 1024,
  requestTimeoutMs: 10_000,
  heapMb: 256,
  controllerHeapMb: 256,
  memoryMb: DEFAULT_RENDER_MEMORY_MB,
  cgroup: true,
  htmlBytes: DEFAULT_FETCH_LIMITS.pageBytes,
  maxKeptBytes: 12 * 1024 * 1024,
});

/** How the render's memory was held, and the most it used. */
export interface RenderMemory {
  bound: 'cgroup v1' | 'cgroup v2' | 'watchdog';
  /** The tree's peak: the cgroup's own count where it keeps one, else the watchdog's (resident anonymous and shared memory, summed). */
  peakBytes: number;
}

export interface RenderedPage {
  /** The page's URL once loaded (after redirects and script navigation). */
  finalUrl: string;
  /** The DOM after scripts ran, serialised; CSS that scripts inserted through the CSSOM added as <style> blocks. At most htmlBytes. */
  html: string;
  /** Whether the serialised DOM was larger than htmlBytes (long texts shortened, its end cut). */
  truncated: boolean;
  computed: RenderedStyles;
  /** Stylesheets and images the page loaded, by URL, for the analysis to read instead of fetching again. */
  resources: Map<string, OutboundResponse>;
  stats: ProxyStats;
  memory: RenderMemory;
}

/** Log lines one render may forward (the proxy's refusals): past it they are dropped. */
export const MAX_LOG_MESSAGES = 100;

export class RenderError extends Error {
  override readonly name = 'RenderError';
}
