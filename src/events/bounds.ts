import type { KeyContext } from '../auth/repository.js';
import { ApiError } from '../core/errors.js';
import type { StreamHub } from './hub.js';

/** Seconds a client refused a stream is told to wait: streams end as runs finish, so places free up soon. */
const RETRY_AFTER_SECONDS = 5;

/**
 * Past a bound on open streams (per key, per team, per process): 429 rate_limited in the envelope,
 * with the key's per-minute limit as every rate_limited answer carries, and the stream bounds.
 */
export function streamsExhausted(auth: Pick<KeyContext, 'rateLimitPerMinute'>, hub: StreamHub): ApiError {
  const { perKey, perTeam, perProcess } = hub.limits;
  return new ApiError(
    'rate_limited',
    `Too many open event streams: at most ${perKey} per API key, ${perTeam} per team and ${perProcess} per server. Close one, or retry in ${RETRY_AFTER_SECONDS} s.`,
    {
      details: { limit_per_minute: auth.rateLimitPerMinute, reason: 'too_many_streams', limit_streams_per_key: perKey, limit_streams_per_team: perTeam },
      headers: { 'Retry-After': String(RETRY_AFTER_SECONDS) },
    },
  );
}
