import { randomUUID } from 'node:crypto';
import type { Db, Queryable } from '../db/pool.js';
import { AdminError, getMember, mustGetTeam } from '../teams/repository.js';
import { generateKey, type EnvPrefix } from './keys.js';
import { SCOPES, type Scope } from './repository.js';

export const MAX_ACTIVE_KEYS_PER_TEAM = 25;
export const RATE_CHOICES = [30, 60, 120, 300];
export const DEFAULT_RATE = 60;
export const DEFAULT_SCOPES: Scope[] = ['read', 'run'];

export interface ApiKeyView {
  id: string;
  name: string;
  prefix: string;
  scopes: Scope[];
  rate_limit_per_minute: number;
}

export interface ApiKeyListItem extends ApiKeyView {
  member_id: string;
  /** The creator's email: the key acts as this member. */
  member_email: string;
  created_at: string;
  /** Kept to the minute (src/auth/key-usage.ts); null when never used. */
  last_used_at: string | null;
  revoked_at: string | null;
  active: boolean;
}

export function parseScopes(raw: string | undefined): Scope[] {
  if (raw === undefined) return [...DEFAULT_SCOPES];
  return normalizeScopes(
    raw
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
  );
}

/** Known scopes only, in canonical order, with read always on. */
export function normalizeScopes(wanted: readonly string[]): Scope[] {
  for (const s of wanted) {
    if (!SCOPES.includes(s as Scope)) throw new AdminError(`unknown scope "${s}"; scopes are ${SCOPES.join(', ')}`);
  }
  // read is always on.
  return SCOPES.filter((s) => s === 'read' || wanted.includes(s));
}

export async function createApiKey(
  db: Db,
  input: { memberId: string; name: string; scopes: Scope[]; rate: number; envPrefix: EnvPrefix },
): Promise<{ key: string; api_key: ApiKeyView }> {
  if (!RATE_CHOICES.includes(input.rate)) throw new AdminError(`--rate must be one of ${RATE_CHOICES.join(', ')}`);
  if (!input.name.trim() || input.name.length > 200) throw new AdminError('--name must be 1 to 200 characters');
  // Every caller gets the same rules as the CLI: unknown scopes refused, read always on.
  const scopes = normalizeScopes(input.scopes);
  return db.tx(async (tx) => {
    const member = await getMember(tx, input.memberId);
    if (!member || member.removed_at) throw new AdminError(`no active member with id ${input.memberId}`, 'member_not_found');
    // Locking the team row serialises key creation per team, so the 25-key limit holds under races.
    await tx.query('SELECT 1 FROM teams WHERE id = $1::uuid FOR UPDATE', [member.team_id]);
    const team = await mustGetTeam(tx, member.team_id);
    if (member.role === 'member') {
      throw new AdminError(`member ${member.email} has role "member"; only owners and admins create API keys`, 'insufficient_role');
    }
    if (team.plan === 'free') {
      throw new AdminError(`team ${team.id} is on the Free plan; API keys need Plus, Pro or Team`, 'plan_upgrade_required');
    }
    const { rows } = await tx.query<{ n: number }>(
      `SELECT count(*)::integer AS n FROM api_keys k JOIN members m ON m.id = k.member_id AND m.removed_at IS NULL
        WHERE k.team_id = $1::uuid AND k.revoked_at IS NULL`,
      [team.id],
    );
    if ((rows[0]?.n ?? 0) >= MAX_ACTIVE_KEYS_PER_TEAM) {
      throw new AdminError(`team ${team.id} already has ${MAX_ACTIVE_KEYS_PER_TEAM} active keys; revoke one first`, 'key_limit_reached');
    }
    const id = randomUUID();
    const generated = generateKey(input.envPrefix);
    await tx.query(
      `INSERT INTO api_keys (id, team_id, member_id, name, prefix, key_hash, scopes, rate_limit_per_minute)
       VALUES ($1::uuid, $2::uuid, $3::uuid, $4::text, $5::text, $6::bytea, $7::text[], $8::integer)`,
      [id, team.id, member.id, input.name, generated.prefix, generated.hash, scopes, input.rate],
    );
    await tx.query(
      'INSERT INTO rate_buckets (key_id, capacity, tokens, refilled_at) VALUES ($1::uuid, $2::float8, $2::float8, clock_timestamp())',
      [id, input.rate],
    );
    return {
      key: generated.key,
      api_key: { id, name: input.name, prefix: generated.prefix, scopes, rate_limit_per_minute: input.rate },
    };
  });
}

/** Revokes a key (again: no change); with teamId, only a key of that team (another team's is not found). */
export async function revokeApiKey(db: Queryable, keyId: string, opts: { teamId?: string } = {}): Promise<ApiKeyListItem> {
  const { rows } = await db.query<ApiKeyRow>(
    `WITH k AS (
       UPDATE api_keys SET revoked_at = coalesce(revoked_at, now())
        WHERE id = $1::uuid AND ($2::uuid IS NULL OR team_id = $2::uuid) RETURNING *
     )
     SELECT ${KEY_COLUMNS} FROM k JOIN members m ON m.id = k.member_id`,
    [keyId, opts.teamId ?? null],
  );
  if (!rows[0]) throw new AdminError(`no API key with id ${keyId}`, 'api_key_not_found');
  return toListItem(rows[0]);
}

/** The team's keys, oldest first; activeOnly leaves out revoked keys and those of removed members. */
export async function listApiKeys(db: Queryable, teamId: string, opts: { activeOnly?: boolean } = {}): Promise<ApiKeyListItem[]> {
  await mustGetTeam(db, teamId);
  const { rows } = await db.query<ApiKeyRow>(
    `SELECT * FROM (SELECT ${KEY_COLUMNS} FROM api_keys k JOIN members m ON m.id = k.member_id WHERE k.team_id = $1::uuid) l
      WHERE NOT $2::boolean OR l.active ORDER BY l.created_at, l.id`,
    [teamId, opts.activeOnly ?? false],
  );
  return rows.map(toListItem);
}

// Selected from a relation named k (the table, or the UPDATE's RETURNING).
const KEY_COLUMNS = `k.id, k.member_id, m.email AS member_email, k.name, k.prefix, k.scopes, k.rate_limit_per_minute, k.created_at,
  k.revoked_at, k.last_used_at, (k.revoked_at IS NULL AND m.removed_at IS NULL) AS active`;

interface ApiKeyRow {
  id: string;
  member_id: string;
  member_email: string;
  last_used_at: Date | null;
  name: string;
  prefix: string;
  scopes: Scope[];
  rate_limit_per_minute: number;
  created_at: Date;
  revoked_at: Date | null;
  active: boolean;
}

function toListItem(r: ApiKeyRow): ApiKeyListItem {
  return {
    id: r.id,
    member_id: r.member_id,
    member_email: r.member_email,
    name: r.name,
    prefix: r.prefix,
    scopes: r.scopes,
    rate_limit_per_minute: r.rate_limit_per_minute,
    created_at: r.created_at.toISOString(),
    revoked_at: r.revoked_at ? r.revoked_at.toISOString() : null,
    last_used_at: r.last_used_at ? r.last_used_at.toISOString() : null,
    active: r.active,
  };
}
