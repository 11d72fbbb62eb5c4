// An event stream read over a real socket, event by event as it arrives, for the stream
// tests: the status and headers, the parsed events (the SDK's parser), the raw text (heartbeats are
// comments, which the parser drops), and whether the server ended it.
import http from 'node:http';
import { parseSse, type SseMessage } from '@toolrun/sdk';
import { waitFor } from './process.js';

export interface OpenedStream {
  status: number;
  headers: Headers;
  /** The whole body when the answer is not a stream (errors, 204). */
  body: string;
  events: SseMessage[];
  raw(): string;
  /** True once the server ended the stream. */
  ended(): boolean;
  /** Waits until an event matches (or fails if the stream ends first). */
  next(pred: (e: SseMessage) => boolean, what: string, timeoutMs?: number): Promise<SseMessage>;
  /** Waits until the server ends the stream. */
  untilEnded(timeoutMs?: number): Promise<void>;
  close(): void;
  json<T>(): T;
}

export async function openStream(url: string, headers: Record<string, string>): Promise<OpenedStream> {
  // node:http with a connection of its own, not fetch: undici opens a spare connection when one
  // is aborted, and a server cannot close a connection that never sent a request (Node's
  // closeIdleConnections leaves it), so each test server's close would wait for it to time out.
  const req = http.get(url, { headers: { accept: 'text/event-stream', ...headers }, agent: false });
  const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
    req.once('response', resolve);
    req.once('error', reject);
  });
  req.on('error', () => undefined);
  const events: SseMessage[] = [];
  let raw = '';
  let ended = false;
  let body = '';
  const responseHeaders = new Headers();
  for (const [name, value] of Object.entries(res.headers)) if (value !== undefined) responseHeaders.set(name, Array.isArray(value) ? value.join(', ') : value);
  if (res.statusCode === 200 && String(res.headers['content-type'] ?? '').startsWith('text/event-stream')) {
    const decoder = new TextDecoder();
    async function* tee(): AsyncGenerator<Uint8Array> {
      for await (const chunk of res as AsyncIterable<Buffer>) {
        raw += decoder.decode(chunk, { stream: true });
        yield chunk;
      }
    }
    void (async () => {
      try {
        for await (const e of parseSse(tee())) events.push(e);
      } catch {
        // destroyed by close()
      }
      ended = true;
    })();
  } else {
    const chunks: Buffer[] = [];
    for await (const chunk of res as AsyncIterable<Buffer>) chunks.push(chunk);
    body = Buffer.concat(chunks).toString('utf8');
    ended = true;
  }
  const stream: OpenedStream = {
    status: res.statusCode ?? 0,
    headers: responseHeaders,
    body,
    events,
    raw: () => raw,
    ended: () => ended,
    async next(pred, what, timeoutMs = 30_000) {
      return waitFor(
        what,
        () => {
          const found = events.find(pred);
          if (found) return found;
          if (ended) throw new Error(`the stream ended before ${what}; events: ${JSON.stringify(events)}`);
          return null;
        },
        timeoutMs,
        10,
      );
    },
    async untilEnded(timeoutMs = 30_000) {
      await waitFor('the end of the stream', () => ended, timeoutMs, 10);
    },
    close: () => {
      req.destroy();
    },
    json: <T>() => JSON.parse(body) as T,
  };
  return stream;
}

/** The answer of a stream request that is not a stream, in the shape assertError reads. */
export function asAnswer(s: OpenedStream): { statusCode: number; body: string; headers: Record<string, string>; json<T>(): T } {
  return { statusCode: s.status, body: s.body, headers: Object.fromEntries(s.headers.entries()), json: s.json };
}
