// A browser's side of the console API: the session cookie and CSRF token it holds, requests over
// real sockets (from a chosen local address when asked), and members signed in through invites.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { Role } from '../../src/auth/repository.js';
import { createInvite } from '../../src/console/invites.js';
import type { Db } from '../../src/db/pool.js';
import { addMember } from '../../src/teams/repository.js';
import type { AnsweredRequest } from './error-envelope.js';
import { socketRequest } from './socket-request.js';

export const STRONG_PASSWORD = 'plinth otter marmalade quasar';

export interface SessionJson {
  member: { id: string; email: string; role: Role };
  team: { id: string; name: string; plan: string };
  csrf_token: string;
}

/** The value of the toolrun_session cookie a response sets ('' when it clears it), or null. */
export function setCookieOf(res: AnsweredRequest): { value: string; attributes: string } | null {
  const raw = res.headers['set-cookie'];
  const line = (Array.isArray(raw) ? raw : raw === undefined ? [] : [String(raw)]).find((l) => l.startsWith('toolrun_session='));
  if (!line) return null;
  const [pair = '', ...rest] = line.split(';');
  return { value: pair.slice('toolrun_session='.length), attributes: rest.map((a) => a.trim()).join('; ') };
}

export class ConsoleClient {
  cookie: string | null = null;
  csrf: string | null = null;

  constructor(
    readonly baseUrl: string,
    readonly opts: { localAddress?: string; origin?: string | null } = {},
  ) {}

  /** One request; the session's cookie and CSRF token go along unless `headers` says otherwise. */
  async call(method: string, path: string, body?: unknown, headers: Record<string, string | null> = {}): Promise<AnsweredRequest> {
    const all: Record<string, string | null> = {
      ...(this.cookie ? { cookie: `toolrun_session=${this.cookie}` } : {}),
      ...(this.csrf && method !== 'GET' ? { 'x-csrf-token': this.csrf } : {}),
      ...(this.opts.origin && method !== 'GET' ? { origin: this.opts.origin } : {}),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...headers,
    };
    const sent = Object.fromEntries(Object.entries(all).filter((e): e is [string, string] => e[1] !== null));
    const res = await socketRequest(this.baseUrl, path, {
      method,
      headers: sent,
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      ...(this.opts.localAddress ? { localAddress: this.opts.localAddress } : {}),
    });
    const set = setCookieOf(res);
    if (set) this.cookie = set.value || null;
    return res;
  }

  /** Keeps the CSRF token of a Session answer. */
  keep(res: AnsweredRequest): SessionJson {
    assert.equal(res.statusCode, 200, res.body);
    const session = res.json<SessionJson>();
    this.csrf = session.csrf_token;
    return session;
  }

  async signIn(email: string, password = STRONG_PASSWORD): Promise<SessionJson> {
    return this.keep(await this.call('POST', '/console/api/session', { email, password }));
  }

  async accept(token: string, password = STRONG_PASSWORD): Promise<SessionJson> {
    return this.keep(await this.call('POST', '/console/api/invites/accept', { token, password }));
  }
}

/** The token of an invite link (after #token=). */
export function tokenOf(inviteUrl: string): string {
  const token = new URL(inviteUrl).hash.replace(/^#token=/, '');
  assert.ok(token.length >= 43, inviteUrl);
  return token;
}

export interface SignedInMember {
  client: ConsoleClient;
  memberId: string;
  email: string;
  session: SessionJson;
}

/** A member who set a password through an invite link and is signed in. */
export async function inviteAndSignIn(baseUrl: string, db: Db, memberId: string): Promise<SignedInMember> {
  const invite = await createInvite(db, baseUrl, memberId);
  const client = new ConsoleClient(baseUrl);
  const session = await client.accept(tokenOf(invite.invite_url));
  return { client, memberId, email: session.member.email, session };
}

/** A new member of the team with the given role, signed in. */
export async function signedInMember(baseUrl: string, db: Db, teamId: string, role: Role): Promise<SignedInMember> {
  const member = await addMember(db, { teamId, email: `${role}-${randomUUID()}@example.test`, role });
  return inviteAndSignIn(baseUrl, db, member.id);
}
