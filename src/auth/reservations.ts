/**
 * Tokens this process has taken from keys' shared buckets and not yet spent. Taking a batch at a
 * time keeps the shared row (and its write) off most requests; a reservation lapses after ttlMs,
 * its unspent tokens counted as spent, so the shared limit can only be undershot, never exceeded.
 */
export class TokenReservations {
  private readonly held = new Map<string, { tokens: number; until: number }>();
  private readonly queues = new Map<string, Promise<unknown>>();

  constructor(private readonly ttlMs = 1000) {}

  available(key: string, now = Date.now()): number {
    const r = this.held.get(key);
    if (!r) return 0;
    if (r.until <= now) {
      this.held.delete(key);
      return 0;
    }
    return r.tokens;
  }

  /** Spends one reserved token; false when none is left. */
  spend(key: string, now = Date.now()): boolean {
    if (this.available(key, now) < 1) return false;
    const r = this.held.get(key);
    if (!r) return false;
    r.tokens -= 1;
    if (r.tokens < 1) this.held.delete(key);
    return true;
  }

  add(key: string, tokens: number, now = Date.now()): void {
    if (tokens < 1) return;
    if (this.held.size > 10_000) this.sweep(now);
    this.held.set(key, { tokens: this.available(key, now) + tokens, until: now + this.ttlMs });
  }

  /** Runs fn alone for this key: concurrent misses wait for one take instead of each taking a batch. */
  async exclusive<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const before = this.queues.get(key) ?? Promise.resolve();
    const run = before.then(fn, fn);
    const settled = run.then(
      () => undefined,
      () => undefined,
    );
    this.queues.set(key, settled);
    try {
      return await run;
    } finally {
      if (this.queues.get(key) === settled) this.queues.delete(key);
    }
  }

  private sweep(now: number): void {
    for (const [k, r] of this.held) if (r.until <= now) this.held.delete(k);
  }
}
