import type { Queryable } from '../db/pool.js';
import type { PausedReason, WebhookEndpoint } from './schemas.js';

export interface EndpointRow {
  id: string;
  team_id: string;
  url: string;
  events: string[];
  enabled: boolean;
  signing_secret: string;
  /** The secret the last rotation replaced, only while it is live (else null). */
  previous_signing_secret: string | null;
  /** Until when previous_signing_secret signs too; null when there is none live. */
  previous_secret_expires_at: Date | null;
  failing_since: Date | null;
  paused_reason: PausedReason | null;
  paused_at: Date | null;
  created_at: Date;
  deleted_at: Date | null;
}

// A previous secret past its expiry reads as none, so nothing signs with it or reports it.
const COLUMNS = `id, team_id, url, events, enabled, signing_secret,
  CASE WHEN previous_secret_expires_at > now() THEN previous_signing_secret END AS previous_signing_secret,
  CASE WHEN previous_secret_expires_at > now() THEN previous_secret_expires_at END AS previous_secret_expires_at,
  failing_since, paused_reason, paused_at, created_at, deleted_at`;

/**
 * The fields the spec lists, plus the optional ones only when they say something (a live
 * previous secret, a pause the service made), so an endpoint that never had either reads as before.
 */
export function endpointResource(e: EndpointRow): WebhookEndpoint {
  const r: WebhookEndpoint = { object: 'webhook_endpoint', id: e.id, url: e.url, events: e.events, enabled: e.enabled, created_at: e.created_at.toISOString() };
  if (!e.enabled && e.paused_reason) {
    r.paused_reason = e.paused_reason;
    if (e.paused_at) r.paused_at = e.paused_at.toISOString();
  }
  if (e.previous_secret_expires_at) r.previous_secret_expires_at = e.previous_secret_expires_at.toISOString();
  return r;
}

export async function listEndpoints(db: Queryable, teamId: string): Promise<EndpointRow[]> {
  const { rows } = await db.query<EndpointRow>(
    `SELECT ${COLUMNS} FROM webhook_endpoints WHERE team_id = $1::uuid AND deleted_at IS NULL ORDER BY created_at, id`,
    [teamId],
  );
  return rows;
}

/** The team's live endpoint; another team's or a deleted one is not found. */
export async function getEndpoint(db: Queryable, teamId: string, id: string, opts: { lock?: boolean } = {}): Promise<EndpointRow | null> {
  const { rows } = await db.query<EndpointRow>(
    `SELECT ${COLUMNS} FROM webhook_endpoints WHERE id = $1::uuid AND team_id = $2::uuid AND deleted_at IS NULL${opts.lock ? ' FOR UPDATE' : ''}`,
    [id, teamId],
  );
  return rows[0] ?? null;
}

export async function insertEndpoint(db: Queryable, e: { id: string; teamId: string; url: string; events: string[]; secret: string }): Promise<EndpointRow> {
  const { rows } = await db.query<EndpointRow>(
    `INSERT INTO webhook_endpoints (id, team_id, url, events, signing_secret) VALUES ($1::uuid, $2::uuid, $3::text, $4::text[], $5::text)
     RETURNING ${COLUMNS}`,
    [e.id, e.teamId, e.url, e.events, e.secret],
  );
  const row = rows[0];
  if (!row) throw new Error('endpoint insert returned nothing');
  return row;
}

/**
 * A member's change. Resuming a paused endpoint clears why and since when it was paused and its
 * failing streak: it starts afresh. (In SET, the columns on the right are the row before the change.)
 */
export async function updateEndpoint(db: Queryable, id: string, changes: { enabled?: boolean; events?: string[] }): Promise<EndpointRow> {
  const { rows } = await db.query<EndpointRow>(
    `UPDATE webhook_endpoints SET enabled = coalesce($2::boolean, enabled), events = coalesce($3::text[], events),
            paused_reason = CASE WHEN $2::boolean AND NOT enabled THEN NULL ELSE paused_reason END,
            paused_at = CASE WHEN $2::boolean AND NOT enabled THEN NULL ELSE paused_at END,
            failing_since = CASE WHEN $2::boolean AND NOT enabled THEN NULL ELSE failing_since END
      WHERE id = $1::uuid RETURNING ${COLUMNS}`,
    [id, changes.enabled ?? null, changes.events ?? null],
  );
  const row = rows[0];
  if (!row) throw new Error(`endpoint ${id} vanished`);
  return row;
}

/**
 * A new signing secret; the one it replaces stays live for `expirePreviousInSeconds` (0: not at
 * all). Any older previous secret is dropped: one previous secret at most.
 */
export async function rotateSigningSecret(db: Queryable, id: string, secret: string, expirePreviousInSeconds: number): Promise<EndpointRow> {
  const { rows } = await db.query<EndpointRow>(
    `UPDATE webhook_endpoints
        SET previous_signing_secret = CASE WHEN $3::integer > 0 THEN signing_secret END,
            previous_secret_expires_at = CASE WHEN $3::integer > 0 THEN now() + make_interval(secs => $3::integer) END,
            signing_secret = $2::text
      WHERE id = $1::uuid RETURNING ${COLUMNS}`,
    [id, secret, expirePreviousInSeconds],
  );
  const row = rows[0];
  if (!row) throw new Error(`endpoint ${id} vanished`);
  return row;
}

export async function deleteEndpoint(db: Queryable, id: string): Promise<void> {
  await db.query('UPDATE webhook_endpoints SET deleted_at = now(), enabled = false WHERE id = $1::uuid', [id]);
}

/** Pending deliveries of a paused or deleted endpoint are dropped, never sent. */
export async function dropPending(db: Queryable, endpointId: string): Promise<number> {
  const { rowCount } = await db.query(
    `UPDATE webhook_deliveries SET status = 'dropped', finished_at = now(), lease_owner = NULL
      WHERE endpoint_id = $1::uuid AND status = 'pending'`,
    [endpointId],
  );
  return rowCount ?? 0;
}

export async function recordAttempt(
  db: Queryable,
  a: {
    deliveryId: string;
    endpointId: string;
    eventType: string;
    statusCode: number | null;
    error: string | null;
    durationMs: number;
    excerpt: string | null;
    /** When the attempt began; listed in that order. */
    attemptedAt: Date;
  },
): Promise<void> {
  await db.query(
    `INSERT INTO webhook_attempts (delivery_id, endpoint_id, event_type, status_code, error, duration_ms, response_excerpt, attempted_at)
     VALUES ($1::uuid, $2::uuid, $3::text, $4::integer, $5::text, $6::integer, $7::text, $8::timestamptz)`,
    [a.deliveryId, a.endpointId, a.eventType, a.statusCode, a.error, a.durationMs, a.excerpt, a.attemptedAt],
  );
}
