import type { Plan, Role } from '../auth/repository.js';
import type { Queryable } from '../db/pool.js';
import { hashToken, newToken } from './tokens.js';

/** A session ends this long after its last request... */
export const SESSION_IDLE_SECONDS = 12 * 3600;
/** ...and this long after sign-in, whatever its use. */
export const SESSION_ABSOLUTE_SECONDS = 7 * 24 * 3600;

export interface SessionMember {
  memberId: string;
  email: string;
  role: Role;
  teamId: string;
  teamName: string;
  plan: Plan;
  /** Seconds until the absolute end: the cookie's Max-Age. */
  expiresInSeconds: number;
}

export async function createSession(db: Queryable, memberId: string): Promise<{ token: string; expiresInSeconds: number }> {
  const token = newToken();
  await db.query(
    `INSERT INTO console_sessions (token_hash, member_id, expires_at)
     VALUES ($1::bytea, $2::uuid, now() + make_interval(secs => $3::integer))`,
    [hashToken(token), memberId, SESSION_ABSOLUTE_SECONDS],
  );
  return { token, expiresInSeconds: SESSION_ABSOLUTE_SECONDS };
}

/**
 * The live session of a token with its member (active) and team, read fresh on every request, so
 * a role change or removal applies at once. last_seen_at is written at most once a minute per
 * session (in the same statement), not on every request.
 */
export async function findSession(db: Queryable, token: string): Promise<SessionMember | null> {
  const { rows } = await db.query<{
    member_id: string;
    email: string;
    role: Role;
    team_id: string;
    team_name: string;
    plan: Plan;
    expires_in: number;
  }>({
    name: 'console_find_session',
    text: `WITH s AS (
             SELECT s.token_hash, m.id AS member_id, m.email, m.role, t.id AS team_id, t.name AS team_name, t.plan,
                    greatest(0, round(extract(epoch FROM s.expires_at - now())))::integer AS expires_in,
                    s.last_seen_at
               FROM console_sessions s
               JOIN members m ON m.id = s.member_id AND m.removed_at IS NULL
               JOIN teams t ON t.id = m.team_id
              WHERE s.token_hash = $1::bytea AND s.expires_at > now()
                AND s.last_seen_at > now() - make_interval(secs => $2::integer)
           ), touched AS (
             UPDATE console_sessions c SET last_seen_at = now()
               FROM s WHERE c.token_hash = s.token_hash AND s.last_seen_at < now() - interval '1 minute'
           )
           SELECT member_id, email, role, team_id, team_name, plan, expires_in FROM s`,
    values: [hashToken(token), SESSION_IDLE_SECONDS],
  });
  const r = rows[0];
  if (!r) return null;
  return {
    memberId: r.member_id,
    email: r.email,
    role: r.role,
    teamId: r.team_id,
    teamName: r.team_name,
    plan: r.plan,
    expiresInSeconds: r.expires_in,
  };
}

export async function deleteSession(db: Queryable, token: string): Promise<void> {
  await db.query('DELETE FROM console_sessions WHERE token_hash = $1::bytea', [hashToken(token)]);
}

export async function deleteMemberSessions(db: Queryable, memberId: string): Promise<void> {
  await db.query('DELETE FROM console_sessions WHERE member_id = $1::uuid', [memberId]);
}

/** Ended sessions are of no use to anyone; sign-ins sweep them. */
export async function deleteEndedSessions(db: Queryable): Promise<void> {
  await db.query(
    `DELETE FROM console_sessions WHERE expires_at <= now() OR last_seen_at <= now() - make_interval(secs => $1::integer)`,
    [SESSION_IDLE_SECONDS],
  );
}
