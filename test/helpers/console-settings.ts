// The server and the signed-in owners the console settings tests (test/console-settings-*.test.ts
// and the other console files on the same server) share. Each test file starts its own server (its
// own database) through consoleSettingsSuite().
import { randomUUID } from 'node:crypto';
import { addMember, createTeam } from '../../src/teams/repository.js';
import { inviteAndSignIn, type SignedInMember } from './console.js';
import { consoleSuite, type ConsoleSuite, type ConsoleSuiteOptions } from './console-suite.js';
import { bearer } from './fixtures.js';
import type { AnsweredRequest } from './error-envelope.js';
import { socketRequest } from './socket-request.js';
import { testRegistry } from './test-tools.js';
import { webhookTeam } from './webhooks.js';

const ENV = { TOOLRUN_ALLOW_PRIVATE_NETWORK: '1', TOOLRUN_WEBHOOK_RETRY_DELAYS: '1,1,1', TOOLRUN_WORKER_POLL_MS: '200' };

export interface ConsoleSettingsSuite extends ConsoleSuite {
  /** The owner of a new team, signed in to the console. */
  ownerOf(plan?: 'pro' | 'free'): Promise<SignedInMember>;
  /** GET /v1/me with an API key. */
  me(key: string): Promise<AnsweredRequest>;
}

export function consoleSettingsSuite(opts: Pick<ConsoleSuiteOptions, 'setUp' | 'tearDown'> = {}): ConsoleSettingsSuite {
  const suite = consoleSuite({ ...opts, tools: testRegistry, env: ENV });
  const { db, url } = suite;
  return {
    ...suite,
    async ownerOf(plan = 'pro') {
      if (plan === 'free') {
        const team = await createTeam(db(), { name: 'Free team', plan: 'free' });
        const m = await addMember(db(), { teamId: team.id, email: `free-owner-${randomUUID()}@example.test`, role: 'owner' });
        return inviteAndSignIn(url(), db(), m.id);
      }
      const team = await webhookTeam(db());
      return inviteAndSignIn(url(), db(), team.memberId);
    },
    me: (key) => socketRequest(url(), '/v1/me', { headers: bearer(key) }),
  };
}
