import { randomUUID } from 'node:crypto';
import type { Db, Queryable } from '../db/pool.js';

export type Role = 'owner' | 'admin' | 'member';
export type Plan = 'free' | 'plus' | 'pro' | 'team';

export const PLANS: Plan[] = ['free', 'plus', 'pro', 'team'];
export const ROLES: Role[] = ['owner', 'admin', 'member'];

/**
 * Why a rule refused, for callers that answer with their own wording and status (the console API
 * maps each to an error code); the CLI prints the message.
 */
export type AdminReason =
  | 'invalid'
  | 'team_not_found'
  | 'member_not_found'
  | 'member_exists'
  | 'last_owner'
  | 'insufficient_role'
  | 'plan_upgrade_required'
  | 'key_limit_reached'
  | 'api_key_not_found'
  | 'not_found'
  | 'conflict';

/** A refusal an operator can act on; the CLI prints its message. */
export class AdminError extends Error {
  constructor(
    message: string,
    readonly reason: AdminReason = 'invalid',
    /** For the console's error envelope (a role refusal names the role it needed). */
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
    this.name = 'AdminError';
  }
}

/** What counts as an email address, for the CLI and the console alike. */
export const EMAIL_PATTERN = '^[^\\s@]+@[^\\s@]+$';
export const MAX_EMAIL_LENGTH = 320;

export function isEmailAddress(s: string): boolean {
  return s.length <= MAX_EMAIL_LENGTH && new RegExp(EMAIL_PATTERN).test(s);
}

export interface Team {
  id: string;
  name: string;
  plan: Plan;
  sparks_available: number;
  runs_per_hour: number;
  /** Runs of the team running at once; null: its plan's default (TOOLRUN_TEAM_CONCURRENCY). */
  max_concurrent_runs: number | null;
}

export interface Member {
  id: string;
  team_id: string;
  email: string;
  role: Role;
  removed_at: Date | null;
}

const TEAM_COLUMNS = 'id, name, plan, sparks_available, runs_per_hour, max_concurrent_runs';

export async function getTeam(db: Queryable, teamId: string): Promise<Team | null> {
  const { rows } = await db.query<Team>(`SELECT ${TEAM_COLUMNS} FROM teams WHERE id = $1::uuid`, [teamId]);
  return rows[0] ?? null;
}

export async function mustGetTeam(db: Queryable, teamId: string): Promise<Team> {
  const team = await getTeam(db, teamId);
  if (!team) throw new AdminError(`no team with id ${teamId}`, 'team_not_found');
  return team;
}

export async function createTeam(
  db: Db,
  input: { name: string; plan: Plan; sparks?: number; runsPerHour?: number },
): Promise<Team> {
  return db.tx(async (tx) => {
    const id = randomUUID();
    await tx.query(
      'INSERT INTO teams (id, name, plan, runs_per_hour) VALUES ($1::uuid, $2::text, $3::text, $4::integer)',
      [id, input.name, input.plan, input.runsPerHour ?? 1000],
    );
    if (input.sparks) await applyGrant(tx, id, input.sparks, 'initial grant');
    return mustGetTeam(tx, id);
  });
}

/** `maxConcurrentRuns`: a number, null for the plan's default again, or left out to keep it. */
export async function updateTeam(
  db: Queryable,
  teamId: string,
  input: { plan?: Plan; runsPerHour?: number; maxConcurrentRuns?: number | null },
): Promise<Team> {
  const { rows } = await db.query<Team>(
    `UPDATE teams SET plan = coalesce($2::text, plan), runs_per_hour = coalesce($3::integer, runs_per_hour),
            max_concurrent_runs = CASE WHEN $4::boolean THEN $5::integer ELSE max_concurrent_runs END
      WHERE id = $1::uuid RETURNING ${TEAM_COLUMNS}`,
    [teamId, input.plan ?? null, input.runsPerHour ?? null, input.maxConcurrentRuns !== undefined, input.maxConcurrentRuns ?? null],
  );
  if (!rows[0]) throw new AdminError(`no team with id ${teamId}`);
  return rows[0];
}

/** A ledger row and the balance change, together; the balance never goes below zero. */
async function applyGrant(tx: Queryable, teamId: string, amount: number, note: string): Promise<Team> {
  const { rows } = await tx.query<Team>(
    `UPDATE teams SET sparks_available = sparks_available + $2::bigint
      WHERE id = $1::uuid AND sparks_available + $2::bigint >= 0 RETURNING ${TEAM_COLUMNS}`,
    [teamId, amount],
  );
  if (!rows[0]) {
    const team = await mustGetTeam(tx, teamId);
    throw new AdminError(
      `cannot deduct ${-amount} Sparks: team ${teamId} has ${team.sparks_available} available (Sparks held by running work cannot be deducted)`,
    );
  }
  await tx.query(
    "INSERT INTO ledger_entries (team_id, kind, amount, note) VALUES ($1::uuid, 'grant', $2::bigint, $3::text)",
    [teamId, amount, note],
  );
  return rows[0];
}

export async function grantSparks(db: Db, teamId: string, amount: number): Promise<Team> {
  if (!Number.isSafeInteger(amount) || amount === 0) throw new AdminError('--amount must be a non-zero whole number');
  return db.tx((tx) => applyGrant(tx, teamId, amount, amount > 0 ? 'admin grant' : 'admin deduction'));
}

/** Adds a member (an operator's way: no role rules apply; the console goes through membership.ts). */
export async function addMember(db: Db, input: { teamId: string; email: string; role: Role }): Promise<Member> {
  return db.tx(async (tx) => {
    await mustGetTeam(tx, input.teamId);
    return insertMember(tx, input);
  });
}

export async function insertMember(db: Queryable, input: { teamId: string; email: string; role: Role }): Promise<Member> {
  const { rows } = await db.query<Member>(
    `INSERT INTO members (id, team_id, email, role) VALUES ($1::uuid, $2::uuid, $3::text, $4::text)
     ON CONFLICT DO NOTHING RETURNING ${MEMBER_COLUMNS}`,
    [randomUUID(), input.teamId, input.email, input.role],
  );
  if (!rows[0]) throw new AdminError(`${input.email} is already a member of team ${input.teamId}`, 'member_exists');
  return rows[0];
}

export async function getMember(db: Queryable, memberId: string, opts: { lock?: boolean } = {}): Promise<Member | null> {
  const { rows } = await db.query<Member>(`SELECT ${MEMBER_COLUMNS} FROM members WHERE id = $1::uuid${opts.lock ? ' FOR UPDATE' : ''}`, [memberId]);
  return rows[0] ?? null;
}

const MEMBER_COLUMNS = 'id, team_id, email, role, removed_at';

/** Member changes of a team are serialised on its row (two owners demoting each other cannot leave none). */
export async function lockTeam(tx: Queryable, teamId: string): Promise<void> {
  await tx.query('SELECT 1 FROM teams WHERE id = $1::uuid FOR UPDATE', [teamId]);
}

/** Active owners of the team other than this member. */
export async function countOtherOwners(db: Queryable, teamId: string, memberId: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    `SELECT count(*)::integer AS n FROM members WHERE team_id = $1::uuid AND role = 'owner' AND removed_at IS NULL AND id <> $2::uuid`,
    [teamId, memberId],
  );
  return rows[0]?.n ?? 0;
}

export async function setMemberRole(db: Queryable, memberId: string, role: Role): Promise<Member | null> {
  const { rows } = await db.query<Member>(
    `UPDATE members SET role = $2::text WHERE id = $1::uuid AND removed_at IS NULL RETURNING ${MEMBER_COLUMNS}`,
    [memberId, role],
  );
  return rows[0] ?? null;
}

/** The member's keys stop working for good: they join on an active member, which this one never is again. */
export async function markMemberRemoved(db: Queryable, memberId: string): Promise<Member | null> {
  const { rows } = await db.query<Member>(
    `UPDATE members SET removed_at = now() WHERE id = $1::uuid AND removed_at IS NULL RETURNING ${MEMBER_COLUMNS}`,
    [memberId],
  );
  return rows[0] ?? null;
}

/** Ends the member's console sessions (removed, or a new password: a fresh start). */
export async function endMemberSessions(db: Queryable, memberId: string): Promise<void> {
  await db.query('DELETE FROM console_sessions WHERE member_id = $1::uuid', [memberId]);
}

// The operator's role changes and removals follow the team's rules in membership.ts (the last
// owner stays), the same code the console calls with a member as the actor.
export { removeMember, updateMember } from './membership.js';

export async function countTeams(db: Queryable): Promise<number> {
  const { rows } = await db.query<{ n: number }>('SELECT count(*)::integer AS n FROM teams');
  return rows[0]?.n ?? 0;
}

/** Teams, oldest first, at most `limit` (operators look up ids here, the demo team's among them). */
export async function listTeams(db: Queryable, limit: number): Promise<Team[]> {
  const { rows } = await db.query<Team>(`SELECT ${TEAM_COLUMNS} FROM teams ORDER BY created_at, id LIMIT $1::integer`, [limit]);
  return rows;
}

/** A team's current members (removed ones left out), oldest first; an unknown team is refused. */
export async function listMembers(db: Queryable, teamId: string): Promise<Pick<Member, 'id' | 'email' | 'role'>[]> {
  await mustGetTeam(db, teamId);
  const { rows } = await db.query<Pick<Member, 'id' | 'email' | 'role'>>(
    `SELECT id, email, role FROM members WHERE team_id = $1::uuid AND removed_at IS NULL ORDER BY created_at, id`,
    [teamId],
  );
  return rows;
}
