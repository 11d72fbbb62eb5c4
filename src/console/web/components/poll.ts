// Live state by polling (the spec's cadence is every 2 to 5 s): a timer chain, not an interval, so
// a slow answer never stacks requests; a 429 waits as long as Retry-After says (at least twice the
// cadence), other failures back off up to 30 s, and the next success brings the cadence back.
import { useEffect, useRef } from 'preact/hooks';
import { ConsoleError } from '../api.ts';

export const POLL_MS = 2000;
const MAX_BACKOFF_MS = 30_000;

/** Calls refresh every `everyMs` while `active`; refresh is read afresh each time (no stale state). */
export function usePolling(active: boolean, refresh: () => Promise<void>, everyMs = POLL_MS): void {
  const latest = useRef(refresh);
  latest.current = refresh;
  useEffect(() => {
    if (!active) return;
    let stopped = false;
    let wait = everyMs;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const schedule = () => {
      timer = setTimeout(async () => {
        try {
          await latest.current();
          wait = everyMs;
        } catch (err) {
          const limited = err instanceof ConsoleError && err.status === 429;
          wait = limited ? Math.max(everyMs * 2, (err.retryAfter ?? 0) * 1000) : Math.min(wait * 2, MAX_BACKOFF_MS);
        }
        if (!stopped) schedule();
      }, wait);
    };
    schedule();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, [active, everyMs]);
}
