import type { Logger } from 'pino';
import { logRefusal, OutboundError, outboundRequest, type OutboundResponse } from '../../net/outbound.js';
import { ToolError } from '../manifest.js';

/** Bounds on everything brand_kit_extract fetches for one run. */
export interface FetchLimits {
  pageBytes: number;
  /** One stylesheet (utility frameworks ship 3 MB ones). */
  stylesheetBytes: number;
  /** Every stylesheet of the run together. */
  stylesheetTotalBytes: number;
  /** Linked and @imported stylesheets together. */
  maxStylesheets: number;
  maxRedirects: number;
  /** One request, redirects included. */
  requestTimeoutMs: number;
  /** Every request of the run together (page, stylesheets, logos). */
  phaseMs: number;
  logoBytes: number;
  /** Logo and icon URLs tried (a failed one counts). */
  maxLogoFetches: number;
}

export const DEFAULT_FETCH_LIMITS: Readonly<FetchLimits> = Object.freeze({
  pageBytes: 2 * 1024 * 1024,
  stylesheetBytes: 4 * 1024 * 1024,
  stylesheetTotalBytes: 12 * 1024 * 1024,
  maxStylesheets: 10,
  maxRedirects: 3,
  requestTimeoutMs: 10_000,
  phaseMs: 20_000,
  logoBytes: 2 * 1024 * 1024,
  maxLogoFetches: 8,
});

export interface FetcherOptions {
  allowPrivate: boolean;
  /** The run's signal: a cancel stops every request at once. */
  signal: AbortSignal;
  limits: FetchLimits;
  /** Tests only: which addresses count as allowed (see outboundRequest). */
  allowAddress?: (ip: string) => boolean;
  /** The run's logger: gets the cause of a refused host, which the run's error and warnings do not say. */
  logger: Pick<Logger, 'warn'>;
}

function hostOf(url: string): string | null {
  try {
    return new URL(url).hostname;
  } catch {
    return null;
  }
}

const seconds = (ms: number) => `${Math.round(ms / 100) / 10} s`;

/**
 * Outbound GETs for one run on the shared outbound rules (public addresses only unless private
 * networks are allowed, pinned connections, re-vetted redirects), each bounded in bytes and time,
 * all of them together bounded by one time budget.
 */
export class Fetcher {
  readonly limits: FetchLimits;
  private readonly deadline: number;
  private readonly signal: AbortSignal;
  private readonly allowPrivate: boolean;
  private readonly allowAddress: ((ip: string) => boolean) | undefined;
  private readonly logger: Pick<Logger, 'warn'>;

  constructor(opts: FetcherOptions) {
    this.logger = opts.logger;
    this.limits = opts.limits;
    this.deadline = Date.now() + opts.limits.phaseMs;
    this.signal = AbortSignal.any([opts.signal, AbortSignal.timeout(opts.limits.phaseMs)]);
    this.allowPrivate = opts.allowPrivate;
    this.allowAddress = opts.allowAddress;
  }

  remainingMs(): number {
    return this.deadline - Date.now();
  }

  async get(url: string, maxBytes: number, accept: string): Promise<OutboundResponse> {
    const remaining = this.remainingMs();
    if (remaining <= 0 || this.signal.aborted) {
      throw new OutboundError('timeout', `the ${seconds(this.limits.phaseMs)} budget for fetching was spent`);
    }
    const timeoutMs = Math.min(this.limits.requestTimeoutMs, remaining);
    try {
      return await outboundRequest(url, {
        allowPrivate: this.allowPrivate,
        timeoutMs,
        maxBytes,
        maxRedirects: this.limits.maxRedirects,
        headers: { accept, 'user-agent': 'toolrun-brand-kit/1' },
        signal: this.signal,
        ...(this.allowAddress ? { allowAddress: this.allowAddress } : {}),
      });
    } catch (err) {
      logRefusal(this.logger, err, { url_host: hostOf(url) });
      if (err instanceof OutboundError && err.code === 'timeout') {
        const phase = this.remainingMs() <= 0;
        throw new OutboundError('timeout', phase ? `the ${seconds(this.limits.phaseMs)} budget for fetching was spent` : `no complete answer within ${seconds(timeoutMs)}`);
      }
      throw err;
    }
  }
}

const MB = (n: number) => `${Math.round((n / 1024 / 1024) * 10) / 10} MB`;

/** The run's error for a page that could not be fetched: what went wrong, in the user's terms. */
export function pageError(url: string, err: unknown, limits: FetchLimits): ToolError {
  if (!(err instanceof OutboundError)) return new ToolError(`Could not fetch the page ${url}.`);
  switch (err.code) {
    case 'url_not_public':
      return new ToolError(`The url is not public: ${err.message}. Only pages on the public internet can be read.`);
    case 'too_large':
      return new ToolError(`The page ${url} is larger than the ${MB(limits.pageBytes)} limit.`);
    case 'too_many_redirects':
      return new ToolError(`The page ${url} redirects more than ${limits.maxRedirects} times.`);
    case 'timeout':
      return new ToolError(`The page ${url} did not answer in time (${err.message}).`);
    default:
      return new ToolError(`Could not fetch the page ${url}: ${err.message}.`);
  }
}

/** Text of a response in the charset its Content-Type (or a <meta charset> near the top) names. */
export function decodeText(res: OutboundResponse): string {
  const fromHeader = /charset=["']?([\w-]+)/i.exec(String(res.headers['content-type'] ?? ''))?.[1];
  const fromMeta = /<meta[^>]+charset=["']?([\w-]+)/i.exec(res.body.subarray(0, 2048).toString('latin1'))?.[1];
  for (const label of [fromHeader, fromMeta, 'utf-8']) {
    if (!label) continue;
    try {
      return new TextDecoder(label).decode(res.body);
    } catch {
      // an unknown charset label: try the next
    }
  }
  return res.body.toString('utf8');
}

export function statusOk(res: OutboundResponse): boolean {
  return res.status >= 200 && res.status < 300;
}
