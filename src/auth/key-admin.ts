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
  created_at: string;
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
    if (!member || member.removed_at) throw new AdminError(`no active member with id ${input.memberId}`);
    // Locking the team row serialises key creation per team, so the 25-key limit holds under races.
    await tx.query('SELECT 1 FROM teams WHERE id = $1::uuid FOR UPDATE', [member.team_id]);
    const team = await mustGetTeam(tx, member.team_id);
    if (member.role === 'member') {
      throw new AdminError(`member ${member.email} has role "member"; only owners and admins create API keys`);
    }
    if (team.plan === 'free') throw new AdminError(`team ${team.id} is on the Free plan; API keys need Plus, Pro or Team`);
    const { rows } = await tx.query<{ n: number }>(
      `SELECT count(*)::integer AS n FROM api_keys k JOIN members m ON m.id = k.member_id AND m.removed_at IS NULL
        WHERE k.team_id = $1::uuid AND k.revoked_at IS NULL`,
      [team.id],
    );
    if ((rows[0]?.n ?? 0) >= MAX_ACTIVE_KEYS_PER_TEAM) {
      throw new AdminError(`team ${team.id} already has ${MAX_ACTIVE_KEYS_PER_TEAM} active keys; revoke one first`);
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

export async function revokeApiKey(db: Queryable, keyId: string): Promise<ApiKeyListItem> {
  const { rows } = await db.query<ApiKeyRow>(
    `UPDATE api_keys SET revoked_at = coalesce(revoked_at, now()) WHERE id = $1::uuid RETURNING ${KEY_COLUMNS}`,
    [keyId],
  );
  if (!rows[0]) throw new AdminError(`no API key with id ${keyId}`);
  return toListItem(rows[0]);
}

export async function listApiKeys(db: Queryable, teamId: string): Promise<ApiKeyListItem[]> {
  await mustGetTeam(db, teamId);
  const { rows } = await db.query<ApiKeyRow>(
    `SELECT ${KEY_COLUMNS} FROM api_keys k WHERE k.team_id = $1::uuid ORDER BY k.created_at, k.id`,
    [teamId],
  );
  return rows.map(toListItem);
}

const KEY_COLUMNS = `id, member_id, name, prefix, scopes, rate_limit_per_minute, created_at, revoked_at,
  (revoked_at IS NULL AND EXISTS (SELECT 1 FROM members m WHERE m.id = member_id AND m.removed_at IS NULL)) AS active`;

interface ApiKeyRow {
  id: string;
  member_id: string;
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
    name: r.name,
    prefix: r.prefix,
    scopes: r.scopes,
    rate_limit_per_minute: r.rate_limit_per_minute,
    created_at: r.created_at.toISOString(),
    revoked_at: r.revoked_at ? r.revoked_at.toISOString() : null,
    active: r.active,
  };
}
