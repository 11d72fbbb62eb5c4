// Shared by the API-key authentication tests (test/auth-*.test.ts): an app with the test routes
// on its own database and a Pro team to call it with, plus the calls those tests make: GET /v1/me
// with a key or a raw Authorization header, and members and keys made straight in PostgreSQL.
import type { LightMyRequestResponse } from 'fastify';
import { createApiKey, listApiKeys } from '../../src/auth/key-admin.js';
import type { Role } from '../../src/auth/repository.js';
import type { Db } from '../../src/db/pool.js';
import { addMember } from '../../src/teams/repository.js';
import { createTestApp, type TestApp } from './app.js';
import { bearer, makeTeam, type TeamFixture } from './fixtures.js';
import { testRoutes } from './test-routes.js';

export const SESSION_JWT =
  'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJ1c2VyXzEiLCJ0ZWFtIjoidGVhbV8xIiwiaWF0IjoxNzAwMDAwMDAwfQ.c2lnbmF0dXJlLW5vdC1jaGVja2Vk';
export const WELL_FORMED_UNKNOWN = `svc_test_${'A1b2C3d4'}${'Zz9Yy8Xx7Ww6Vv5Uu4Tt3Ss2Rr1Qq0Pp'}`;

/** One test file's app (own database, the test routes) and the Pro team most of its tests use. */
export async function startAuthApp(): Promise<{ t: TestApp; team: TeamFixture }> {
  const t = await createTestApp({ extraRoutes: testRoutes });
  const team = await makeTeam(t.database.db, { sparks: 40, rate: 300 });
  return { t, team };
}

export interface AuthCalls {
  db(): Db;
  me(key: string | null, app?: TestApp): Promise<LightMyRequestResponse>;
  meWithAuthorization(authorization: string): Promise<LightMyRequestResponse>;
  addTo(teamId: string, role: Role, email?: string): ReturnType<typeof addMember>;
  newKey(memberId: string, opts?: { rate?: number; envPrefix?: 'svc_test_' | 'svc_live_' }): ReturnType<typeof createApiKey>;
  activeKeyCount(teamId: string): Promise<number>;
}

/**
 * The calls bound to a file's app. The app is read when a call is made, not now: the calls are
 * made at the top of the file, the app only in its `before` hook.
 */
export function authCalls(current: () => TestApp): AuthCalls {
  let emailCounter = 0;
  const db = () => current().database.db;

  function me(key: string | null, app: TestApp = current()): Promise<LightMyRequestResponse> {
    return app.app.inject({ method: 'GET', url: '/v1/me', headers: key === null ? {} : bearer(key) });
  }

  function meWithAuthorization(authorization: string): Promise<LightMyRequestResponse> {
    return current().app.inject({ method: 'GET', url: '/v1/me', headers: { authorization } });
  }

  async function addTo(teamId: string, role: Role, email?: string) {
    emailCounter++;
    return addMember(db(), { teamId, email: email ?? `person${emailCounter}@example.test`, role });
  }

  async function newKey(memberId: string, opts: { rate?: number; envPrefix?: 'svc_test_' | 'svc_live_' } = {}) {
    return createApiKey(db(), {
      memberId,
      name: `key for ${memberId.slice(0, 8)}`,
      scopes: ['read', 'run'],
      rate: opts.rate ?? 300,
      envPrefix: opts.envPrefix ?? 'svc_test_',
    });
  }

  async function activeKeyCount(teamId: string): Promise<number> {
    return (await listApiKeys(db().pool, teamId)).filter((k) => k.active).length;
  }

  return { db, me, meWithAuthorization, addTo, newKey, activeKeyCount };
}
