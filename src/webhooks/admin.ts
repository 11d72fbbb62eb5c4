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
  if (!found.length) throw new AdminError(`no webhook endpoint with id ${endpointId}`, 'not_found');
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
 * Puts given-up deliveries back in line: the same delivery (same id, same body), a fresh retry
 * schedule. Deliveries to endpoints paused or deleted since are left alone.
 */
async function requeueFailed(db: Queryable, where: { eventId: string } | { deliveryId: string }): Promise<{ id: string; event_id: string }[]> {
  const { rows } = await db.query<{ id: string; event_id: string }>(
    `UPDATE webhook_deliveries d SET status = 'pending', attempts = 0, next_attempt_at = now(), finished_at = NULL,
            lease_owner = NULL, lease_expires_at = NULL
       FROM webhook_endpoints e
      WHERE ${'eventId' in where ? 'd.event_id' : 'd.id'} = $1::uuid AND d.status = 'failed'
        AND e.id = d.endpoint_id AND e.enabled AND e.deleted_at IS NULL
      RETURNING d.id, d.event_id`,
    ['eventId' in where ? where.eventId : where.deliveryId],
  );
  for (const eventId of new Set(rows.map((r) => r.event_id))) {
    await db.query(`SELECT pg_notify('toolrun_webhooks', $1::text)`, [eventId]);
  }
  return rows;
}

/** Sends an event again to the endpoints that gave up on it. */
export async function redeliverEvent(db: Queryable, eventId: string): Promise<{ event_id: string; deliveries: string[] }> {
  const { rows: found } = await db.query('SELECT 1 FROM run_events WHERE id = $1::uuid', [eventId]);
  if (!found.length) throw new AdminError(`no event with id ${eventId}`, 'not_found');
  const rows = await requeueFailed(db, { eventId });
  if (!rows.length) throw new AdminError(`event ${eventId} has no given-up delivery to an enabled endpoint`);
  return { event_id: eventId, deliveries: rows.map((r) => r.id) };
}

export interface DeliveryView {
  id: string;
  event_id: string;
  event_type: string;
  status: 'pending' | 'delivered' | 'failed' | 'dropped';
  created_at: string;
  attempts: { attempted_at: string; status_code: number | null; duration_ms: number; error: string | null }[];
}

export const DELIVERY_LOG_LIMIT = 100;

/** An endpoint's deliveries of run events, newest first, each with its attempts (oldest first). */
export async function listDeliveries(db: Queryable, endpointId: string): Promise<DeliveryView[]> {
  return (await deliveriesPage(db, endpointId, { limit: DELIVERY_LOG_LIMIT })).slice(0, DELIVERY_LOG_LIMIT);
}

/**
 * A page of an endpoint's deliveries, newest first (one more than `limit` when more follow),
 * after the delivery `startingAfter` when given, of one status when given. The console's log and
 * /v1's share it.
 */
export async function deliveriesPage(
  db: Queryable,
  endpointId: string,
  opts: { limit: number; startingAfter?: string | undefined; status?: DeliveryView['status'] | undefined; only?: string | undefined },
): Promise<DeliveryView[]> {
  const { rows } = await db.query<{
    id: string;
    event_id: string;
    event_type: string;
    status: DeliveryView['status'];
    created_at: Date;
    attempts: { attempted_at: string; status_code: number | null; duration_ms: number; error: string | null }[];
  }>(
    `SELECT d.id, d.event_id, ev.type AS event_type, d.status, d.created_at,
            coalesce((SELECT json_agg(json_build_object('attempted_at', a.attempted_at, 'status_code', a.status_code,
                                                        'duration_ms', a.duration_ms, 'error', a.error) ORDER BY a.attempted_at, a.id)
                        FROM webhook_attempts a WHERE a.delivery_id = d.id), '[]'::json) AS attempts
       FROM webhook_deliveries d JOIN run_events ev ON ev.id = d.event_id
      WHERE d.endpoint_id = $1::uuid
        AND ($3::text IS NULL OR d.status = $3::text)
        AND ($4::uuid IS NULL OR (d.created_at, d.id) < (SELECT c.created_at, c.id FROM webhook_deliveries c WHERE c.id = $4::uuid))
        AND ($5::uuid IS NULL OR d.id = $5::uuid)
      ORDER BY d.created_at DESC, d.id DESC LIMIT $2::integer`,
    [endpointId, opts.limit + 1, opts.status ?? null, opts.startingAfter ?? null, opts.only ?? null],
  );
  return rows.map((r) => ({
    ...r,
    created_at: r.created_at.toISOString(),
    // json_build_object writes timestamps in the session's zone; the API writes UTC with a Z.
    attempts: r.attempts.map((a) => ({ ...a, attempted_at: new Date(a.attempted_at).toISOString() })),
  }));
}

/** Whether the delivery is one of the endpoint's (a cursor must be). */
export async function isEndpointDelivery(db: Queryable, endpointId: string, deliveryId: string): Promise<boolean> {
  const { rowCount } = await db.query('SELECT 1 FROM webhook_deliveries WHERE id = $1::uuid AND endpoint_id = $2::uuid', [deliveryId, endpointId]);
  return (rowCount ?? 0) > 0;
}

/** Sends one given-up delivery of an endpoint again; anything else is refused. */
export async function redeliverDelivery(db: Queryable, endpointId: string, deliveryId: string): Promise<{ delivery_id: string }> {
  const { rows: found } = await db.query<{ status: string }>(
    'SELECT status FROM webhook_deliveries WHERE id = $1::uuid AND endpoint_id = $2::uuid',
    [deliveryId, endpointId],
  );
  if (!found[0]) throw new AdminError(`no delivery ${deliveryId} to endpoint ${endpointId}`, 'not_found');
  const rows = await requeueFailed(db, { deliveryId });
  if (!rows.length) {
    // Deleted meanwhile by the retention janitor (it held the row while this waited): gone, as if never found.
    const { rowCount } = await db.query('SELECT 1 FROM webhook_deliveries WHERE id = $1::uuid', [deliveryId]);
    if (!rowCount) throw new AdminError(`no delivery ${deliveryId} to endpoint ${endpointId}`, 'not_found');
    throw new AdminError(
      found[0].status === 'failed'
        ? `delivery ${deliveryId} goes to a paused endpoint; resume it first`
        : `delivery ${deliveryId} is ${found[0].status}; only a delivery that was given up (failed) can be sent again`,
      'conflict',
    );
  }
  return { delivery_id: deliveryId };
}
