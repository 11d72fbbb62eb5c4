import { createApiKey } from '../../src/auth/key-admin.js';
import type { EnvPrefix } from '../../src/auth/keys.js';
import type { Plan, Role, Scope } from '../../src/auth/repository.js';
import type { Db } from '../../src/db/pool.js';
import { addMember, createTeam } from '../../src/teams/repository.js';

export interface TeamFixture {
  teamId: string;
  memberId: string;
  keyId: string;
  key: string;
}

let counter = 0;

/** A team with one owner and one key, made through the same code the operator CLI uses. */
export async function makeTeam(
  db: Db,
  opts: { plan?: Plan; sparks?: number; role?: Role; scopes?: Scope[]; rate?: number; envPrefix?: EnvPrefix } = {},
): Promise<TeamFixture> {
  counter++;
  const team = await createTeam(db, { name: `Team ${counter}`, plan: opts.plan ?? 'pro', sparks: opts.sparks ?? 100 });
  const member = await addMember(db, { teamId: team.id, email: `owner${counter}@example.test`, role: opts.role ?? 'owner' });
  const created = await createApiKey(db, {
    memberId: member.id,
    name: `key ${counter}`,
    scopes: opts.scopes ?? ['read', 'run'],
    rate: opts.rate ?? 60,
    envPrefix: opts.envPrefix ?? 'svc_test_',
  });
  return { teamId: team.id, memberId: member.id, keyId: created.api_key.id, key: created.key };
}

export function bearer(key: string): Record<string, string> {
  return { authorization: `Bearer ${key}` };
}

/** One API call over a real socket with the key, the body sent as JSON when there is one. */
export function callApi(
  baseUrl: string,
  key: string,
  method: string,
  url: string,
  body?: unknown,
  headers: Record<string, string> = {},
  opts: { timeoutMs?: number } = {},
): Promise<Response> {
  return fetch(`${baseUrl}${url}`, {
    method,
    headers: { ...bearer(key), ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
    ...(opts.timeoutMs === undefined ? {} : { signal: AbortSignal.timeout(opts.timeoutMs) }),
  });
}
