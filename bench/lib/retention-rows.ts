import { randomBytes } from 'node:crypto';
import type { Queryable } from '../../src/db/pool.js';

// Rows of the kinds retention deletes, written in bulk with SQL and dated in the past, for the
// retention test (two janitors at once) and bench:retention (a week of inserts and passes).

export interface RetentionOwner {
  teamId: string;
  memberId: string;
  keyId: string;
  /** A webhook endpoint of the team (made by makeEndpoint): every run event gets a delivery to it. */
  endpointId: string;
}

/** An enabled endpoint subscribed to every run event, written straight into the table (never contacted). */
export async function makeEndpoint(db: Queryable, teamId: string): Promise<string> {
  const { rows } = await db.query<{ id: string }>(
    `INSERT INTO webhook_endpoints (id, team_id, url, events, signing_secret)
     VALUES (gen_random_uuid(), $1::uuid, 'https://127.0.0.1:9/hooks', ARRAY['run.succeeded', 'run.failed', 'run.canceled'], $2::text)
     RETURNING id`,
    [teamId, `whsec_${randomBytes(24).toString('hex')}`],
  );
  return rows[0]!.id;
}

/**
 * `n` final runs written `hoursAgo` hours ago with what the traffic of that time leaves behind:
 * the run, its event (and, through the fan-out trigger, its delivery, then ended: delivered), one
 * attempt, one output row and one input file row (both already expired, their bytes gone), and a
 * hold and a charge in the ledger (without the output and file rows when `withExpiredRows` is
 * false). Returns the new run ids.
 */
export async function writeTraffic(db: Queryable, o: RetentionOwner, n: number, hoursAgo: number, withExpiredRows = true): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `WITH t AS (SELECT now() - make_interval(hours => $5::integer) AS at)
     INSERT INTO runs (id, team_id, api_key_id, member_id, tool_id, product_id, inputs, status, price_sparks, hold_sparks, cost_sparks,
                       created_at, started_at, finished_at)
     SELECT gen_random_uuid(), $1::uuid, $2::uuid, $3::uuid, 'test_copy', 'test_copy', '{}'::jsonb, 'succeeded', 1, 1, 1, t.at, t.at, t.at
       FROM t, generate_series(1, $4::integer)
     RETURNING id`,
    [o.teamId, o.keyId, o.memberId, n, hoursAgo],
  );
  const ids = rows.map((r) => r.id);
  const at = (param: number) => `now() - make_interval(hours => $${param}::integer)`;
  await db.query(
    `INSERT INTO run_events (id, run_id, team_id, type, payload, created_at)
     SELECT gen_random_uuid(), r, $2::uuid, 'run.succeeded', jsonb_build_object('id', r, 'object', 'run'), ${at(3)} FROM unnest($1::uuid[]) r`,
    [ids, o.teamId, hoursAgo],
  );
  await db.query(
    `UPDATE webhook_deliveries d SET status = 'delivered', attempts = 1, created_at = ${at(3)}, finished_at = ${at(3)}
       FROM run_events e WHERE e.id = d.event_id AND e.run_id = ANY ($1::uuid[]) AND d.endpoint_id = $2::uuid`,
    [ids, o.endpointId, hoursAgo],
  );
  await db.query(
    `INSERT INTO webhook_attempts (delivery_id, endpoint_id, event_type, status_code, duration_ms, response_excerpt, attempted_at)
     SELECT d.id, d.endpoint_id, 'run.succeeded', 204, 40, '', ${at(3)}
       FROM webhook_deliveries d JOIN run_events e ON e.id = d.event_id WHERE e.run_id = ANY ($1::uuid[]) AND d.endpoint_id = $2::uuid`,
    [ids, o.endpointId, hoursAgo],
  );
  await db.query(
    `INSERT INTO ledger_entries (team_id, kind, amount, run_id, created_at)
     SELECT $2::uuid, k, CASE k WHEN 'hold' THEN -1 ELSE 0 END, r, ${at(3)} FROM unnest($1::uuid[]) r, unnest(ARRAY['hold', 'charge']) k`,
    [ids, o.teamId, hoursAgo],
  );
  if (!withExpiredRows) return ids;
  await db.query(
    `INSERT INTO run_outputs (id, run_id, position, storage_key, file_name, mime_type, size_bytes, sha256, status, created_at, expires_at)
     SELECT gen_random_uuid(), r, 0, 'outputs/' || r, 'out.png', 'image/png', 1000, repeat('0', 64), 'expired', ${at(2)}, ${at(2)} FROM unnest($1::uuid[]) r`,
    [ids, hoursAgo],
  );
  await db.query(
    `INSERT INTO files (id, team_id, file_name, declared_mime, size_bytes, part_size_bytes, part_count, storage_key, upload_id, status,
                        created_at, completed_at, upload_expires_at, expires_at)
     SELECT gen_random_uuid(), $2::uuid, 'in.png', 'image/png', 1000, 1000, 1, 'files/' || r, 'u', 'expired', ${at(3)}, ${at(3)}, ${at(3)}, ${at(3)}
       FROM unnest($1::uuid[]) r`,
    [ids, o.teamId, hoursAgo],
  );
  return ids;
}
