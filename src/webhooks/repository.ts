import type { Queryable } from '../db/pool.js';
import type { WebhookEndpoint } from './schemas.js';

export interface EndpointRow {
  id: string;
  team_id: string;
  url: string;
  events: string[];
  enabled: boolean;
  signing_secret: string;
  created_at: Date;
  deleted_at: Date | null;
}

const COLUMNS = 'id, team_id, url, events, enabled, signing_secret, created_at, deleted_at';

export function endpointResource(e: EndpointRow): WebhookEndpoint {
  return { object: 'webhook_endpoint', id: e.id, url: e.url, events: e.events, enabled: e.enabled, created_at: e.created_at.toISOString() };
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

export async function updateEndpoint(db: Queryable, id: string, changes: { enabled?: boolean; events?: string[] }): Promise<EndpointRow> {
  const { rows } = await db.query<EndpointRow>(
    `UPDATE webhook_endpoints SET enabled = coalesce($2::boolean, enabled), events = coalesce($3::text[], events)
      WHERE id = $1::uuid RETURNING ${COLUMNS}`,
    [id, changes.enabled ?? null, changes.events ?? null],
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
