// `Prefer: wait=N` (issue 18): a request for a run that is not final may be held until the run
// is final or N seconds pass. Final runs are announced on EVENTS_CHANNEL by the transaction that
// finishes them (any worker, any machine); this process's LISTEN connection hands each run id to
// notify(), which wakes the requests waiting for it. No polling per request. The number of waiting
// requests is bounded per process, per team and per key; past any bound a request is answered at
// once.
import type { HeldRequestBounds } from '../config/config.js';
import { Places, type PlaceHolder } from '../events/places.js';

export const WAIT_MAX_SECONDS = 60;
/** Per key; the process's and each team's bounds are the operator's (TOOLRUN_WAITERS_PER_PROCESS, TOOLRUN_WAITERS_PER_TEAM). */
export const WAITERS_PER_KEY = 10;

/** The wait a Prefer header asks for, in seconds (1 to 60), or null (none, or not understood: RFC 7240 says ignore it). */
export function preferredWait(header: string | string[] | undefined): number | null {
  const value = Array.isArray(header) ? header.join(',') : header;
  if (!value) return null;
  for (const part of value.split(/[,;]/)) {
    const m = /^\s*wait\s*=\s*"?([0-9]{1,6})"?\s*$/i.exec(part);
    if (!m) continue;
    const seconds = Number(m[1]);
    return seconds >= 1 ? Math.min(seconds, WAIT_MAX_SECONDS) : null;
  }
  return null;
}

export class RunWaiters {
  private readonly byRun = new Map<string, Set<() => void>>();
  private readonly places: Places;

  constructor(bounds: HeldRequestBounds) {
    this.places = new Places({ ...bounds, perKey: WAITERS_PER_KEY });
  }

  /** A run became final: every request waiting for it looks again. */
  notify(runId: string): void {
    for (const wake of this.byRun.get(runId) ?? []) wake();
  }

  /** Everything waiting looks again (the LISTEN connection came back: notifications may have been missed meanwhile). */
  notifyAll(): void {
    for (const wakes of this.byRun.values()) for (const wake of wakes) wake();
  }

  /**
   * Holds a place for one waiting request of this key of this team, or null when a bound is
   * reached. The returned wait() resolves on the run's notification, after `seconds`, or when
   * `signal` aborts; release() must follow in every case.
   */
  enter(holder: PlaceHolder, runId: string): { wait(seconds: number, signal: AbortSignal): Promise<void>; release(): void } | null {
    const giveBack = this.places.take(holder);
    if (!giveBack) return null;
    let wake: () => void = () => undefined;
    const woken = new Promise<void>((resolve) => (wake = resolve));
    // Registered before the caller reads the run, so a run finishing in between is not missed.
    const set = this.byRun.get(runId) ?? new Set<() => void>();
    set.add(wake);
    this.byRun.set(runId, set);
    let released = false;
    return {
      wait: (seconds, signal) => {
        let timer: NodeJS.Timeout | undefined;
        const onAbort = () => wake();
        signal.addEventListener('abort', onAbort, { once: true });
        return Promise.race([woken, new Promise<void>((resolve) => (timer = setTimeout(resolve, seconds * 1000)))]).finally(() => {
          clearTimeout(timer);
          signal.removeEventListener('abort', onAbort);
        });
      },
      release: () => {
        if (released) return;
        released = true;
        set.delete(wake);
        if (!set.size) this.byRun.delete(runId);
        giveBack();
      },
    };
  }

  get waiting(): number {
    return this.places.held;
  }
}
