/**
 * The instruction-count part of bench:http (issue 29): the bare server and the API (no workers)
 * each run under callgrind, requests are sent to them one at a time, and what the event-loop
 * thread executes per request is counted over windows of requests after a long warm-up.
 *
 * Why windows and a median: V8 compiles and collects as it goes, so the count of a window falls as
 * the code settles and jumps when a major collection lands in it; the same steps in the same order
 * give the same counts again (repeatable within ~1% here), so the median of the later half of the
 * windows after the warm-up is the steady cost of a request. The event-loop thread is the figure; all threads
 * (V8's compiler and collector helpers, libuv's pool) are reported beside it.
 */
import { startApiChild, startServerChild, type ServerChild } from './children.js';
import { callgrindWrapper, instructionsPerRequest, type InstructionCount } from './request-cost.js';
import { envInt, median } from './report.js';

export const instructionSettings = () => ({
  warmup: envInt('BENCH_CG_WARMUP', 20_000, 0),
  windows: envInt('BENCH_CG_WINDOWS', 8, 1),
  requests: envInt('BENCH_CG_REQUESTS', 2_000, 1),
  /** Node flags of both servers under callgrind (the same for both), space-separated. */
  nodeArgs: (process.env.BENCH_CG_NODE_ARGS ?? '').split(' ').filter(Boolean),
});

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
  /** Median over the later half of the windows, per request: event-loop thread, and all threads. */
  main: number;
  all: number;
  windows: InstructionCount[];
}

export interface InstructionResult {
  bare: CountedTarget;
  healthz: CountedTarget;
  me: CountedTarget;
}

async function series(child: ServerChild, dir: string, url: string, headers: Record<string, string>, s: InstructionSettings, before: () => Promise<void>): Promise<CountedTarget> {
  const windows: InstructionCount[] = [];
  for (let i = 0; i < s.windows; i++) {
    await before();
    windows.push(await instructionsPerRequest({ pid: child.pid, dir, url, headers, expect: 200, warmup: i === 0 ? s.warmup : 0, requests: s.requests }));
  }
  // The later half: the first windows after the warm-up still carry compilation (see above).
  const settled = windows.slice(Math.floor(windows.length / 2));
  return { main: median(settled.map((w) => w.main)), all: median(settled.map((w) => w.all)), windows };
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
