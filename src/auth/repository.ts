import type { Queryable } from '../db/pool.js';
import type { Plan, Role } from '../teams/repository.js';

export type Scope = 'read' | 'run' | 'webhooks';
export const SCOPES: Scope[] = ['read', 'run', 'webhooks'];
// Teams own plans and roles; re-exported because keys carry them.
export type { Plan, Role };

export interface KeyContext {
  keyId: string;
  keyName: string;
  prefix: string;
  keyHash: Buffer;
  scopes: Scope[];
  rateLimitPerMinute: number;
  teamId: string;
  teamName: string;
  plan: Plan;
  memberId: string;
  role: Role;
  /** Tokens in the key's shared bucket after this statement (for the RateLimit headers). */
  rateTokens: number;
  /** Tokens this statement took from the shared bucket (0 when it was empty); null when it only looked. */
  taken: number | null;
}

interface Row {
  id: string;
  name: string;
  prefix: string;
  key_hash: Buffer;
  scopes: Scope[];
  rate_limit_per_minute: number;
  team_id: string;
  team_name: string;
  plan: Plan;
  member_id: string;
  role: Role;
  tokens: number;
  taken: number | null;
}

const KEY_CTE = `
WITH k AS (
  SELECT k.id, k.name, k.prefix, k.key_hash, k.scopes, k.rate_limit_per_minute, k.team_id, k.member_id,
         m.role, t.name AS team_name, t.plan,
         -- At most one second's worth of tokens per take (at least one), capped by $2.
         greatest(1, least($2::integer, floor(k.rate_limit_per_minute / 60.0)))::integer AS batch
    FROM api_keys k
    JOIN members m ON m.id = k.member_id AND m.removed_at IS NULL
    JOIN teams t ON t.id = k.team_id
   WHERE k.key_hash = $1::bytea AND k.revoked_at IS NULL
)`;

/** Tokens in a rate_buckets row `rb` at the instant `at`: what was left plus the refill since, capped at one minute's worth. */
const tokensAt = (capacity: string, at: string) =>
  `least(${capacity}, rb.tokens + greatest(0, extract(epoch FROM ${at} - rb.refilled_at)) * ${capacity} / 60.0)`;

const TAKE_NOW = tokensAt('EXCLUDED.capacity', 'EXCLUDED.refilled_at');

/**
 * The ON CONFLICT update of every take from a shared bucket (keys' and members' alike): up to
 * EXCLUDED.last_take whole tokens, at the one clock reading the inserted row carries
 * (EXCLUDED.refilled_at). Reading clock_timestamp() afresh for the tokens left, the tokens granted
 * and refilled_at let a take grant a token it never deducted when the clock crossed a whole token
 * between two readings (the topology's 120/min key passed 132 requests where 131 could), and lose
 * the refill between readings. A take that waited for the row lock behind another process's may
 * hold a reading older than the row's refilled_at: it then adds no refill and leaves refilled_at
 * where it is, so no interval is counted twice.
 */
export const BUCKET_TAKE_UPDATE = `tokens = ${TAKE_NOW} - least(EXCLUDED.last_take, floor(${TAKE_NOW})),
         last_take = least(EXCLUDED.last_take, floor(${TAKE_NOW}))::integer,
         capacity = EXCLUDED.capacity,
         refilled_at = greatest(rb.refilled_at, EXCLUDED.refilled_at)`;

/** Authenticates and reads the bucket without taking from it. */
const PEEK_SQL = `${KEY_CTE}
SELECT k.*, coalesce(${tokensAt('k.rate_limit_per_minute::float8', 'clock_timestamp()')}, k.rate_limit_per_minute::float8) AS tokens, NULL::integer AS taken
  FROM k LEFT JOIN rate_buckets rb ON rb.key_id = k.id`;

/**
 * Authenticates and takes up to one batch of tokens from the key's bucket, in one statement. The
 * bucket is a row shared by every API process; the row lock serialises concurrent takes of one
 * key, and the SET expressions read the locked (latest) row, so no token is taken twice. A key
 * whose row is missing gets a full bucket. Every request of a known key takes, whatever its plan
 * and scopes: the spec's rate applies to every request, those refused with 403 included.
 */
const TAKE_SQL = `${KEY_CTE},
b AS (
  INSERT INTO rate_buckets AS rb (key_id, capacity, tokens, refilled_at, last_take)
  SELECT k.id, k.rate_limit_per_minute, k.rate_limit_per_minute - least(k.batch, k.rate_limit_per_minute), clock_timestamp(), k.batch
    FROM k
  ON CONFLICT (key_id) DO UPDATE
     SET ${BUCKET_TAKE_UPDATE}
  RETURNING rb.tokens, rb.last_take
)
SELECT k.*,
       coalesce(b.tokens, (SELECT ${tokensAt('k.rate_limit_per_minute::float8', 'clock_timestamp()')} FROM rate_buckets rb WHERE rb.key_id = k.id),
                k.rate_limit_per_minute::float8) AS tokens,
       b.last_take AS taken
  FROM k LEFT JOIN b ON true`;

/**
 * Finds the key with its member and team. With maxTake > 0 it also takes up to a batch of tokens
 * from the key's bucket; with 0 it only looks.
 */
export async function authenticateKey(db: Queryable, hash: Buffer, maxTake: number): Promise<KeyContext | null> {
  const { rows } = await db.query<Row>(
    maxTake > 0
      ? { name: 'authenticate_key_take', text: TAKE_SQL, values: [hash, maxTake] }
      : { name: 'authenticate_key_peek', text: PEEK_SQL, values: [hash, 1] },
  );
  const row = rows[0];
  if (!row) return null;
  return {
    keyId: row.id,
    keyName: row.name,
    prefix: row.prefix,
    keyHash: row.key_hash,
    scopes: row.scopes,
    rateLimitPerMinute: row.rate_limit_per_minute,
    teamId: row.team_id,
    teamName: row.team_name,
    plan: row.plan,
    memberId: row.member_id,
    role: row.role,
    rateTokens: row.tokens,
    taken: row.taken,
  };
}

/**
 * Whether a key still allows what it was let in for: not revoked, its member not removed, the
 * scope among its scopes and, when `roles` is given, its member in one of them.
 */
export async function keyStillAllows(db: Queryable, keyId: string, need: { scope: Scope; roles?: Role[] }): Promise<boolean> {
  const { rows } = await db.query(
    `SELECT 1 FROM api_keys k JOIN members m ON m.id = k.member_id AND m.removed_at IS NULL
      WHERE k.id = $1::uuid AND k.revoked_at IS NULL AND $2::text = ANY (k.scopes)
        AND ($3::text[] IS NULL OR m.role = ANY ($3::text[]))`,
    [keyId, need.scope, need.roles ?? null],
  );
  return rows.length > 0;
}
