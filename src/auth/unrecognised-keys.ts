/**
 * Keeps a flood of bad API keys from crowding out the keys in use. Every request still
 * authenticates in PostgreSQL; this only decides how fast lookups of keys this process has not
 * seen authenticate recently may go: at most `perSecond` a second (with a burst of one second's
 * worth), the rest waiting their turn, refused with 429 beyond `maxWaitMs`. Keys that did
 * authenticate here in the last `recentMs` skip the queue.
 *
 * What decides the lane is the hash of the whole key, so a valid key's prefix with a wrong secret
 * and an unknown prefix go exactly the same way (no timing difference between them).
 */
export class UnrecognisedKeyGate {
  private readonly recent = new Map<string, number>();
  /** GCRA: when the next lookup is due if they came evenly spaced (ms since the epoch). */
  private theoreticalArrival = 0;
  private readonly intervalMs: number;
  private readonly burstMs: number;

  constructor(
    readonly perSecond: number,
    private readonly opts: { maxWaitMs?: number; recentMs?: number; maxRecent?: number } = {},
  ) {
    this.intervalMs = perSecond > 0 ? 1000 / perSecond : 0;
    this.burstMs = 1000;
  }

  /** Whether the key (by hash) authenticated in this process within recentMs. */
  isRecent(hash: string, now = Date.now()): boolean {
    const until = this.recent.get(hash);
    if (until === undefined) return false;
    if (until > now) return true;
    this.recent.delete(hash);
    return false;
  }

  markValid(hash: string, now = Date.now()): void {
    const max = this.opts.maxRecent ?? 20_000;
    // A Map keeps insertion order: re-inserting moves the key to the end, and the oldest go first.
    this.recent.delete(hash);
    if (this.recent.size >= max) {
      const oldest = this.recent.keys().next();
      if (!oldest.done) this.recent.delete(oldest.value);
    }
    this.recent.set(hash, now + (this.opts.recentMs ?? 10 * 60_000));
  }

  forget(hash: string): void {
    this.recent.delete(hash);
  }

  /**
   * Waits for this lookup's turn. Resolves 0 when it may go, or the seconds to suggest in
   * Retry-After when its turn is further away than maxWaitMs (it then takes no turn).
   */
  async admit(now = Date.now()): Promise<number> {
    if (this.intervalMs === 0) return 0;
    const tat = Math.max(this.theoreticalArrival, now);
    const wait = tat - this.burstMs - now;
    if (wait > (this.opts.maxWaitMs ?? 2000)) return Math.max(1, Math.ceil(wait / 1000));
    this.theoreticalArrival = tat + this.intervalMs;
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    return 0;
  }
}
