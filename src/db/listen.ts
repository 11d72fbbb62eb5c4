import pg from 'pg';
import type { Logger } from 'pino';

export interface SubscriberOptions {
  channels: string[];
  onNotification(channel: string, payload: string | undefined): void;
  /** Called once this subscriber's channels are heard, and after every reconnection: notifications sent meanwhile were missed. */
  onConnected(): void;
  /** Called when the connection is lost: from now until onConnected, notifications are missed. */
  onDisconnected?(): void;
}

export interface Subscription {
  /** The first connection must succeed (else this throws and the subscription is dropped); later drops are retried in the background. */
  start(): Promise<void>;
  /** Like start, but a first connection that fails is retried in the background too. */
  startOrRetry(): Promise<void>;
  stop(): Promise<void>;
}

export interface NotificationHubOptions {
  connectionString: string;
  applicationName: string;
  logger: Logger;
}

/**
 * One dedicated connection per process LISTENing for every part of it (the API's key cache and
 * waits, the run worker, the webhook worker), reconnected with backoff whenever it drops (a
 * database restart) while anyone subscribes. One and not one per part: PostgreSQL signals every
 * listening backend on every NOTIFY of any channel, and each listener cost 0.10-0.15 ms of the
 * server's CPU per run (issue 37). Workers also poll, so a gap in notifications only slows them.
 */
export class NotificationHub {
  private client: pg.Client | null = null;
  /** Channels LISTENed on `client`. */
  private readonly heard = new Set<string>();
  private readonly subscribers = new Set<SubscriberOptions>();
  private connecting: Promise<void> | null = null;
  private retry: NodeJS.Timeout | null = null;
  private retryDelayMs = 1000;
  private closed = false;

  constructor(private readonly opts: NotificationHubOptions) {}

  subscribe(sub: SubscriberOptions): Subscription {
    const begin = async (retryOnFailure: boolean): Promise<void> => {
      if (this.closed) throw new Error('the notification connection is closed');
      this.subscribers.add(sub);
      try {
        await this.join(sub);
      } catch (err) {
        if (!retryOnFailure) {
          this.subscribers.delete(sub);
          throw err;
        }
        this.opts.logger.warn({ err }, 'notification connection failed; retrying');
        this.schedule();
      }
    };
    return {
      start: () => begin(false),
      startOrRetry: () => begin(true),
      stop: async () => {
        this.subscribers.delete(sub);
        if (this.subscribers.size === 0) await this.disconnect();
        else await this.unlistenUnwanted();
      },
    };
  }

  /** Stops listening for good (the process's database is closing). */
  async close(): Promise<void> {
    this.closed = true;
    this.subscribers.clear();
    await this.disconnect();
  }

  /** Makes sure sub's channels are heard on a live connection, then tells it so. */
  private async join(sub: SubscriberOptions): Promise<void> {
    const client = this.client;
    if (!client) {
      // A connection being made LISTENs for everyone subscribed when it completes, this one included.
      await this.connect();
      return;
    }
    await this.listenAll(client);
    // A connection lost meanwhile tells every subscriber on its return instead.
    if (this.client === client && this.subscribers.has(sub)) sub.onConnected();
  }

  private wanted(): Set<string> {
    const all = new Set<string>();
    for (const s of this.subscribers) for (const c of s.channels) all.add(c);
    return all;
  }

  /** LISTENs until every subscriber's channels are heard (subscribers may join during the awaits). */
  private async listenAll(client: pg.Client): Promise<void> {
    for (;;) {
      const missing = [...this.wanted()].filter((c) => !this.heard.has(c));
      if (missing.length === 0) return;
      for (const channel of missing) {
        await client.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
        this.heard.add(channel);
      }
    }
  }

  /**
   * UNLISTENs the channels no subscriber wants any more, so PostgreSQL stops signalling this
   * connection for them. `heard` loses a channel before its UNLISTEN is sent: a subscriber joining
   * for it meanwhile sends a LISTEN, which the connection runs after the UNLISTEN (one connection
   * runs its queries in order), so it ends up heard.
   */
  private async unlistenUnwanted(): Promise<void> {
    const client = this.client;
    if (!client) return;
    const wanted = this.wanted();
    const unwanted = [...this.heard].filter((c) => !wanted.has(c));
    for (const channel of unwanted) this.heard.delete(channel);
    try {
      for (const channel of unwanted) await client.query(`UNLISTEN ${pg.escapeIdentifier(channel)}`);
    } catch (err) {
      // The connection is going (its 'error' or 'end' reconnects, LISTENing only what is wanted).
      this.opts.logger.debug({ err }, 'UNLISTEN failed; the connection is being replaced');
    }
  }

  /** The channels the live connection LISTENs on, as PostgreSQL reports them (empty without one). */
  async listeningChannels(): Promise<string[]> {
    const client = this.client;
    if (!client) return [];
    const { rows } = await client.query<{ channel: string }>('SELECT pg_listening_channels() AS channel');
    return rows.map((r) => r.channel).sort();
  }

  private connect(): Promise<void> {
    this.connecting ??= this.open().finally(() => {
      this.connecting = null;
    });
    return this.connecting;
  }

  private async open(): Promise<void> {
    const client = new pg.Client({ connectionString: this.opts.connectionString, application_name: this.opts.applicationName });
    client.on('notification', (msg) => {
      if (this.client !== client) return;
      for (const s of this.subscribers) if (s.channels.includes(msg.channel)) s.onNotification(msg.channel, msg.payload);
    });
    const lost = (err: Error | null) => {
      if (this.client !== client) return;
      this.opts.logger.warn({ err }, 'notification connection lost; reconnecting');
      this.client = null;
      this.heard.clear();
      for (const s of this.subscribers) s.onDisconnected?.();
      void client.end().catch(() => undefined);
      this.schedule();
    };
    client.on('error', lost);
    // A connection can also end without an error (the server closed it cleanly).
    client.on('end', () => lost(null));
    this.heard.clear();
    try {
      await client.connect();
      await this.listenAll(client);
    } catch (err) {
      this.heard.clear();
      await client.end().catch(() => undefined);
      throw err;
    }
    if (this.closed || this.subscribers.size === 0) {
      this.heard.clear();
      await client.end().catch(() => undefined);
      return;
    }
    this.client = client;
    this.retryDelayMs = 1000;
    for (const s of this.subscribers) s.onConnected();
  }

  private schedule(): void {
    if (this.closed || this.retry || this.subscribers.size === 0) return;
    const delayMs = this.retryDelayMs;
    this.retry = setTimeout(() => {
      this.retry = null;
      if (this.client || this.subscribers.size === 0) return;
      this.connect().catch((err: unknown) => {
        this.opts.logger.warn({ err }, 'notification connection failed; retrying');
        this.retryDelayMs = Math.min(delayMs * 2, 10_000);
        this.schedule();
      });
    }, delayMs);
    this.retry.unref();
  }

  private async disconnect(): Promise<void> {
    if (this.retry) clearTimeout(this.retry);
    this.retry = null;
    const client = this.client;
    this.client = null;
    this.heard.clear();
    await client?.end().catch(() => undefined);
  }
}
