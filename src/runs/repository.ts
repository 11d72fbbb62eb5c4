import type { Queryable } from '../db/pool.js';
import type { Run } from './schemas.js';

export type RunStatus = 'queued' | 'running' | 'succeeded' | 'failed' | 'canceled';
/** Who started a run: an API key (visible through /v1) or a member in the console (an app run, never visible there). */
export type RunSource = 'api' | 'app';
export const RUN_STATUSES: RunStatus[] = ['queued', 'running', 'succeeded', 'failed', 'canceled'];
export const FINAL_STATUSES: RunStatus[] = ['succeeded', 'failed', 'canceled'];

export interface RunRow {
  id: string;
  team_id: string;
  /** Null exactly for app runs. */
  api_key_id: string | null;
  member_id: string;
  source: RunSource;
  tool_id: string;
  product_id: string;
  inputs: Record<string, unknown>;
  status: RunStatus;
  progress: number;
  price_sparks: number;
  hold_sparks: number;
  cost_sparks: number;
  error: string | null;
  attempts: number;
  max_attempts: number;
  lease_owner: string | null;
  idempotency_key: string | null;
  request_hash: string | null;
  created_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
}

export interface OutputRow {
  id: string;
  run_id: string;
  position: number;
  storage_key: string;
  file_name: string;
  mime_type: string | null;
  width: number | null;
  height: number | null;
  duration_seconds: number | null;
  size_bytes: number;
  sha256: string;
  status: 'checking' | 'ready' | 'failed' | 'expired';
  expires_at: Date;
}

export const RUN_COLUMNS = `id, team_id, api_key_id, member_id, source, tool_id, product_id, inputs, status, progress, price_sparks,
  hold_sparks, cost_sparks, error, attempts, max_attempts, lease_owner, idempotency_key, request_hash, created_at, started_at, finished_at`;
const OUTPUT_COLUMNS = `id, run_id, position, storage_key, file_name, mime_type, width, height, duration_seconds, size_bytes, sha256,
  status, expires_at`;

const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);

/**
 * The outputs a client may still have, in order: a succeeded run's, less those past their
 * retention (gone even before the janitor marks them) and those that failed their check for good
 * (their run was refunded).
 */
export function availableOutputs(run: Pick<RunRow, 'status'>, outputs: OutputRow[]): OutputRow[] {
  if (run.status !== 'succeeded') return [];
  return outputs
    .filter((o) => o.status !== 'expired' && o.status !== 'failed' && o.expires_at.getTime() > Date.now())
    .sort((a, b) => a.position - b.position);
}

/** The run as the API shows it; outputs only once it succeeded, and only those still available. */
export function runResource(run: RunRow, outputs: OutputRow[]): Run {
  return {
    object: 'run',
    id: run.id,
    tool_id: run.tool_id,
    product_id: run.product_id,
    status: run.status,
    progress: run.status === 'succeeded' ? 1 : run.progress,
    cost_sparks: run.cost_sparks,
    outputs: availableOutputs(run, outputs).map((o) => ({
      asset_id: o.id,
      mime_type: o.mime_type,
      width: o.width,
      height: o.height,
      duration_seconds: o.duration_seconds,
      size_bytes: o.size_bytes,
      file_name: o.file_name,
    })),
    error: run.error,
    api_key_id: run.api_key_id,
    created_at: iso(run.created_at),
    started_at: iso(run.started_at),
    finished_at: iso(run.finished_at),
  };
}

/**
 * A run of the team, when `sources` includes how it was started: /v1 passes ['api'] so an app run
 * answers exactly like an unknown id; the console passes both.
 */
export async function getTeamRun(db: Queryable, teamId: string, runId: string, sources: readonly RunSource[], opts: { lock?: boolean } = {}): Promise<RunRow | null> {
  const { rows } = await db.query<RunRow>(
    `SELECT ${RUN_COLUMNS} FROM runs WHERE id = $1::uuid AND team_id = $2::uuid AND source = ANY ($3::text[])${opts.lock ? ' FOR UPDATE' : ''}`,
    [runId, teamId, sources],
  );
  return rows[0] ?? null;
}

export async function lockRun(db: Queryable, runId: string): Promise<RunRow | null> {
  const { rows } = await db.query<RunRow>({ name: 'run-lock', text: `SELECT ${RUN_COLUMNS} FROM runs WHERE id = $1::uuid FOR UPDATE`, values: [runId] });
  return rows[0] ?? null;
}

export async function getOutputs(db: Queryable, runId: string): Promise<OutputRow[]> {
  const { rows } = await db.query<OutputRow>(`SELECT ${OUTPUT_COLUMNS} FROM run_outputs WHERE run_id = $1::uuid ORDER BY position`, [runId]);
  return rows;
}

export interface ApiRunFilters {
  status?: string | undefined;
  toolId?: string | undefined;
  createdAfter?: string | undefined;
  createdBefore?: string | undefined;
  /** The id of the run the page starts after (it must be one of the team's API runs). */
  startingAfter?: string | undefined;
  limit: number;
}

/**
 * A page of the team's API runs, newest first (created_at, then id, at full precision); one more
 * than `limit` when another page follows. App runs are never read here. The time filters compare
 * created_at as the API shows it (to the millisecond), so a run's own created_at excludes it;
 * each also bounds created_at itself (implied by the millisecond comparison), which the index
 * range can use: the bound alone, wrapped in date_trunc, made an old created_before walk every
 * newer run of the team (issue 37).
 */
export async function listApiRuns(db: Queryable, teamId: string, f: ApiRunFilters): Promise<RunRow[]> {
  const { rows } = await db.query<RunRow>(
    `SELECT ${RUN_COLUMNS} FROM runs r
      WHERE r.team_id = $1::uuid AND r.source = 'api'
        AND ($2::text IS NULL OR r.status = $2::text)
        AND ($3::text IS NULL OR r.tool_id = $3::text)
        AND ($4::timestamptz IS NULL OR (r.created_at > $4::timestamptz AND date_trunc('milliseconds', r.created_at) > $4::timestamptz))
        AND ($5::timestamptz IS NULL OR (r.created_at < date_trunc('milliseconds', $5::timestamptz) + interval '1 millisecond'
                                         AND date_trunc('milliseconds', r.created_at) < $5::timestamptz))
        AND ($6::uuid IS NULL OR (r.created_at, r.id) < (SELECT c.created_at, c.id FROM runs c WHERE c.id = $6::uuid))
      ORDER BY r.created_at DESC, r.id DESC
      LIMIT $7::integer`,
    [teamId, f.status ?? null, f.toolId ?? null, f.createdAfter ?? null, f.createdBefore ?? null, f.startingAfter ?? null, f.limit + 1],
  );
  return rows;
}

/** The outputs of several runs, by run id. */
export async function getOutputsOf(db: Queryable, runIds: string[]): Promise<Map<string, OutputRow[]>> {
  const byRun = new Map<string, OutputRow[]>(runIds.map((id) => [id, []]));
  if (!runIds.length) return byRun;
  const { rows } = await db.query<OutputRow>(`SELECT ${OUTPUT_COLUMNS} FROM run_outputs WHERE run_id = ANY ($1::uuid[]) ORDER BY position`, [runIds]);
  for (const o of rows) byRun.get(o.run_id)?.push(o);
  return byRun;
}

export async function findByIdempotencyKey(db: Queryable, teamId: string, key: string): Promise<RunRow | null> {
  const { rows } = await db.query<RunRow>(
    `SELECT ${RUN_COLUMNS} FROM runs WHERE team_id = $1::uuid AND idempotency_key = $2::text AND source = 'api'`,
    [teamId, key],
  );
  return rows[0] ?? null;
}

/** New runs this team started in the current clock hour (the hourly ceiling counts these). */
export async function runsThisHour(db: Queryable, teamId: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    `SELECT count(*)::integer AS n FROM runs WHERE team_id = $1::uuid AND created_at >= date_trunc('hour', now(), 'UTC')`,
    [teamId],
  );
  return rows[0]?.n ?? 0;
}

export interface NewRun {
  id: string;
  teamId: string;
  /** Null for an app run (started in the console by memberId). */
  apiKeyId: string | null;
  memberId: string;
  toolId: string;
  productId: string;
  inputs: Record<string, unknown>;
  price: number;
  hold: number;
  maxAttempts: number;
  idempotencyKey: string | null;
  requestHash: string | null;
  /** Cancel-After: the run is canceled if not final this many seconds from now. */
  cancelAfterSeconds?: number | null;
}

const runValues = (r: NewRun) => [
  r.id, r.teamId, r.apiKeyId, r.memberId, r.toolId, r.productId, JSON.stringify(r.inputs), r.price, r.hold, r.maxAttempts, r.idempotencyKey, r.requestHash,
  r.cancelAfterSeconds ?? null,
];

const INSERT_RUN = `INSERT INTO runs (id, team_id, api_key_id, member_id, source, tool_id, product_id, inputs, status, price_sparks, hold_sparks,
                       cost_sparks, max_attempts, idempotency_key, request_hash, cancel_at)
     SELECT $1::uuid, $2::uuid, $3::uuid, $4::uuid, CASE WHEN $3::uuid IS NULL THEN 'app' ELSE 'api' END, $5::text, $6::text, $7::jsonb,
             'queued', $8::bigint, $9::bigint, $9::bigint, $10::integer, $11::text, $12::text,
             now() + make_interval(secs => $13::integer)`;

export async function insertRun(db: Queryable, r: NewRun): Promise<RunRow> {
  const { rows } = await db.query<RunRow>(`${INSERT_RUN} RETURNING ${RUN_COLUMNS}`, runValues(r));
  const row = rows[0];
  if (!row) throw new Error('run insert returned nothing');
  return row;
}

/**
 * The start's insert (issue 37: one statement where there were three): the queued run, only if
 * the team started fewer than `hourlyCeiling` runs in the current clock hour (null when not), and
 * the notification on `channel` that wakes the workers at commit. The caller holds the team's row
 * lock, and this statement's snapshot is taken after it, so the count sees every start before it.
 */
export async function insertQueuedRun(db: Queryable, r: NewRun, hourlyCeiling: number, channel: string): Promise<RunRow | null> {
  const { rows } = await db.query<RunRow>({
    name: 'run-insert-queued',
    text: `WITH r AS (
        ${INSERT_RUN}
         WHERE (SELECT count(*) FROM runs WHERE team_id = $2::uuid AND created_at >= date_trunc('hour', now(), 'UTC')) < $14::integer
        RETURNING ${RUN_COLUMNS})
      SELECT r.*, pg_notify($15::text, r.id::text)::text AS notified FROM r`,
    values: [...runValues(r), hourlyCeiling, channel],
  });
  return rows[0] ?? null;
}

export interface NewOutput {
  id: string;
  position: number;
  storageKey: string;
  fileName: string;
  mimeType: string | null;
  width: number | null;
  height: number | null;
  durationSeconds: number | null;
  sizeBytes: number;
  sha256: string;
}

export async function insertOutputs(db: Queryable, runId: string, outputs: NewOutput[], retentionSeconds: number): Promise<void> {
  for (const o of outputs) {
    await db.query(
      `INSERT INTO run_outputs (id, run_id, position, storage_key, file_name, mime_type, width, height, duration_seconds,
                                size_bytes, sha256, status, expires_at)
       VALUES ($1::uuid, $2::uuid, $3::integer, $4::text, $5::text, $6::text, $7::integer, $8::integer, $9::float8, $10::bigint,
               $11::text, 'checking', now() + make_interval(secs => $12::integer))`,
      [o.id, runId, o.position, o.storageKey, o.fileName, o.mimeType, o.width, o.height, o.durationSeconds, o.sizeBytes, o.sha256, retentionSeconds],
    );
  }
}
