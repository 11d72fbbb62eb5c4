import pg from 'pg';
import type { Logger } from 'pino';

export interface ListenerOptions {
  connectionString: string;
  channels: string[];
  applicationName: string;
  logger: Logger;
  onNotification(channel: string, payload: string | undefined): void;
  /** Called after every (re)connection: notifications sent meanwhile were missed. */
  onConnected(): void;
  /** Called when the connection is lost: from now until onConnected, notifications are missed. */
  onDisconnected?(): void;
}

/**
 * A dedicated connection LISTENing on some channels, reconnected with backoff whenever it drops
 * (a database restart), for as long as it is not stopped. Workers also poll, so a gap in
 * notifications only slows them down.
 */
export class Listener {
  private client: pg.Client | null = null;
  private stopped = false;
  private retry: NodeJS.Timeout | null = null;

  constructor(private readonly opts: ListenerOptions) {}

  /** The first connection must succeed; later drops are retried in the background. */
  async start(): Promise<void> {
    await this.connect();
  }

  /** Like start, but a first connection that fails is retried in the background too. */
  async startOrRetry(): Promise<void> {
    try {
      await this.connect();
    } catch (err) {
      this.opts.logger.warn({ err }, 'notification connection failed; retrying');
      this.schedule(1000);
    }
  }

  private async connect(): Promise<void> {
    const client = new pg.Client({ connectionString: this.opts.connectionString, application_name: this.opts.applicationName });
    client.on('notification', (msg) => this.opts.onNotification(msg.channel, msg.payload));
    const lost = (err: Error | null) => {
      if (this.client !== client) return;
      this.opts.logger.warn({ err }, 'notification connection lost; reconnecting');
      this.client = null;
      this.opts.onDisconnected?.();
      void client.end().catch(() => undefined);
      this.schedule(1000);
    };
    client.on('error', lost);
    // A connection can also end without an error (the server closed it cleanly).
    client.on('end', () => lost(null));
    try {
      await client.connect();
      for (const channel of this.opts.channels) await client.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
    } catch (err) {
      await client.end().catch(() => undefined);
      throw err;
    }
    if (this.stopped) {
      await client.end().catch(() => undefined);
      return;
    }
    this.client = client;
    this.opts.onConnected();
  }

  private schedule(delayMs: number): void {
    if (this.stopped || this.retry) return;
    this.retry = setTimeout(() => {
      this.retry = null;
      this.connect().catch((err: unknown) => {
        this.opts.logger.warn({ err }, 'notification connection failed; retrying');
        this.schedule(Math.min(delayMs * 2, 10_000));
      });
    }, delayMs);
    this.retry.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.retry) clearTimeout(this.retry);
    const client = this.client;
    this.client = null;
    await client?.end().catch(() => undefined);
  }
}
