import type { KeyContext } from '../auth/repository.js';
import { ApiError } from '../core/errors.js';
import type { StreamHub } from './hub.js';

/** Seconds a client refused a stream is told to wait: streams end as runs finish, so places free up soon. */
const RETRY_AFTER_SECONDS = 5;

/**
 * Past the bound on open streams (per key, per process): 429 rate_limited in the envelope, with
 * the key's per-minute limit as every rate_limited answer carries, and the stream bound.
 */
export function streamsExhausted(auth: Pick<KeyContext, 'rateLimitPerMinute'>, hub: StreamHub): ApiError {
  const { perKey, perProcess } = hub.limits;
  return new ApiError(
    'rate_limited',
    `Too many open event streams: at most ${perKey} per API key and ${perProcess} per server. Close one, or retry in ${RETRY_AFTER_SECONDS} s.`,
    {
      details: { limit_per_minute: auth.rateLimitPerMinute, reason: 'too_many_streams', limit_streams_per_key: perKey },
      headers: { 'Retry-After': String(RETRY_AFTER_SECONDS) },
    },
  );
}
