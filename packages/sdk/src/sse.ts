// Server-sent events without a dependency: a parser for the text/event-stream format (the WHATWG
// HTML standard's rules) over fetch's body, and a reader that reconnects with Last-Event-ID the way
// EventSource does, with the SDK's errors and retry rules.
import { errorFromResponse, ToolrunError } from './errors.ts';
import { isRetryable, retryDelayMs, sleep, type Transport } from './http.ts';

export interface SseMessage {
  /** The last event id seen on the stream so far (an event without `id:` keeps the previous one). */
  id: string | null;
  /** `message` when the event names none. */
  event: string;
  data: string;
}

/**
 * Parses a text/event-stream body into its events. Comments (heartbeats) and `retry:` call
 * `onActivity` only; an event is dispatched at its blank line, and one with no data is not.
 */
export async function* parseSse(body: AsyncIterable<Uint8Array>, onActivity: () => void = () => undefined): AsyncGenerator<SseMessage> {
  const decoder = new TextDecoder('utf-8');
  let buffer = '';
  let first = true;
  let lastId: string | null = null;
  let event = '';
  let data: string[] = [];
  let sawData = false;
  for await (const chunk of body) {
    onActivity();
    buffer += decoder.decode(chunk, { stream: true });
    if (first && buffer.length > 0) {
      if (buffer.charCodeAt(0) === 0xfeff) buffer = buffer.slice(1);
      first = false;
    }
    for (;;) {
      const m = /\r\n|\r|\n/.exec(buffer);
      // A lone \r at the end may be the first half of \r\n: wait for the next chunk.
      if (!m || (m[0] === '\r' && m.index === buffer.length - 1)) break;
      const line = buffer.slice(0, m.index);
      buffer = buffer.slice(m.index + m[0].length);
      if (line === '') {
        if (sawData) yield { id: lastId, event: event || 'message', data: data.join('\n') };
        event = '';
        data = [];
        sawData = false;
        continue;
      }
      if (line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? '' : line.slice(colon + 1);
      if (value.startsWith(' ')) value = value.slice(1);
      if (field === 'data') {
        data.push(value);
        sawData = true;
      } else if (field === 'event') event = value;
      else if (field === 'id' && !value.includes('\u0000')) lastId = value;
    }
  }
  // An event not ended by a blank line when the stream ends is dropped, as the standard says.
}

export interface StreamOptions {
  signal?: AbortSignal;
  /** Resume after this event id (sent as Last-Event-ID on the first connection too). */
  lastEventId?: string;
  /** Silence (not even a heartbeat) this long means a dead connection: it is dropped and made again. Default 45000 ms. */
  idleTimeoutMs?: number;
  /** Failed connections in a row before giving up with the last error; default the client's maxRetries + 2. */
  maxReconnects?: number;
  /** Called each time the stream is open (the server answered 200): events from then on will come. */
  onOpen?: () => void;
  /** Called before waiting to try again after a failed connection (a refused connection, 429, 5xx). */
  onRetry?: (info: { error: ToolrunError; delayMs: number }) => void;
  /** Called when the stream is connected again after a drop (not on the first connection). */
  onReconnect?: (info: { lastEventId: string | null; attempt: number }) => void;
}

/**
 * Reads an event stream, reconnecting when it drops with the last id as Last-Event-ID, until the
 * server ends it with 204 (nothing more to send), `isLast` says an event was the last, or the
 * caller stops reading (or aborts). Errors before a stream starts are ToolrunErrors; the
 * retryable ones (connection failures, 429, 5xx) are retried with the SDK's delays.
 */
export async function* readEventStream(
  http: Transport,
  path: string,
  opts: StreamOptions & { isLast?: (m: SseMessage) => boolean; onResumeRefused?: (err: ToolrunError) => boolean },
): AsyncGenerator<SseMessage> {
  let lastId: string | null = opts.lastEventId ?? null;
  let failures = 0;
  let connections = 0;
  const maxReconnects = opts.maxReconnects ?? http.opts.maxRetries + 2;
  const idleMs = opts.idleTimeoutMs ?? 45_000;
  for (;;) {
    const ctl = new AbortController();
    const stop = () => ctl.abort(opts.signal?.reason);
    opts.signal?.addEventListener('abort', stop, { once: true });
    let idle: NodeJS.Timeout | undefined;
    const alive = (ms: number) => {
      clearTimeout(idle);
      idle = setTimeout(() => ctl.abort(new Error('idle')), ms);
    };
    try {
      if (opts.signal?.aborted) throw opts.signal.reason;
      let failure: ToolrunError | null = null;
      let res: globalThis.Response | null = null;
      alive(http.opts.timeoutMs);
      try {
        res = await http.opts.fetch(http.url(path), {
          method: 'GET',
          headers: {
            authorization: `Bearer ${http.opts.apiKey}`,
            accept: 'text/event-stream',
            'user-agent': http.opts.userAgent,
            ...(lastId !== null ? { 'last-event-id': lastId } : {}),
          },
          signal: ctl.signal,
        });
      } catch (err) {
        if (opts.signal?.aborted) throw opts.signal.reason;
        failure = new ToolrunError({ status: 0, code: 'connection_error', message: `Could not open ${path}`, cause: err });
      }
      if (res && res.status === 204) return;
      if (res && !res.ok) {
        failure = errorFromResponse(res.status, res.headers, await res.text().catch(() => ''));
        if (failure.status === 422 && lastId !== null && opts.onResumeRefused?.(failure)) {
          lastId = null;
          continue;
        }
      }
      if (res?.ok && res.body) {
        connections++;
        opts.onOpen?.();
        if (connections > 1) opts.onReconnect?.({ lastEventId: lastId, attempt: connections - 1 });
        failures = 0;
        alive(idleMs);
        try {
          for await (const m of parseSse(res.body, () => alive(idleMs))) {
            if (m.id !== null) lastId = m.id;
            yield m;
            if (opts.isLast?.(m)) return;
          }
        } catch (err) {
          if (opts.signal?.aborted) throw opts.signal.reason;
          // Dropped mid-stream: reconnected below, like a stream that simply ended.
        }
        await sleep(250, opts.signal);
        continue;
      }
      failure ??= new ToolrunError({ status: 0, code: 'invalid_response', message: `${path} answered without a body` });
      if (failures >= maxReconnects || !isRetryable('idempotent', failure)) throw failure;
      const delay = retryDelayMs(failure, failures++, http.opts);
      if (delay === null) throw failure;
      opts.onRetry?.({ error: failure, delayMs: delay });
      await sleep(delay, opts.signal);
    } finally {
      clearTimeout(idle);
      opts.signal?.removeEventListener('abort', stop);
      // The caller stopped reading (or it failed): the connection goes now, not at its idle timeout.
      ctl.abort();
    }
  }
}
