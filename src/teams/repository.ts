import { randomUUID } from 'node:crypto';
import type { Db, Queryable } from '../db/pool.js';
import type { Plan, Role } from '../auth/repository.js';

export const PLANS: Plan[] = ['free', 'plus', 'pro', 'team'];
export const ROLES: Role[] = ['owner', 'admin', 'member'];

/** A refusal an operator can act on; the CLI prints its message. */
export class AdminError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AdminError';
  }
}

export interface Team {
  id: string;
  name: string;
  plan: Plan;
  sparks_available: number;
  runs_per_hour: number;
}

export interface Member {
  id: string;
  team_id: string;
  email: string;
  role: Role;
  removed_at: Date | null;
}

const TEAM_COLUMNS = 'id, name, plan, sparks_available, runs_per_hour';

export async function getTeam(db: Queryable, teamId: string): Promise<Team | null> {
  const { rows } = await db.query<Team>(`SELECT ${TEAM_COLUMNS} FROM teams WHERE id = $1::uuid`, [teamId]);
  return rows[0] ?? null;
}

export async function mustGetTeam(db: Queryable, teamId: string): Promise<Team> {
  const team = await getTeam(db, teamId);
  if (!team) throw new AdminError(`no team with id ${teamId}`);
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

export async function updateTeam(db: Queryable, teamId: string, input: { plan?: Plan; runsPerHour?: number }): Promise<Team> {
  const { rows } = await db.query<Team>(
    `UPDATE teams SET plan = coalesce($2::text, plan), runs_per_hour = coalesce($3::integer, runs_per_hour)
      WHERE id = $1::uuid RETURNING ${TEAM_COLUMNS}`,
    [teamId, input.plan ?? null, input.runsPerHour ?? null],
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

export async function addMember(db: Db, input: { teamId: string; email: string; role: Role }): Promise<Member> {
  return db.tx(async (tx) => {
    await mustGetTeam(tx, input.teamId);
    const { rows } = await tx.query<Member>(
      `INSERT INTO members (id, team_id, email, role) VALUES ($1::uuid, $2::uuid, $3::text, $4::text)
       ON CONFLICT DO NOTHING RETURNING id, team_id, email, role, removed_at`,
      [randomUUID(), input.teamId, input.email, input.role],
    );
    if (!rows[0]) throw new AdminError(`${input.email} is already a member of team ${input.teamId}`);
    return rows[0];
  });
}

export async function getMember(db: Queryable, memberId: string, opts: { lock?: boolean } = {}): Promise<Member | null> {
  const { rows } = await db.query<Member>(
    `SELECT id, team_id, email, role, removed_at FROM members WHERE id = $1::uuid${opts.lock ? ' FOR UPDATE' : ''}`,
    [memberId],
  );
  return rows[0] ?? null;
}

export async function updateMember(db: Queryable, memberId: string, role: Role): Promise<Member> {
  const { rows } = await db.query<Member>(
    `UPDATE members SET role = $2::text WHERE id = $1::uuid AND removed_at IS NULL RETURNING id, team_id, email, role, removed_at`,
    [memberId, role],
  );
  if (!rows[0]) throw new AdminError(`no active member with id ${memberId}`);
  return rows[0];
}

/** The member's keys stop working for good: they join on an active member, which this one never is again. */
export async function removeMember(db: Queryable, memberId: string): Promise<Member> {
  const { rows } = await db.query<Member>(
    `UPDATE members SET removed_at = now() WHERE id = $1::uuid AND removed_at IS NULL RETURNING id, team_id, email, role, removed_at`,
    [memberId],
  );
  if (!rows[0]) throw new AdminError(`no active member with id ${memberId}`);
  return rows[0];
}

export async function countTeams(db: Queryable): Promise<number> {
  const { rows } = await db.query<{ n: number }>('SELECT count(*)::integer AS n FROM teams');
  return rows[0]?.n ?? 0;
}
