// The server and the signed-in owners the console settings tests (test/console-settings-*.test.ts)
// share. Each test file starts its own server (its own database) from its before hook.
import { randomUUID } from 'node:crypto';
import { addMember, createTeam } from '../../src/teams/repository.js';
import { inviteAndSignIn, type SignedInMember } from './console.js';
import { bearer } from './fixtures.js';
import { startTestServer, type TestServer } from './server.js';
import { socketRequest } from './socket-request.js';
import { testRegistry } from './test-tools.js';
import { webhookTeam } from './webhooks.js';

const ENV = { TOOLRUN_ALLOW_PRIVATE_NETWORK: '1', TOOLRUN_WEBHOOK_RETRY_DELAYS: '1,1,1', TOOLRUN_WORKER_POLL_MS: '200' };

// A live binding: set by startConsoleSettingsServer(), read by the tests of the file that started it.
export let s: TestServer;

export async function startConsoleSettingsServer(): Promise<void> {
  s = await startTestServer({ tools: testRegistry(), env: ENV });
}

export const db = () => s.database.db;

/** The owner of a new team, signed in to the console. */
export async function ownerOf(plan: 'pro' | 'free' = 'pro'): Promise<SignedInMember> {
  if (plan === 'free') {
    const team = await createTeam(db(), { name: 'Free team', plan: 'free' });
    const m = await addMember(db(), { teamId: team.id, email: `free-owner-${randomUUID()}@example.test`, role: 'owner' });
    return inviteAndSignIn(s.url, db(), m.id);
  }
  const team = await webhookTeam(db());
  return inviteAndSignIn(s.url, db(), team.memberId);
}

export const me = (key: string) => socketRequest(s.url, '/v1/me', { headers: bearer(key) });
