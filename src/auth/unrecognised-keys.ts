/** The answer to a lookup that would wait too long: retry later, at most this many a minute. */
export interface GateRefusal {
  retryAfterSeconds: number;
  /** This client's share of the gate's rate, per minute, when it was refused (at least 1). */
  limitPerMinute: number;
}

interface Waiter {
  /** When it has waited maxWaitMs: refused then, if its turn has not come. */
  deadline: number;
  done: (refusal: GateRefusal | null) => void;
}

/**
 * Keeps a flood of bad API keys from crowding out the keys in use, and one client's flood from
 * crowding out another's first requests. Every request still authenticates in PostgreSQL; this
 * only decides how fast lookups of keys this process has not seen authenticate recently may go:
 * at most `perSecond` a second in all (with a burst of one second's worth), and at most
 * maxInFlight at once (see lookupDone). Beyond that they wait,
 * in one queue per client, and the queues are served in turn (round robin), so each client with
 * lookups waiting gets an equal share whatever the others send. A lookup whose turn would come
 * later than `maxWaitMs` is refused at once (429); one still waiting after maxWaitMs (more clients
 * came to share the rate meanwhile) is refused then. Keys that did authenticate here in the last
 * `recentMs` skip all this.
 *
 * Only clients with lookups waiting are kept, and every lookup leaves within maxWaitMs, so memory
 * is bounded by the lookups that can arrive in that time, however many addresses they come from.
 *
 * What decides the lane is the hash of the whole key, so a valid key's prefix with a wrong secret
 * and an unknown prefix go exactly the same way (no timing difference between them).
 */
export class UnrecognisedKeyGate {
  private readonly recent = new Map<string, number>();
  private readonly capacity: number;
  private tokens: number;
  private countedAt = Date.now();
  /** Clients with lookups waiting, in the order they are served: the first goes next. */
  private readonly waiting = new Map<string, Waiter[]>();
  private waiters = 0;
  private timer: NodeJS.Timeout | null = null;
  private nextExpiry = 0;
  /** Lookups let through whose answer has not come yet (lookupDone). */
  private inFlight = 0;

  constructor(
    readonly perSecond: number,
    private readonly opts: { maxWaitMs?: number; recentMs?: number; maxRecent?: number; maxInFlight?: number } = {},
  ) {
    this.capacity = Math.max(1, perSecond);
    this.tokens = this.capacity;
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
    const recentMs = this.opts.recentMs ?? 10 * 60_000;
    // Renewed at most once per half of recentMs: re-inserting on every request of a busy key cost
    // more than the rest of its authentication. A key in use stays recent all the same.
    const until = this.recent.get(hash);
    if (until !== undefined && until - now > recentMs / 2) return;
    // A Map keeps insertion order: re-inserting moves the key to the end, and the oldest go first.
    this.recent.delete(hash);
    if (this.recent.size >= max) {
      const oldest = this.recent.keys().next();
      if (!oldest.done) this.recent.delete(oldest.value);
    }
    this.recent.set(hash, now + recentMs);
  }

  forget(hash: string): void {
    this.recent.delete(hash);
  }

  /** Lookups waiting for their turn, and the clients they come from. */
  get queued(): { lookups: number; clients: number } {
    return { lookups: this.waiters, clients: this.waiting.size };
  }

  /**
   * A lookup let through has its answer (or failed): its place among the lookups in flight is
   * free. At most maxInFlight (4) are in flight at once, whatever the rate allows: where lookups
   * are slow (a slower CPU, a busy database) fewer go, and they never hold more than that many of
   * the pool's connections, which the keys in use need for their token takes.
   */
  lookupDone(): void {
    this.inFlight = Math.max(0, this.inFlight - 1);
    if (this.waiters > 0) this.release();
  }

  private get maxInFlight(): number {
    return this.opts.maxInFlight ?? 4;
  }

  /**
   * Waits for this lookup's turn among `client`'s. Resolves null when it may go, or a refusal
   * when its turn is further away than maxWaitMs (it then takes no turn).
   */
  async admit(client: string): Promise<GateRefusal | null> {
    if (this.perSecond === 0) return null;
    this.refill();
    if (this.waiters === 0 && this.tokens >= 1 && this.inFlight < this.maxInFlight) {
      this.tokens -= 1;
      this.inFlight += 1;
      return null;
    }
    const queue = this.waiting.get(client);
    const clients = this.waiting.size + (queue ? 0 : 1);
    // Each round serves one lookup of every client that has one waiting, so this one's turn comes
    // within (its place in its own queue) rounds of at most `clients` lookups each.
    const turns = ((queue?.length ?? 0) + 1) * clients;
    const waitMs = ((turns - this.tokens) * 1000) / this.perSecond;
    if (waitMs > this.maxWaitMs) return this.refusal(waitMs, clients);
    const turn = new Promise<GateRefusal | null>((done) => {
      const waiter: Waiter = { deadline: Date.now() + this.maxWaitMs, done };
      if (queue) queue.push(waiter);
      else this.waiting.set(client, [waiter]);
    });
    this.waiters += 1;
    this.release();
    return turn;
  }

  private get maxWaitMs(): number {
    return this.opts.maxWaitMs ?? 2000;
  }

  private get expiryEveryMs(): number {
    return Math.max(10, this.maxWaitMs / 10);
  }

  private refusal(waitMs: number, clients: number): GateRefusal {
    return {
      retryAfterSeconds: Math.max(1, Math.ceil(waitMs / 1000)),
      limitPerMinute: Math.max(1, Math.floor((this.perSecond * 60) / clients)),
    };
  }

  private refill(now = Date.now()): void {
    this.tokens = Math.min(this.capacity, this.tokens + ((now - this.countedAt) * this.perSecond) / 1000);
    this.countedAt = now;
  }

  /** Lets waiting lookups go, one per client in turn, as long as there are tokens for them. */
  private release(): void {
    const now = Date.now();
    this.refill(now);
    this.expire(now);
    while (this.tokens >= 1 && this.inFlight < this.maxInFlight) {
      const next = this.waiting.entries().next();
      if (next.done) break;
      const [client, queue] = next.value;
      const waiter = queue.shift();
      // To the back of the line, if it has more waiting.
      this.waiting.delete(client);
      if (queue.length > 0) this.waiting.set(client, queue);
      if (!waiter) continue;
      this.waiters -= 1;
      this.tokens -= 1;
      this.inFlight += 1;
      waiter.done(null);
    }
    // With lookups in flight at the most, lookupDone releases the next; the timer still refuses
    // lookups that waited too long.
    if (this.waiters > 0 && !this.timer) {
      // Due when the next token is, or sooner at low rates: a lookup that waited too long is told
      // so within a tenth of maxWaitMs, not when a token comes.
      const dueMs = Math.max(1, Math.min(this.expiryEveryMs, Math.ceil(((1 - this.tokens) * 1000) / this.perSecond)));
      this.timer = setTimeout(() => {
        this.timer = null;
        this.release();
      }, dueMs);
    }
  }

  /**
   * Refuses lookups that waited maxWaitMs; each client's queue is in deadline order. It looks at
   * every waiting client, so at most ten times per maxWaitMs.
   */
  private expire(now: number): void {
    if (now < this.nextExpiry) return;
    this.nextExpiry = now + this.expiryEveryMs;
    for (const [client, queue] of this.waiting) {
      while (queue[0] && queue[0].deadline <= now) {
        const waiter = queue.shift();
        this.waiters -= 1;
        waiter?.done(this.refusal(1000, this.waiting.size));
      }
      if (queue.length === 0) this.waiting.delete(client);
    }
  }
}
