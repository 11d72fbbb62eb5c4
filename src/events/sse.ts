import { PassThrough } from 'node:stream';
import type { FastifyReply } from 'fastify';
import { Type } from 'typebox';

/** A comment line this often keeps proxies and load balancers (60 s idle timeouts) from cutting a quiet stream. */
export const HEARTBEAT_MS = 15_000;
/** What EventSource clients wait before reconnecting (the `retry:` field sent first). */
export const RECONNECT_MS = 2000;
/**
 * A client that reads nothing lets writes pile up in memory; past this many bytes unsent, its
 * stream is ended (it reconnects with Last-Event-ID, losing nothing).
 */
const MAX_BUFFERED_BYTES = 256 * 1024;

export interface SseEvent {
  id: string;
  event: string;
  /** One line of JSON (JSON.stringify never writes a newline). */
  data: string;
}

export interface SseStream {
  send(e: SseEvent): void;
  /** Ends the response (idempotent). */
  end(): void;
  /** True once ended, by us or by the client leaving. */
  readonly ended: boolean;
  /** Resolves when the stream has ended, whoever ended it. */
  readonly done: Promise<void>;
}

/**
 * Starts a text/event-stream answer on this reply. Fastify sends it like any stream, so the
 * usual hooks still run (X-Request-Id and RateLimit headers, Connection: close while closing,
 * the request's log line when it ends).
 */
export function openSse(reply: FastifyReply, opts: { heartbeatMs?: number } = {}): SseStream {
  const body = new PassThrough();
  let ended = false;
  let finish: () => void = () => undefined;
  const done = new Promise<void>((resolve) => (finish = resolve));
  const heartbeat = setInterval(() => write(': heartbeat\n\n'), opts.heartbeatMs ?? HEARTBEAT_MS);
  const close = () => {
    if (ended) return;
    ended = true;
    clearInterval(heartbeat);
    body.end();
    finish();
  };
  const write = (text: string) => {
    if (ended) return;
    if (body.writableLength > MAX_BUFFERED_BYTES) return close();
    body.write(text);
  };
  reply.raw.once('close', close);
  body.once('close', close);
  reply
    .status(200)
    .header('content-type', 'text/event-stream; charset=utf-8')
    .header('cache-control', 'no-cache, no-transform')
    // nginx buffers proxied answers unless told not to, which would hold events back.
    .header('x-accel-buffering', 'no');
  // Written at once, so the status and headers reach the client before the first event does.
  body.write(`retry: ${RECONNECT_MS}\n\n`);
  void reply.send(body);
  return {
    send: (e) => write(`id: ${e.id}\nevent: ${e.event}\ndata: ${e.data}\n\n`),
    end: close,
    get ended() {
      return ended;
    },
    done,
  };
}

/** The OpenAPI description of a 200 event stream, for a route's response schema; `example` shows a few events. */
export function sseResponse(description: string, example: string) {
  return Type.Unsafe<string>({
    description,
    content: {
      'text/event-stream': {
        schema: { type: 'string', description: 'Server-sent events: id, event and data lines, a blank line after each; comment lines (":") are heartbeats' },
        example,
      },
    },
  });
}

/**
 * A single-threaded wake-up loop: `wake()` may be called any number of times (notifications);
 * `work` runs once per batch of wakes, never twice at once, until it returns false or `stop()`.
 * Failures go to `onError`, which decides (usually by ending the stream).
 */
export function wakeLoop(work: () => Promise<boolean>, onError: (err: unknown) => void): { wake(): void; stop(): void } {
  let pending = false;
  let running = false;
  let stopped = false;
  const run = async () => {
    running = true;
    try {
      while (pending && !stopped) {
        pending = false;
        if (!(await work())) stopped = true;
      }
    } catch (err) {
      stopped = true;
      onError(err);
    } finally {
      running = false;
    }
  };
  return {
    wake: () => {
      if (stopped) return;
      pending = true;
      if (!running) void run();
    },
    stop: () => {
      stopped = true;
    },
  };
}
