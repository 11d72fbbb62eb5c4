import http from 'node:http';
import https from 'node:https';
import type { Readable, Transform } from 'node:stream';
import zlib from 'node:zlib';
import type { Logger } from 'pino';
import { isPublicAddress } from './addresses.js';
import { pinnedLookup, type AgentPool } from './agents.js';
import { resolveHost, type ResolvedAddress, type ResolverFactory } from './resolve.js';

export type OutboundErrorCode =
  | 'bad_url'
  /** The host has no address, or one that is not public: one code, so callers cannot tell which. */
  | 'url_not_public'
  | 'connection_failed'
  | 'timeout'
  | 'too_large'
  | 'too_many_redirects'
  | 'bad_encoding';

/**
 * Why an outbound request was refused or failed. `message` is fit to show a user; `detail` is for
 * the log only: where the message is kept vague on purpose (a name that does not resolve reads
 * like one that resolves to an internal address, so callers cannot map internal names), it says
 * which it was.
 */
export class OutboundError extends Error {
  readonly detail: string;

  constructor(
    readonly code: OutboundErrorCode,
    message: string,
    detail?: string,
  ) {
    super(message);
    this.name = 'OutboundError';
    this.detail = detail ?? message;
  }
}

/** Logs the specific cause behind a refusal whose message does not say it; other errors are not logged here. */
export function logRefusal(logger: Pick<Logger, 'warn'>, err: unknown, fields: Record<string, unknown> = {}): void {
  if (err instanceof OutboundError && err.code === 'url_not_public') logger.warn({ ...fields, cause: err.detail }, 'outbound host refused');
}

export interface OutboundOptions {
  /** Tests only (refused in production by the config): lets loopback and private hosts through. */
  allowPrivate: boolean;
  /** Whole request, DNS and redirects included. */
  timeoutMs: number;
  maxBytes: number;
  /** 0: a redirect is returned as the response, never followed. */
  maxRedirects: number;
  method?: 'GET' | 'POST' | 'HEAD';
  headers?: Record<string, string>;
  body?: Buffer;
  signal?: AbortSignal;
  /** HTTPS only (webhooks); otherwise http and https. */
  httpsOnly?: boolean;
  /** Keep only this many body bytes and stop reading (the status still counts): webhooks need an excerpt. */
  truncateAt?: number;
  /** Replaces the public-address rule (tests: allow one loopback address, refuse the rest). */
  allowAddress?: (ip: string) => boolean;
  /** The DNS resolver for each host name (default: c-ares on the system's servers). */
  resolver?: ResolverFactory;
  /** Keep-alive connections per host, port and vetted address (default: a new connection each). */
  agents?: AgentPool;
  /**
   * Told the size of each body chunk (decoded) before it is kept; throwing an OutboundError
   * fails the request with it. For a budget several requests share (the render proxy), counted
   * as the bytes arrive rather than once a whole body is in.
   */
  onChunk?: (bytes: number) => void;
}

export interface OutboundResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  /** The URL finally answered (after redirects). */
  url: string;
  /** The address actually connected to. */
  address: string;
}

export interface VetOptions {
  allowPrivate: boolean;
  allowAddress?: ((ip: string) => boolean) | undefined;
  resolver?: ResolverFactory | undefined;
  /** Stops the resolution (the request's deadline); an abort is a `timeout`. */
  signal: AbortSignal;
  /** For the timeout message. */
  timeoutMs: number;
}

const timedOut = (ms: number) => new OutboundError('timeout', `no complete answer within ${ms} ms`);

/** Resolves the host and vets every address; returns the one to connect to (IPv4 first). */
export async function vetHost(hostname: string, opts: VetOptions): Promise<ResolvedAddress> {
  const bare = hostname.replace(/^\[|\]$/g, '');
  // Made only on refusal: an Error captures a stack, and most hosts pass.
  const refused = (detail: string) => new OutboundError('url_not_public', `the host ${bare} does not resolve to a public address`, detail);
  const outcome = await resolveHost(bare, opts.signal, opts.resolver);
  switch (outcome.kind) {
    case 'aborted':
      throw timedOut(opts.timeoutMs);
    case 'timeout':
      throw new OutboundError('timeout', `the host ${bare} did not resolve in time`);
    case 'none':
      throw refused(`the host ${bare} does not resolve (A: ${outcome.codes[0]}, AAAA: ${outcome.codes[1]})`);
    case 'addresses':
      break;
  }
  const { addresses } = outcome;
  const allowed = opts.allowAddress ?? isPublicAddress;
  // Every answer must be public: otherwise a name could mix a public and an internal address.
  const internal = opts.allowPrivate ? [] : addresses.filter((a) => !allowed(a.address));
  if (internal.length) {
    throw refused(`the host ${bare} resolves to ${internal.map((a) => a.address).join(', ')}: private, loopback or reserved`);
  }
  return addresses[0]!;
}

export function parseOutboundUrl(raw: string, httpsOnly: boolean): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new OutboundError('bad_url', 'not an absolute URL');
  }
  const allowed = httpsOnly ? ['https:'] : ['http:', 'https:'];
  if (!allowed.includes(url.protocol)) throw new OutboundError('bad_url', `only ${allowed.join(' and ')} URLs are allowed`);
  if (url.username || url.password) throw new OutboundError('bad_url', 'URLs with credentials are not allowed');
  return url;
}

/**
 * Decoders for the content codings a server may send even unasked (we never send
 * Accept-Encoding). They stream, so the byte limit counts decoded bytes as they come and a
 * compression bomb is stopped at maxBytes instead of expanding whole.
 */
const DECODERS: Record<string, () => Transform> = {
  gzip: () => zlib.createGunzip(),
  'x-gzip': () => zlib.createGunzip(),
  deflate: () => zlib.createUnzip(),
  br: () => zlib.createBrotliDecompress(),
};

/** A reused keep-alive socket failed before any answer: the server had closed it meanwhile. */
class StaleSocket extends Error {}

const STALE_CODES = new Set(['ECONNRESET', 'EPIPE', 'ECONNABORTED']);

function once(url: URL, address: ResolvedAddress, opts: OutboundOptions, signal: AbortSignal, agent: http.Agent | false): Promise<OutboundResponse> {
  // The socket connects to the address we vetted, never to a second DNS answer (a pooled agent
  // pins its own lookup the same way); TLS still checks the certificate against the host name.
  const lookup = pinnedLookup(address);
  const mod = url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    let answered = false;
    const req = mod.request(
      url,
      {
        method: opts.method ?? 'GET',
        headers: { ...(opts.body ? { 'content-length': String(opts.body.length) } : {}), ...opts.headers },
        lookup,
        signal,
        agent,
      },
      (res) => {
        answered = true;
        const chunks: Buffer[] = [];
        let size = 0;
        let settled = false;
        const finish = () => {
          if (settled) return;
          settled = true;
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks), url: url.toString(), address: address.address });
        };
        let decoder: Transform | null = null;
        // Rejects here: once the response has ended (a decoder failing at its end), destroying
        // the request emits no error to settle on.
        const fail = (err: OutboundError) => {
          if (settled) return;
          settled = true;
          decoder?.destroy();
          req.destroy();
          reject(err);
        };
        const coding = String(res.headers['content-encoding'] ?? '').trim().toLowerCase();
        let body: Readable = res;
        if (coding !== '' && coding !== 'identity') {
          decoder = DECODERS[coding]?.() ?? null;
          if (!decoder) {
            fail(new OutboundError('bad_encoding', `the response is encoded as "${coding.slice(0, 40)}", which cannot be read`));
            return;
          }
          decoder.on('error', () => fail(new OutboundError('bad_encoding', `the response claims ${coding} encoding but does not decode as it`)));
          body = res.pipe(decoder);
          // Cut off (timeout, cancel): stop inflating what was already buffered.
          res.once('close', () => {
            if (!res.complete) decoder?.destroy();
          });
        }
        body.on('data', (c: Buffer) => {
          if (settled) return;
          size += c.length;
          if (opts.truncateAt !== undefined && size >= opts.truncateAt) {
            chunks.push(c);
            finish();
            req.destroy();
            return;
          }
          if (size > opts.maxBytes) {
            fail(new OutboundError('too_large', `the response is larger than ${opts.maxBytes} bytes`));
            return;
          }
          if (opts.onChunk) {
            try {
              opts.onChunk(c.length);
            } catch (err) {
              fail(err instanceof OutboundError ? err : new OutboundError('too_large', 'the response is over its budget'));
              return;
            }
          }
          chunks.push(c);
        });
        body.on('end', finish);
        res.on('error', reject);
      },
    );
    req.on('error', (err) => {
      if (err instanceof OutboundError) reject(err);
      else if (req.reusedSocket && !answered && !signal.aborted && STALE_CODES.has((err as NodeJS.ErrnoException).code ?? '')) reject(new StaleSocket());
      else if (signal.aborted) reject(timedOut(opts.timeoutMs));
      else reject(new OutboundError('connection_failed', `connection failed: ${(err as NodeJS.ErrnoException).code ?? err.message}`));
    });
    req.end(opts.body);
  });
}

/**
 * One outbound HTTP request on the rules for fetching what users name (brand-kit pages, webhook
 * endpoints): public addresses only (every DNS answer vetted, the connection pinned to the vetted
 * address), every redirect re-vetted, bounded in time (resolution included) and bytes. With
 * `agents`, connections are kept alive for the next request to the same host, port and vetted
 * address; a request that finds its reused connection closed by the server before any answer
 * is sent once more on a new connection.
 */
export async function outboundRequest(rawUrl: string, opts: OutboundOptions): Promise<OutboundResponse> {
  const { signal, end } = deadline(opts.timeoutMs, opts.signal);
  try {
    return await follow(parseOutboundUrl(rawUrl, opts.httpsOnly ?? false), opts, signal);
  } finally {
    end();
  }
}

/**
 * One signal for the request's deadline and the caller's signal: a timer and a listener that
 * `end` removes (cheaper per request than AbortSignal.timeout joined by AbortSignal.any).
 */
function deadline(timeoutMs: number, outer: AbortSignal | undefined): { signal: AbortSignal; end: () => void } {
  const controller = new AbortController();
  const abort = () => controller.abort();
  // Like AbortSignal.timeout's: the request's socket, not this timer, keeps the process alive.
  const timer = setTimeout(abort, timeoutMs).unref();
  if (outer?.aborted) abort();
  else outer?.addEventListener('abort', abort, { once: true });
  return {
    signal: controller.signal,
    end: () => {
      clearTimeout(timer);
      outer?.removeEventListener('abort', abort);
    },
  };
}

async function follow(first: URL, opts: OutboundOptions, signal: AbortSignal): Promise<OutboundResponse> {
  let url = first;
  for (let hop = 0; ; hop++) {
    const address = await vetHost(url.hostname, { ...opts, signal });
    if (signal.aborted) throw timedOut(opts.timeoutMs);
    const agent = opts.agents?.agentFor(url, address) ?? false;
    let res: OutboundResponse;
    try {
      res = await once(url, address, opts, signal, agent);
    } catch (err) {
      if (!(err instanceof StaleSocket)) throw err;
      // Once, on a new connection of its own, within the same deadline.
      res = await once(url, address, opts, signal, false);
    }
    const location = res.headers.location;
    if (opts.maxRedirects === 0 || res.status < 300 || res.status >= 400 || !location) return res;
    if (hop >= opts.maxRedirects) throw new OutboundError('too_many_redirects', `more than ${opts.maxRedirects} redirects`);
    url = parseOutboundUrl(new URL(location, url).toString(), opts.httpsOnly ?? false);
  }
}
