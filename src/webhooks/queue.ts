import type { Queryable } from '../db/pool.js';

/** A delivery claimed for one attempt, with what is needed to send it. */
export interface Claimed {
  id: string;
  endpoint_id: string;
  attempts: number;
  url: string;
  secret: string;
  /** A rotated-out secret still live (signs too), else null. */
  previous_secret: string | null;
  /** The endpoint's failing streak as the claim saw it: a success only writes when one is under way. */
  failing_since: Date | null;
  enabled: boolean;
  deleted: boolean;
  event_id: string;
  event_type: string;
  event_created_at: Date;
  payload: unknown;
}

/** One attempt's outcome and what becomes of its delivery. */
export interface Outcome {
  deliveryId: string;
  endpointId: string;
  eventType: string;
  statusCode: number | null;
  error: string | null;
  durationMs: number;
  excerpt: string | null;
  attemptedAt: Date;
  status: 'pending' | 'delivered' | 'failed';
  /** Seconds until the next attempt (pending only). */
  retryInSeconds: number;
}

/**
 * One statement that settles finished attempts and claims the next due deliveries, so a slot
 * freed by an attempt is refilled in the same round trip.
 *
 * Settling: every attempt is listed; a delivery is updated only if still leased to `owner` and
 * still pending (a pause or delete meanwhile dropped it).
 *
 * Claiming: due deliveries, oldest first, up to `limit`, leased to `owner` with FOR UPDATE SKIP
 * LOCKED, so a crash or restart loses none and no attempt runs twice at once. The lease outlives
 * one attempt (10 s deadline) with room to record it. An endpoint gets at most `perEndpoint` in
 * flight (all workers together, counting its leased deliveries but those settled here; soft under
 * races). Its cost follows the number of endpoints with pending deliveries, not the backlog: a
 * loose index scan finds those endpoints, and per endpoint only its leased deliveries are counted
 * and only its oldest due ones that fit are read. Named, so each connection plans it once.
 *
 * The rows settled, picked and claimed are found by primary key only. Their status is tested as
 * `(status = 'pending') IS TRUE`, which the planner cannot match to the pending-only indexes: a
 * plain `status = 'pending'` there let it scan such an index, every pending delivery, to find a
 * dozen rows; with statistics from before a backlog (few pending) it did, and each claim cost
 * grew with the backlog.
 */
export async function settleAndClaim(db: Queryable, owner: string, outcomes: Outcome[], limit: number, perEndpoint: number): Promise<Claimed[]> {
  const col = <T>(f: (o: Outcome) => T) => outcomes.map(f);
  const { rows } = await db.query<Claimed>({
    name: 'webhooks-settle-claim',
    text: `WITH RECURSIVE settled AS (
         SELECT * FROM unnest($4::uuid[], $5::uuid[], $6::text[], $7::integer[], $8::text[], $9::integer[], $10::text[], $11::timestamptz[], $12::text[], $13::integer[])
             WITH ORDINALITY AS u(delivery_id, endpoint_id, event_type, status_code, error, duration_ms, excerpt, attempted_at, status, retry_s, n)
       ), listed AS (
         INSERT INTO webhook_attempts (delivery_id, endpoint_id, event_type, status_code, error, duration_ms, response_excerpt, attempted_at)
         SELECT delivery_id, endpoint_id, event_type, status_code, error, duration_ms, excerpt, attempted_at FROM settled ORDER BY n
       ), released AS (
         UPDATE webhook_deliveries d
            SET status = s.status, lease_owner = NULL, lease_expires_at = NULL,
                next_attempt_at = now() + make_interval(secs => s.retry_s),
                finished_at = CASE WHEN s.status = 'pending' THEN NULL ELSE now() END
           FROM settled s
          WHERE d.id = ANY ($4::uuid[]) AND d.id = s.delivery_id AND d.lease_owner = $1::text AND (d.status = 'pending') IS TRUE
       ), endpoints AS (
         (SELECT endpoint_id FROM webhook_deliveries WHERE status = 'pending' AND $2::integer > 0 ORDER BY endpoint_id LIMIT 1)
         UNION ALL
         SELECT (SELECT d.endpoint_id FROM webhook_deliveries d
                  WHERE d.status = 'pending' AND d.endpoint_id > endpoints.endpoint_id ORDER BY d.endpoint_id LIMIT 1)
           FROM endpoints WHERE endpoints.endpoint_id IS NOT NULL
       ), room AS (
         SELECT endpoints.endpoint_id,
                $3::integer - (SELECT count(*)::integer FROM webhook_deliveries b
                                WHERE b.endpoint_id = endpoints.endpoint_id AND b.status = 'pending'
                                  AND b.lease_owner IS NOT NULL AND b.lease_expires_at >= now()
                                  AND b.id <> ALL ($4::uuid[])) AS free
           FROM endpoints WHERE endpoints.endpoint_id IS NOT NULL
       ), due AS (
         SELECT x.id FROM room CROSS JOIN LATERAL (
           SELECT d.id FROM webhook_deliveries d
            WHERE d.endpoint_id = room.endpoint_id AND d.status = 'pending' AND d.next_attempt_at <= now()
              AND (d.lease_expires_at IS NULL OR d.lease_expires_at < now()) AND d.id <> ALL ($4::uuid[])
            ORDER BY d.next_attempt_at, d.id LIMIT greatest(room.free, 0)) x
       ), picked AS (
         SELECT w.id FROM webhook_deliveries w
          WHERE w.id = ANY (ARRAY(SELECT id FROM due))
          ORDER BY w.next_attempt_at, w.id LIMIT $2::integer
          FOR UPDATE OF w SKIP LOCKED
       ), c AS (
         UPDATE webhook_deliveries d SET lease_owner = $1::text, lease_expires_at = now() + interval '60 seconds', attempts = d.attempts + 1
          WHERE d.id = ANY (ARRAY(SELECT id FROM picked)) AND (d.status = 'pending') IS TRUE
            AND (d.lease_expires_at IS NULL OR d.lease_expires_at < now())
         RETURNING d.id, d.endpoint_id, d.attempts, d.event_id)
       SELECT c.id, c.endpoint_id, c.attempts, e.url, e.signing_secret AS secret,
              CASE WHEN e.previous_secret_expires_at > now() THEN e.previous_signing_secret END AS previous_secret,
              e.failing_since, e.enabled, (e.deleted_at IS NOT NULL) AS deleted,
              ev.id AS event_id, ev.type AS event_type, ev.created_at AS event_created_at, ev.payload
         FROM c JOIN webhook_endpoints e ON e.id = c.endpoint_id JOIN run_events ev ON ev.id = c.event_id`,
    values: [
      owner,
      Math.max(0, limit),
      perEndpoint,
      col((o) => o.deliveryId),
      col((o) => o.endpointId),
      col((o) => o.eventType),
      col((o) => o.statusCode),
      col((o) => o.error),
      col((o) => o.durationMs),
      col((o) => o.excerpt),
      col((o) => o.attemptedAt),
      col((o) => o.status),
      col((o) => o.retryInSeconds),
    ],
  });
  return rows;
}

/** A data error (SQLSTATE class 22): a value the database refuses, such as one row's text. */
export function isDataError(err: unknown): boolean {
  return String((err as { code?: unknown } | null)?.code ?? '').startsWith('22');
}
