import type { Queryable } from '../db/pool.js';

export type Scope = 'read' | 'run' | 'webhooks';
export const SCOPES: Scope[] = ['read', 'run', 'webhooks'];
export type Role = 'owner' | 'admin' | 'member';
export type Plan = 'free' | 'plus' | 'pro' | 'team';

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
  sparksAvailable: number;
  /**
   * Tokens in the key's bucket after this request: what the token take left, or, when the bucket
   * was not touched, what it holds now (for the RateLimit headers of plan and scope refusals).
   */
  rateTokens: number | null;
  /** Null when the bucket was not touched (plan or scope refused the call first). */
  bucket: { tokens: number; allowed: boolean } | null;
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
  sparks_available: number;
  tokens: number | null;
  last_allowed: boolean | null;
  tokens_now: number | null;
}

// Tokens in the bucket now: what was left plus the refill since, capped at one minute's worth.
const TOKENS_NOW =
  'least(k.rate_limit_per_minute::float8, rb.tokens + greatest(0, extract(epoch FROM clock_timestamp() - rb.refilled_at)) * k.rate_limit_per_minute / 60.0)';

/**
 * One round trip authenticates the key and takes a token from its bucket. The bucket is a row
 * shared by every API process; the UPDATE's row lock serialises concurrent requests of one key,
 * and the SET expressions read the locked (latest) row, so no token is spent twice.
 * The bucket is only touched when the plan and scope checks pass, as those answer first.
 */
const AUTHENTICATE_SQL = `
WITH k AS (
  SELECT k.id, k.name, k.prefix, k.key_hash, k.scopes, k.rate_limit_per_minute, k.team_id, k.member_id,
         m.role, t.name AS team_name, t.plan, t.sparks_available,
         (t.plan <> 'free' AND ($2::text IS NULL OR $2::text = ANY (k.scopes))) AS may_consume
    FROM api_keys k
    JOIN members m ON m.id = k.member_id AND m.removed_at IS NULL
    JOIN teams t ON t.id = k.team_id
   WHERE k.key_hash = $1::bytea AND k.revoked_at IS NULL
), b AS (
  UPDATE rate_buckets rb
     SET tokens = CASE WHEN ${TOKENS_NOW} >= 1 THEN ${TOKENS_NOW} - 1 ELSE ${TOKENS_NOW} END,
         last_allowed = ${TOKENS_NOW} >= 1,
         refilled_at = greatest(rb.refilled_at, clock_timestamp())
    FROM k
   WHERE rb.key_id = k.id AND k.may_consume
  RETURNING rb.tokens, rb.last_allowed
)
SELECT k.*, b.tokens, b.last_allowed,
       CASE WHEN b.tokens IS NULL THEN (SELECT ${TOKENS_NOW} FROM rate_buckets rb WHERE rb.key_id = k.id) END AS tokens_now
  FROM k LEFT JOIN b ON true`;

export async function authenticateKey(db: Queryable, hash: Buffer, requiredScope: Scope | null): Promise<KeyContext | null> {
  const { rows } = await db.query<Row>({ name: 'authenticate_key', text: AUTHENTICATE_SQL, values: [hash, requiredScope] });
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
    sparksAvailable: row.sparks_available,
    rateTokens: row.tokens ?? row.tokens_now,
    bucket: row.tokens === null || row.last_allowed === null ? null : { tokens: row.tokens, allowed: row.last_allowed },
  };
}
