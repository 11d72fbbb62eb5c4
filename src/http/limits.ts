import { randomUUID } from 'node:crypto';
import type { ServerOptions } from 'node:http';
import { Socket } from 'node:net';
import { PassThrough, type Readable } from 'node:stream';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { HttpTimeoutsConfig } from '../config/config.js';
import { ApiError, envelope, invalidRequest } from '../core/errors.js';

/**
 * Bounds on slow and oversized clients, applied to the one HTTP server of the app:
 * - Node's own timers: headers must arrive within `headersMs` (an idle new connection too), an
 *   idle keep-alive connection is closed after `keepAliveMs`, and no request may take longer
 *   than the largest per-route bound to arrive (a backstop);
 * - a JSON body must arrive within `requestMs` of the request's start, and a part upload within
 *   `partMs` with no pause longer than `requestMs` (BoundedBody);
 * - a response sent before its request was fully received closes the connection (lingering:
 *   see lingeringClose), so a client is never left to trickle the rest of a refused body;
 * - compressed request bodies are refused (415) before a byte of them is read;
 * - what Node answers itself (timeouts, oversized headers, bad HTTP) is in the JSON envelope.
 */

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route reads its body itself (raw part uploads) and bounds it itself: no JSON-body hooks. */
    rawBody?: boolean;
  }
}

/** Fastify server options for the timeouts (spread into the Fastify constructor's options). */
export function connectionOptions(t: HttpTimeoutsConfig): {
  requestTimeout: number;
  keepAliveTimeout: number;
  http: ServerOptions;
  clientErrorHandler: (this: FastifyInstance, err: NodeJS.ErrnoException, socket: Socket) => void;
} {
  const backstop = Math.max(t.requestMs, t.partMs);
  return {
    requestTimeout: backstop,
    keepAliveTimeout: t.keepAliveMs,
    http: {
      headersTimeout: t.headersMs,
      requestTimeout: backstop,
      // Node looks for expired headers and requests on this period (30 s by default), so the
      // timeouts above would otherwise be late by up to that much.
      connectionsCheckingInterval: Math.max(25, Math.min(1000, Math.floor(t.headersMs / 4))),
      // Node would answer a missing Host itself (a bare 400, no envelope, no request id); the
      // onRequest hook in applyRequestLimits refuses it instead, in the envelope.
      requireHostHeader: false,
    },
    clientErrorHandler,
  };
}

export function requestTimeoutError(): ApiError {
  return new ApiError('request_timeout', 'The request did not arrive in time; the connection is closed. Send it again, at a steady pace.');
}

/**
 * Errors Node's HTTP parser and timers raise before Fastify sees a request. Answered in the
 * envelope (with a fresh request id) when no response is under way, then the socket is closed.
 */
function clientErrorHandler(this: FastifyInstance, err: NodeJS.ErrnoException, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const apiError =
    err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? requestTimeoutError()
      : err.code === 'HPE_HEADER_OVERFLOW'
        ? new ApiError('headers_too_large', 'The request headers are larger than the service accepts (16 KiB).')
        : new ApiError('bad_request', 'The request is not valid HTTP/1.1.');
  // Node reports an expired request again at each check until the socket is gone: answer once.
  if (lingering.has(socket)) return;
  const requestId = randomUUID();
  this.log.info({ request_id: requestId, code: apiError.code, reason: err.code ?? err.message }, 'connection refused');
  // As Node itself does: never write into a response that has started (it would corrupt it).
  const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (socket.writable && !inFlight?.headersSent) {
    const body = JSON.stringify(envelope(apiError, requestId));
    socket.write(
      `HTTP/1.1 ${apiError.status} ${statusText(apiError.status)}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nX-Request-Id: ${requestId}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  lingeringClose(socket);
}

/** How long a connection answered before its request arrived in full stays open before it is destroyed. */
export const LINGER_MS = 2000;
const lingering = new WeakSet<Socket>();

/**
 * Closes a connection whose client may still be sending: stops reading, sends FIN after the
 * answer, and destroys the socket LINGER_MS later. Destroying at once (what Node does after
 * `Connection: close`) resets a connection that still has unread bytes, and a reset can destroy
 * the answer before the client reads it: the client would see a dropped connection instead of
 * its 408 or 413. Nothing more is read meanwhile, so a hostile client costs nothing.
 */
export function lingeringClose(socket: Socket): void {
  if (socket.destroyed || lingering.has(socket)) return;
  lingering.add(socket);
  socket.pause();
  socket.end();
  const timer = setTimeout(() => socket.destroy(), LINGER_MS);
  socket.once('close', () => clearTimeout(timer));
}

function statusText(status: number): string {
  return status === 408 ? 'Request Timeout' : status === 431 ? 'Request Header Fields Too Large' : 'Bad Request';
}

/** Deeper than any body of the API needs (4 levels), shallow enough for every recursive walk. */
export const MAX_JSON_DEPTH = 64;

/**
 * Refuses JSON text nesting arrays and objects deeper than MAX_JSON_DEPTH, in one pass over the
 * text before it is parsed: code that walks a body recursively (validation, hashing, logging)
 * must never meet 100,000 levels.
 */
export function jsonDepthError(text: string): ApiError | null {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > MAX_JSON_DEPTH) {
        return invalidRequest([{ loc: ['body'], message: `nests arrays and objects more than ${MAX_JSON_DEPTH} levels deep`, code: 'too_deep' }]);
      }
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return null;
}

/** Methods whose bodies Fastify never reads. */
const BODILESS_METHODS = new Set(['GET', 'HEAD', 'TRACE']);

function hasBody(request: FastifyRequest): boolean {
  return request.headers['transfer-encoding'] !== undefined || Number(request.headers['content-length'] ?? 0) > 0;
}

/**
 * The hooks of the JSON routes: compressed bodies refused, a deadline on the body, closing early
 * answers. They run on every request, so they are plain callbacks: an async hook costs a promise
 * and a turn of the microtask queue each, which showed in the authenticated request's throughput.
 */
export function applyRequestLimits(app: FastifyInstance, t: HttpTimeoutsConfig): void {
  app.addHook('onRequest', (request, _reply, done) => {
    // RFC 9112: an HTTP/1.1 request without Host is refused with 400.
    if (request.raw.httpVersion === '1.1' && request.headers.host === undefined) {
      return done(new ApiError('bad_request', 'HTTP/1.1 requests need a Host header.'));
    }
    done();
  });
  app.addHook('preParsing', (request, reply, payload, done) => {
    // GET, HEAD and TRACE bodies are never read (Fastify skips them), so there is nothing to refuse.
    // Cheapest test first: most requests have no body, and routeOptions builds an object per call.
    if (!hasBody(request) || BODILESS_METHODS.has(request.method) || request.routeOptions.config.rawBody) return done(null, payload);
    const coding = String(request.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
    if (coding !== 'identity' && coding !== '') {
      // Decompressing would let a small body expand without bound; JSON bodies are small anyway.
      return done(new ApiError('unsupported_media_type', `Request bodies are not accepted compressed (Content-Encoding: ${coding}); send the JSON as it is.`));
    }
    const body = boundedBody(request.raw, { totalMs: t.requestMs - reply.elapsedTime, idleMs: null });
    // A body nobody read (refused after preParsing, say 415 for its Content-Type) would otherwise
    // keep its stream and deadline timer for requestMs after the answer (found by the fuzzer).
    // A listener of this response only: an onResponse hook made Fastify listen on every one.
    reply.raw.once('close', () => body.destroy());
    done(null, body);
  });
  // Answered before the whole request arrived (refused early, or timed out): whatever the client
  // still sends is not read, and the connection is closed once the answer is out. The client is
  // told (`Connection: close`), but Node's way of closing after it (destroySoon: destroy as soon
  // as the answer is flushed) can reset the answer away, so this socket closes by lingering.
  app.addHook('onSend', (request, reply, payload, done) => {
    if (answeredEarly(request)) {
      reply.header('Connection', 'close');
      const socket = request.raw.socket;
      socket.destroySoon = () => lingeringClose(socket);
      // In case Node closed another way: lingeringClose does nothing to a socket it already has.
      reply.raw.once('close', () => {
        if (answeredEarly(request)) lingeringClose(socket);
      });
    }
    done(null, payload);
  });
}

/** A request on a real connection that was answered before all of it arrived (never an injected one). */
function answeredEarly(request: FastifyRequest): boolean {
  // Without a body the request is whole once its head is parsed, but Node marks it complete only
  // after the handlers that head started return: a bodiless request answered synchronously (a
  // 401 from the key check, GET /v1/me with the balance in memory) is not answered early.
  return request.raw.socket instanceof Socket && !request.raw.complete && hasBody(request);
}

/**
 * The request body as a stream that fails with 408 request_timeout when it has not ended within
 * totalMs, or (idleMs) when no byte came for that long. The request itself is only unpiped, not
 * destroyed, so the 408 can still be answered on its connection.
 */
export function boundedBody(source: Readable, limits: { totalMs: number; idleMs: number | null }): Readable {
  const out = new PassThrough({ highWaterMark: 64 * 1024 });
  // The connection can be gone already (Node refused bad framing while the key was being checked):
  // its 'close' has fired and will not again, so a deadline set now would only linger.
  if (source.destroyed) {
    out.on('error', () => undefined);
    return out.destroy(Object.assign(new Error('the client closed the connection mid-body'), { code: 'ECONNRESET' }));
  }
  let total: NodeJS.Timeout | undefined;
  let idle: NodeJS.Timeout | undefined;
  const stop = (err: Error | null) => {
    clearTimeout(total);
    clearTimeout(idle);
    source.off('data', onData);
    if (err) {
      source.unpipe(out);
      out.destroy(err);
    }
  };
  const onData = () => {
    if (limits.idleMs === null) return;
    // Once a chunk: restarting the one timer costs far less than a new one (16,000 a GiB).
    if (idle) idle.refresh();
    else idle = setTimeout(() => stop(requestTimeoutError()), limits.idleMs);
  };
  total = setTimeout(() => stop(requestTimeoutError()), Math.max(0, limits.totalMs));
  onData();
  source.on('data', onData);
  source.once('end', () => stop(null));
  source.once('error', (err) => stop(err));
  // A client that goes away mid-body: the reader learns at once instead of at the deadline.
  source.once('close', () => {
    if (!source.readableEnded) stop(Object.assign(new Error('the client closed the connection mid-body'), { code: 'ECONNRESET' }));
  });
  out.once('close', () => stop(null));
  // A reader that gave up (say, at the body limit) no longer listens; a late error must not crash.
  out.on('error', () => undefined);
  source.pipe(out);
  return out;
}

/**
 * How far boundedChunks reads ahead of its reader, in bytes: the socket is paused at QUEUE_HIGH
 * and resumed below QUEUE_LOW. Counted in bytes, not chunks, so the bound holds whatever size the
 * socket's chunks are. Pausing at 4 chunks (256 KiB) and resuming below 2 paused the socket around
 * every write batch: that cost a 512 MiB upload ~0.9 s more server CPU (2.16 s against 1.24 s,
 * interleaved runs; decisions-upload2.md). 4 MiB saved nothing more.
 */
const QUEUE_HIGH = 1024 * 1024;
const QUEUE_LOW = 256 * 1024;

/**
 * The same bounds as boundedBody for a body read chunk by chunk (part uploads), without a stream
 * in between: each chunk comes straight from the request (a PassThrough cost ~15% of an upload's
 * time). Throws 408 request_timeout past totalMs or after idleMs without a byte, and an
 * ECONNRESET error when the client goes away mid-body. The request is paused, never destroyed,
 * when the reader stops early or times out, so an answer can still be sent on its connection.
 */
export async function* boundedChunks(source: Readable, limits: { totalMs: number; idleMs: number }): AsyncGenerator<Buffer, void, undefined> {
  const gone = () => Object.assign(new Error('the client closed the connection mid-body'), { code: 'ECONNRESET' });
  if (source.destroyed) throw gone();
  const queue: Buffer[] = [];
  let ended = false;
  let failure: Error | null = null;
  let wake: (() => void) | null = null;
  const notify = () => {
    const w = wake;
    wake = null;
    w?.();
  };
  const fail = (err: Error) => {
    failure ??= err;
    notify();
  };
  const total = setTimeout(() => fail(requestTimeoutError()), Math.max(0, limits.totalMs));
  const idle = setTimeout(() => fail(requestTimeoutError()), limits.idleMs);
  let queued = 0;
  const onData = (chunk: Buffer) => {
    idle.refresh();
    queue.push(chunk);
    queued += chunk.length;
    // At most about QUEUE_HIGH ahead of the reader; the socket waits meanwhile.
    if (queued >= QUEUE_HIGH) source.pause();
    notify();
  };
  const onEnd = () => {
    ended = true;
    notify();
  };
  const onClose = () => {
    if (!source.readableEnded) fail(gone());
  };
  source.on('data', onData);
  source.once('end', onEnd);
  source.once('error', fail);
  source.once('close', onClose);
  try {
    for (;;) {
      if (failure) throw failure;
      const chunk = queue.shift();
      if (chunk) {
        queued -= chunk.length;
        if (queued < QUEUE_LOW && source.isPaused() && !ended) source.resume();
        yield chunk;
        continue;
      }
      if (ended) return;
      await new Promise<void>((resolve) => (wake = resolve));
    }
  } finally {
    clearTimeout(total);
    clearTimeout(idle);
    source.off('data', onData);
    source.off('end', onEnd);
    source.off('error', fail);
    source.off('close', onClose);
    if (!ended) source.pause();
  }
}
