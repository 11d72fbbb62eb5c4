/**
 * Past runs for bench:scale (issue 37), written set-based: one statement per chunk makes the
 * chunk's runs with everything a finished run leaves behind (its input file, hold/release/charge
 * ledger rows, an output, the final event, its webhook delivery and one attempt), so a million
 * runs take minutes, not the hours of a round trip per row.
 *
 * Triggers and foreign-key checks are off while seeding (session_replication_role = replica, in
 * the throwaway bench database only): the rows are consistent by construction, and the usage
 * roll-up is rebuilt afterwards with migration 0022's own back-fill, as an upgrade would build it.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type pg from 'pg';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

export interface SeedTarget {
  teamId: string;
  keyId: string;
  memberId: string;
  endpointId: string;
}

/** Tool mix of the seeded runs (one entry per tenth). */
const TOOLS = ['image_upscale', 'image_upscale', 'image_upscale', 'image_upscale', 'video_upscale', 'video_upscale', 'brand_kit_extract', 'brand_kit_extract', 'image_color_grade', 'video_transition'];

/**
 * Runs i in [from, to) of `total`, spread evenly over the `days` before now (run 0 the oldest):
 * 90 % succeeded (charged, one output: ready when under 30 days old, else expired), 7 % failed,
 * 3 % canceled; each with its input file (expired), ledger rows, final event, one delivered webhook
 * delivery and its attempt.
 */
const CHUNK_SQL = `
WITH s AS (
  SELECT i, gen_random_uuid() AS id, gen_random_uuid() AS file_id,
         now() - make_interval(secs => $8::double precision * 86400 * (1 - (i + 0.5) / $7::double precision)) AS t,
         CASE WHEN i % 100 < 90 THEN 'succeeded' WHEN i % 100 < 97 THEN 'failed' ELSE 'canceled' END AS status,
         ($9::text[])[1 + i % 10] AS tool, 2 + i % 13 AS price
    FROM generate_series($5::bigint, $6::bigint - 1) AS i),
f AS (
  INSERT INTO files (id, team_id, api_key_id, file_name, declared_mime, size_bytes, part_size_bytes, part_count, storage_key, upload_id, status,
                     detected_mime, media_kind, width, height, created_at, completed_at, upload_expires_at, expires_at, channels, bits_per_sample)
  SELECT file_id, $1::uuid, $2::uuid, 'photo.jpg', 'image/jpeg', 800000, 8388608, 1, 'uploads/' || $1::text || '/' || file_id::text, 'u-' || file_id::text,
         'expired', 'image/jpeg', 'image', 1024, 768, t - interval '20 s', t - interval '19 s', t + interval '1 day', t + interval '1 day', 3, 8
    FROM s RETURNING 1),
r AS (
  INSERT INTO runs (id, team_id, api_key_id, member_id, source, tool_id, product_id, inputs, status, progress, price_sparks, hold_sparks, cost_sparks,
                    error, attempts, created_at, started_at, finished_at, event_seq)
  SELECT id, $1::uuid, $2::uuid, $3::uuid, 'api', tool, tool, jsonb_build_object('image', jsonb_build_array(file_id), 'scale', 2), status,
         CASE WHEN status = 'succeeded' THEN 1 ELSE 0.5 END, price, price + 2, CASE WHEN status = 'succeeded' THEN price ELSE 0 END,
         CASE WHEN status = 'failed' THEN 'The tool could not read the input.' END, 1, t, t + interval '40 ms', t + interval '3 s', 3
    FROM s RETURNING 1),
l AS (
  INSERT INTO ledger_entries (team_id, kind, amount, run_id, created_at)
  SELECT $1::uuid, k.kind, CASE k.kind WHEN 'hold' THEN -(s.price + 2) WHEN 'release' THEN s.price + 2 ELSE -s.price END, s.id,
         CASE k.kind WHEN 'hold' THEN s.t ELSE s.t + interval '3 s' END
    FROM s CROSS JOIN (VALUES ('hold'), ('release'), ('charge')) AS k (kind)
   WHERE k.kind <> 'charge' OR s.status = 'succeeded' RETURNING 1),
o AS (
  INSERT INTO run_outputs (id, run_id, position, storage_key, file_name, mime_type, width, height, size_bytes, sha256, status, created_at, expires_at,
                           check_attempts, next_check_at, last_checked_at)
  SELECT gen_random_uuid(), id, 0, 'outputs/' || $1::text || '/' || id::text || '/0.png', 'output-1.png', 'image/png', 2048, 1536, 3000000,
         md5(id::text) || md5(file_id::text), CASE WHEN t > now() - interval '30 days' THEN 'ready' ELSE 'expired' END,
         t + interval '3 s', t + interval '30 days', 1, t + interval '3 s', t + interval '4 s'
    FROM s WHERE status = 'succeeded' RETURNING 1),
e AS (
  INSERT INTO run_events (id, run_id, team_id, type, payload, created_at)
  SELECT gen_random_uuid(), id, $1::uuid, 'run.' || status,
         jsonb_build_object('id', id, 'object', 'run', 'tool_id', tool, 'status', status, 'progress', 1, 'cost_sparks', CASE WHEN status = 'succeeded' THEN price ELSE 0 END,
                            'inputs', jsonb_build_object('image', jsonb_build_array(file_id), 'scale', 2), 'error', CASE WHEN status = 'failed' THEN 'The tool could not read the input.' END,
                            'created_at', t, 'started_at', t + interval '40 ms', 'finished_at', t + interval '3 s', 'outputs', '[]'::jsonb),
         t + interval '3 s'
    FROM s RETURNING id, type, created_at),
d AS (
  INSERT INTO webhook_deliveries (id, event_id, endpoint_id, team_id, status, attempts, next_attempt_at, created_at, finished_at)
  SELECT gen_random_uuid(), e.id, $4::uuid, $1::uuid, 'delivered', 1, e.created_at, e.created_at, e.created_at + interval '90 ms'
    FROM e RETURNING id, event_id, endpoint_id, created_at),
a AS (
  INSERT INTO webhook_attempts (delivery_id, endpoint_id, event_type, attempted_at, status_code, duration_ms, response_excerpt)
  SELECT d.id, d.endpoint_id, e.type, d.created_at + interval '10 ms', 200, 80, 'ok'
    FROM d JOIN e ON e.id = d.event_id RETURNING 1)
SELECT (SELECT count(*) FROM r)::integer AS runs, (SELECT count(*) FROM l)::integer AS ledger, (SELECT count(*) FROM o)::integer AS outputs,
       (SELECT count(*) FROM f)::integer AS files, (SELECT count(*) FROM a)::integer AS attempts`;

/** Seeds `total` runs in chunks of `chunk`; onChunk(done) after each. */
export async function seedRuns(client: pg.ClientBase, target: SeedTarget, total: number, days: number, chunk: number, onChunk: (done: number) => void): Promise<void> {
  await client.query(`SET session_replication_role = replica`);
  try {
    for (let from = 0; from < total; from += chunk) {
      const to = Math.min(total, from + chunk);
      await client.query(CHUNK_SQL, [target.teamId, target.keyId, target.memberId, target.endpointId, from, to, total, days, TOOLS]);
      onChunk(to);
    }
    // The charges were never taken from the balance: one grant books them, so the team still balances.
    await client.query(
      `INSERT INTO ledger_entries (team_id, kind, amount, note)
       SELECT $1::uuid, 'grant', t.sparks_available - (SELECT coalesce(sum(amount), 0) FROM ledger_entries WHERE team_id = $1::uuid), 'bench:scale seed'
         FROM teams t WHERE t.id = $1::uuid`,
      [target.teamId],
    );
  } finally {
    await client.query(`SET session_replication_role = DEFAULT`);
  }
}

/** Migration 0022's back-fill statement, as written there. */
export function usageBackfillSql(): string {
  const migration = fs.readFileSync(path.join(ROOT, 'src', 'db', 'migrations', '0022_usage_daily.sql'), 'utf8');
  const start = migration.indexOf('-- The back-fill');
  const end = migration.indexOf('-- Down Migration');
  if (start < 0 || end < start) throw new Error('0022_usage_daily.sql has no back-fill section');
  return migration.slice(start, end);
}

/** Rebuilds the whole roll-up with the migration's back-fill (the seed wrote no roll-up rows); its ms. */
export async function rebuildUsage(client: pg.ClientBase): Promise<number> {
  const t0 = performance.now();
  await client.query('BEGIN');
  try {
    await client.query('LOCK TABLE runs, ledger_entries IN SHARE ROW EXCLUSIVE MODE');
    await client.query('DELETE FROM usage_daily');
    await client.query(usageBackfillSql());
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  }
  return performance.now() - t0;
}
