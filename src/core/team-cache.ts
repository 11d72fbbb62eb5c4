export interface Cached<V> {
  value: V;
  /** When value was read from PostgreSQL (ms): the age bound counts from here. */
  readAt: number;
}

/**
 * Values read from PostgreSQL about a team (a key's context, the team's balance), kept in memory
 * so that a repeated read costs no SQL. Three things keep an entry honest: a notification naming
 * its team drops it (the caller hears them and calls invalidateTeam); while the LISTEN connection
 * is down nothing is cached or served, and each (re)connection starts empty, since notifications
 * sent meanwhile were missed; and no entry is served past maxAgeMs, the last line of defence.
 *
 * A read that began before an invalidation must not put back what the invalidation removed:
 * reads take a ticket first (`ticket()`), and `put` refuses a ticket older than the last
 * invalidation of the entry's team or of the whole cache.
 */
export class TeamCache<V extends { teamId: string }> {
  private readonly entries = new Map<string, Cached<V>>();
  private readonly byTeam = new Map<string, Set<string>>();
  /** Sequence of invalidations; a ticket is its value when a read began. */
  private seq = 0;
  private clearedAt = 0;
  private readonly teamInvalidatedAt = new Map<string, number>();
  private live = false;

  constructor(
    private readonly maxAgeMs: number,
    private readonly maxEntries = 50_000,
    private readonly now: () => number = Date.now,
  ) {}

  /** Whether the cache is in use (its notifications can be heard). */
  get listening(): boolean {
    return this.live;
  }

  get size(): number {
    return this.entries.size;
  }

  /** The LISTEN connection is up (true) or lost (false): either way, what is cached may be stale. */
  setListening(live: boolean): void {
    this.live = live;
    this.clear();
  }

  ticket(): number {
    return this.seq;
  }

  get(key: string): Cached<V> | null {
    if (!this.live) return null;
    const e = this.entries.get(key);
    if (!e) return null;
    if (this.now() - e.readAt > this.maxAgeMs) {
      this.remove(key, e.value.teamId);
      return null;
    }
    return e;
  }

  /** Keeps a value read from PostgreSQL, unless an invalidation came after the read began. */
  put(key: string, value: V, ticket: number): void {
    if (!this.live || this.maxAgeMs <= 0 || ticket < this.clearedAt || ticket < (this.teamInvalidatedAt.get(value.teamId) ?? 0)) return;
    const old = this.entries.get(key);
    if (old) this.remove(key, old.value.teamId);
    // Past the bound, the oldest entry goes (Map keeps insertion order).
    if (this.entries.size >= this.maxEntries) {
      const oldest = this.entries.entries().next().value;
      if (oldest) this.remove(oldest[0], oldest[1].value.teamId);
    }
    this.entries.set(key, { value, readAt: this.now() });
    let keys = this.byTeam.get(value.teamId);
    if (!keys) this.byTeam.set(value.teamId, (keys = new Set()));
    keys.add(key);
  }

  /** Something about this team changed: its entries are read again on their next use. */
  invalidateTeam(teamId: string): void {
    this.seq += 1;
    // Tickets are compared with the team's last invalidation; past many teams, one clear does
    // the same for all of them and bounds this map.
    if (this.teamInvalidatedAt.size >= this.maxEntries) {
      this.clear();
      return;
    }
    this.teamInvalidatedAt.set(teamId, this.seq);
    const keys = this.byTeam.get(teamId);
    if (!keys) return;
    for (const k of keys) this.entries.delete(k);
    this.byTeam.delete(teamId);
  }

  clear(): void {
    this.seq += 1;
    this.clearedAt = this.seq;
    this.entries.clear();
    this.byTeam.clear();
    this.teamInvalidatedAt.clear();
  }

  private remove(key: string, teamId: string): void {
    this.entries.delete(key);
    const keys = this.byTeam.get(teamId);
    keys?.delete(key);
    if (keys && keys.size === 0) this.byTeam.delete(teamId);
  }
}
