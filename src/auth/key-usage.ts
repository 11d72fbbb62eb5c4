import type { Queryable } from '../db/pool.js';

/** last_used_at is written at most this often per key. */
export const LAST_USED_RESOLUTION_MS = 60_000;
/** How long the first use of a key waits for others to join its write. */
const FLUSH_DELAY_MS = 1_000;

/**
 * Keeps api_keys.last_used_at without touching the request path: the auth hook notes a use in
 * memory (a Map lookup), and a timer writes the keys due in one statement, at most once a minute
 * per key in this process. The statement's own condition keeps it at most once a minute per key
 * across processes. Written through the relaxed pool: a crash may lose the last minute of "last
 * used", never more.
 */
export class KeyUsage {
  /** When this process last wrote (or decided not to write) each key's last use. */
  private readonly written = new Map<string, number>();
  private readonly due = new Map<string, Date>();
  private timer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly db: Queryable,
    private readonly onError: (err: unknown) => void,
    private readonly now: () => number = Date.now,
  ) {}

  seen(keyId: string): void {
    const t = this.now();
    const last = this.written.get(keyId);
    if (last !== undefined && t - last < LAST_USED_RESOLUTION_MS) return;
    this.written.set(keyId, t);
    this.due.set(keyId, new Date(t));
    // Keys unused for a minute need no entry: the next use writes anyway.
    if (this.written.size > 10_000) this.prune(t);
    this.timer ??= setTimeout(() => void this.flush(), FLUSH_DELAY_MS).unref();
  }

  /** Writes what is due now (also on close, so a graceful stop loses nothing). */
  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (this.due.size === 0) return this.flushing;
    const ids = [...this.due.keys()];
    const times = [...this.due.values()];
    this.due.clear();
    this.flushing = this.flushing.then(() =>
      this.db
        .query(
          `UPDATE api_keys k SET last_used_at = u.at
             FROM unnest($1::uuid[], $2::timestamptz[]) AS u(id, at)
            WHERE k.id = u.id AND (k.last_used_at IS NULL OR k.last_used_at < u.at - interval '1 minute')`,
          [ids, times],
        )
        .then(
          () => undefined,
          (err: unknown) => this.onError(err),
        ),
    );
    return this.flushing;
  }

  private prune(t: number): void {
    for (const [id, at] of this.written) if (t - at >= LAST_USED_RESOLUTION_MS) this.written.delete(id);
  }
}
