import type { Queryable } from '../db/pool.js';
import { AdminError } from '../teams/repository.js';

export interface AttemptView {
  delivery_id: string;
  event_type: string;
  attempted_at: string;
  status_code: number | null;
  error: string | null;
  duration_ms: number;
  response_excerpt: string | null;
}

/** Every attempt made to an endpoint (deleted ones included), oldest first. */
export async function listAttempts(db: Queryable, endpointId: string): Promise<AttemptView[]> {
  const { rows: found } = await db.query('SELECT 1 FROM webhook_endpoints WHERE id = $1::uuid', [endpointId]);
  if (!found.length) throw new AdminError(`no webhook endpoint with id ${endpointId}`);
  const { rows } = await db.query<{
    delivery_id: string;
    event_type: string;
    attempted_at: Date;
    status_code: number | null;
    error: string | null;
    duration_ms: number;
    response_excerpt: string | null;
  }>(
    `SELECT delivery_id, event_type, attempted_at, status_code, error, duration_ms, response_excerpt
       FROM webhook_attempts WHERE endpoint_id = $1::uuid ORDER BY attempted_at, id`,
    [endpointId],
  );
  return rows.map((r) => ({ ...r, attempted_at: r.attempted_at.toISOString() }));
}

/**
 * Sends an event again to the endpoints that gave up on it: the same delivery (same id, same
 * body), a fresh retry schedule. Endpoints paused or deleted since are left alone.
 */
export async function redeliverEvent(db: Queryable, eventId: string): Promise<{ event_id: string; deliveries: string[] }> {
  const { rows: found } = await db.query('SELECT 1 FROM run_events WHERE id = $1::uuid', [eventId]);
  if (!found.length) throw new AdminError(`no event with id ${eventId}`);
  const { rows } = await db.query<{ id: string }>(
    `UPDATE webhook_deliveries d SET status = 'pending', attempts = 0, next_attempt_at = now(), finished_at = NULL,
            lease_owner = NULL, lease_expires_at = NULL
       FROM webhook_endpoints e
      WHERE d.event_id = $1::uuid AND d.status = 'failed' AND e.id = d.endpoint_id AND e.enabled AND e.deleted_at IS NULL
      RETURNING d.id`,
    [eventId],
  );
  if (!rows.length) throw new AdminError(`event ${eventId} has no given-up delivery to an enabled endpoint`);
  await db.query(`SELECT pg_notify('toolrun_webhooks', $1::text)`, [eventId]);
  return { event_id: eventId, deliveries: rows.map((r) => r.id) };
}
