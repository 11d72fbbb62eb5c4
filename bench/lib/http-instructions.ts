/**
 * The instruction-count part of bench:http (issue 29): the bare server and the API (no workers)
 * each run under callgrind, requests are sent to them one at a time, and what the event-loop
 * thread executes per request is counted over windows of requests after a long warm-up.
 *
 * Why windows: V8 compiles and collects as it goes, so the count of a window falls as the code
 * settles and jumps when a major collection lands in it. A series takes windows until
 * SETTLE_RUN of them in a row agree within SETTLE_SPREAD, and the median of those is the steady
 * cost of a request; a series that never settles within its bound says so and reports the
 * median of its later half. The event-loop thread is the figure; all threads
 * (V8's compiler and collector helpers, libuv's pool) are reported beside it.
 */
import { startApiChild, startServerChild, type ServerChild } from './children.js';
import { callgrindWrapper, instructionsPerRequest, type InstructionCount } from './request-cost.js';
import { envInt, median } from './report.js';

export const instructionSettings = () => ({
  warmup: envInt('BENCH_CG_WARMUP', 20_000, 0),
  /** The most windows a series takes; it stops earlier once SETTLE_RUN windows in a row agree. */
  windows: envInt('BENCH_CG_WINDOWS', 14, SETTLE_RUN),
  requests: envInt('BENCH_CG_REQUESTS', 2_000, 1),
  /** Node flags of both servers under callgrind (the same for both), space-separated. */
  nodeArgs: (process.env.BENCH_CG_NODE_ARGS ?? '').split(' ').filter(Boolean),
});

/** Windows in a row that must agree within SETTLE_SPREAD (max/min - 1) for a series to count as settled. */
export const SETTLE_RUN = 3;
export const SETTLE_SPREAD = 0.01;

/**
 * Where the last `run` values agree within `spread` (max/min - 1) and are not still falling one
 * after another, the index of the first of them; else null. A series stops as soon as this is
 * not null: a fixed number of windows was either too few (the bare server still compiling at
 * requests 20,000-22,000 on one run, settled on the next: issue 37) or, once settled, time spent
 * for nothing. "Still falling": /v1/me once fell 118.8k, 118.2k, 117.7k (within 1%) on its way
 * to 114k, which another run reached.
 */
export function settledFrom(values: number[], run = SETTLE_RUN, spread = SETTLE_SPREAD): number | null {
  if (values.length < run) return null;
  const last = values.slice(-run);
  const lo = Math.min(...last);
  const hi = Math.max(...last);
  const falling = last.every((v, i) => i === 0 || v < (last[i - 1] ?? v));
  // 1e-12: 70,700 / 70,000 - 1 is 1.0000000000000009% in binary floating point.
  return lo > 0 && !falling && hi / lo - 1 <= spread + 1e-12 ? values.length - run : null;
}

/**
 * Under callgrind a request takes ~50 ms, not ~0.1: the service's clocks see 20 requests a second
 * where it would see thousands. Two of its time-based choices would then run per request far more
 * often than at any real rate, and how often would follow the machine's speed (issue 37: the count
 * moved from run to run and machine to machine): a key's reserved tokens lapse after a second
 * (TOOLRUN_RATE_RESERVATION_MS), so each second costs a take from PostgreSQL instead of one per
 * 100 requests, and a cached key is read again after 5 s (TOOLRUN_KEY_CACHE_MAX_AGE_MS). Both are
 * set to a minute for the count, so a take happens every 100 requests as it does at full speed.
 */
export const CALLGRIND_API_ENV: NodeJS.ProcessEnv = { TOOLRUN_RATE_RESERVATION_MS: '60000', TOOLRUN_KEY_CACHE_MAX_AGE_MS: '60000' };
export type InstructionSettings = ReturnType<typeof instructionSettings>;

export interface CountedTarget {
  /** Median over the counted windows, per request: event-loop thread, and all threads. */
  main: number;
  all: number;
  /** Every window taken, in order. */
  windows: InstructionCount[];
  /** The windows the figure is from: the settled run, or the later half when none settled. */
  counted: InstructionCount[];
  settled: boolean;
}

export interface InstructionResult {
  bare: CountedTarget;
  healthz: CountedTarget;
  me: CountedTarget;
}

async function series(child: ServerChild, dir: string, url: string, headers: Record<string, string>, s: InstructionSettings, before: () => Promise<void>): Promise<CountedTarget> {
  const windows: InstructionCount[] = [];
  let from: number | null = null;
  while (windows.length < s.windows && from === null) {
    await before();
    windows.push(await instructionsPerRequest({ pid: child.pid, dir, url, headers, expect: 200, warmup: windows.length === 0 ? s.warmup : 0, requests: s.requests }));
    from = settledFrom(windows.map((w) => w.main));
  }
  // Not settled within the bound: the later half, whose first windows may still carry compilation (see above).
  const counted = windows.slice(from ?? Math.floor(windows.length / 2));
  return { main: median(counted.map((w) => w.main)), all: median(counted.map((w) => w.all)), windows, counted, settled: from !== null };
}

/** Both servers under callgrind at once (the counts do not depend on what else runs). */
export async function countInstructions(opts: {
  databaseUrl: string;
  key: string;
  meBody: string;
  logLevel: string;
  settings: InstructionSettings;
  /** Puts the key's bucket back to full (before each window of authenticated requests). */
  refill: () => Promise<void>;
}): Promise<InstructionResult> {
  const auth = { authorization: `Bearer ${opts.key}` };
  const cgApi = callgrindWrapper();
  const cgBare = callgrindWrapper();
  const children: ServerChild[] = [];
  try {
    const [api, bare] = await Promise.all([
      startApiChild(opts.databaseUrl, opts.logLevel, { BENCH_API_WORKERS: '0', ...CALLGRIND_API_ENV }, { wrapper: cgApi.wrapper, nodeArgs: opts.settings.nodeArgs, readyTimeoutMs: 600_000 }),
      startServerChild('bare', 'bare', { ...process.env, BENCH_BODY: opts.meBody }, { wrapper: cgBare.wrapper, nodeArgs: opts.settings.nodeArgs, readyTimeoutMs: 600_000 }),
    ]);
    children.push(api, bare);
    const nothing = async () => undefined;
    const [bareCount, apiCounts] = await Promise.all([
      series(bare, cgBare.dir, `${bare.url}/v1/me`, auth, opts.settings, nothing),
      (async () => {
        const healthz = await series(api, cgApi.dir, `${api.url}/healthz`, auth, opts.settings, nothing);
        const me = await series(api, cgApi.dir, `${api.url}/v1/me`, auth, opts.settings, opts.refill);
        return { healthz, me };
      })(),
    ]);
    return { bare: bareCount, ...apiCounts };
  } finally {
    for (const c of children) await c.stop().catch(() => undefined);
    cgApi.cleanup();
    cgBare.cleanup();
  }
}
