import type { Logger } from 'pino';
import type { Db, Queryable } from '../db/pool.js';
import { dropPending } from './repository.js';
import type { PausedReason } from './schemas.js';

/** The receiver says the endpoint is gone for good (as Stripe and Shopify read a 410): no retry helps. */
export const GONE = 410;

export interface AutoPause {
  reason: PausedReason;
  teamId: string;
  failingSince: Date | null;
}

/**
 * A delivery attempt succeeded: the endpoint's failing streak ends, unless it began after this
 * attempt did (a later attempt failed meanwhile). Called only when the claim saw a streak, so
 * the usual success writes nothing.
 */
export async function endFailingStreak(db: Queryable, endpointId: string, attemptedAt: Date): Promise<void> {
  await db.query('UPDATE webhook_endpoints SET failing_since = NULL WHERE id = $1::uuid AND failing_since <= $2::timestamptz', [endpointId, attemptedAt]);
}

/**
 * A delivery attempt failed (after its outcome was settled). Starts the endpoint's failing streak
 * if none is under way and no attempt begun since has succeeded, then pauses the endpoint as a
 * member's pause does (pending deliveries dropped), at once on 410 Gone, or when the streak is
 * older than `windowSeconds` (0: never for that). Test pings are not deliveries and count for
 * nothing. The common case, a streak already under way and younger than the window, is one read
 * without locks; only a pause locks the endpoint row, which serialises with the fan-out's FOR SHARE
 * exactly like a PATCH does.
 */
export async function noteFailedAttempt(
  db: Db,
  a: { endpointId: string; attemptedAt: Date; statusCode: number | null; windowSeconds: number },
): Promise<AutoPause | null> {
  const { rows } = await db.pool.query<{ failing_since: Date | null; live: boolean; streak_age_s: number | null; succeeded_since: boolean }>(
    `SELECT e.failing_since, e.enabled AND e.deleted_at IS NULL AS live,
            extract(epoch FROM now() - e.failing_since)::float8 AS streak_age_s,
            EXISTS (SELECT 1 FROM webhook_attempts x WHERE x.endpoint_id = e.id AND x.attempted_at > $2::timestamptz
                       AND x.status_code BETWEEN 200 AND 299 AND x.event_type <> 'ping') AS succeeded_since
       FROM webhook_endpoints e WHERE e.id = $1::uuid`,
    [a.endpointId, a.attemptedAt],
  );
  const row = rows[0];
  if (!row?.live) return null;
  let streakAge = row.streak_age_s;
  if (row.failing_since === null && !row.succeeded_since) {
    const started = await db.pool.query<{ streak_age_s: number }>(
      `UPDATE webhook_endpoints SET failing_since = coalesce(failing_since, $2::timestamptz) WHERE id = $1::uuid
       RETURNING extract(epoch FROM now() - failing_since)::float8 AS streak_age_s`,
      [a.endpointId, a.attemptedAt],
    );
    streakAge = started.rows[0]?.streak_age_s ?? null;
  }
  const reason: PausedReason | null =
    a.statusCode === GONE ? 'gone' : a.windowSeconds > 0 && streakAge !== null && streakAge >= a.windowSeconds ? 'failing' : null;
  if (!reason) return null;
  return db.tx(async (tx) => {
    const { rows: paused } = await tx.query<{ team_id: string; failing_since: Date | null }>(
      `UPDATE webhook_endpoints SET enabled = false, paused_reason = $2::text, paused_at = now()
        WHERE id = $1::uuid AND enabled AND deleted_at IS NULL RETURNING team_id, failing_since`,
      [a.endpointId, reason],
    );
    const p = paused[0];
    // Paused or deleted meanwhile (by a member, or by another worker's attempt): theirs stands.
    if (!p) return null;
    await dropPending(tx, a.endpointId);
    return { reason, teamId: p.team_id, failingSince: p.failing_since };
  });
}

/** The warning an automatic pause leaves for the operator (the team sees the reason on the endpoint). */
export function logAutoPause(log: Pick<Logger, 'warn'>, endpointId: string, p: AutoPause, statusCode: number | null, windowSeconds: number): void {
  log.warn(
    {
      endpoint_id: endpointId,
      team_id: p.teamId,
      paused_reason: p.reason,
      status: statusCode,
      failing_since: p.failingSince?.toISOString() ?? null,
    },
    p.reason === 'gone'
      ? 'webhook endpoint paused: it answered 410 Gone'
      : `webhook endpoint paused: every delivery attempt failed for more than ${windowSeconds} s`,
  );
}
