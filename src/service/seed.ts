import type { Config } from '../config/config.js';
import type { Db } from '../db/pool.js';
import { createApiKey } from '../auth/key-admin.js';
import { createInvite } from '../console/invites.js';
import { addMember, countTeams, createTeam } from '../teams/repository.js';

export interface DemoSeed {
  teamId: string;
  key: string;
  /** The owner's console invite link: how the first person signs in. */
  inviteUrl: string;
  inviteExpiresAt: string;
}

const DEMO_LOCK = 7_301_442_001;

/**
 * On an empty database outside production: a demo team (Pro, 1000 Sparks), its owner, one key
 * with every scope and the owner's console invite link. An advisory lock makes concurrent first starts seed once.
 */
export async function seedDemo(config: Config, db: Db): Promise<DemoSeed | null> {
  if (config.production || !config.demoSeed) return null;
  const client = await db.pool.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1::bigint)', [DEMO_LOCK]);
    if ((await countTeams(client)) > 0) return null;
    const team = await createTeam(db, { name: 'Demo team', plan: 'pro', sparks: 1000 });
    const owner = await addMember(db, { teamId: team.id, email: 'owner@demo.invalid', role: 'owner' });
    const created = await createApiKey(db, {
      memberId: owner.id,
      name: 'Demo key',
      scopes: ['read', 'run', 'webhooks'],
      rate: 60,
      envPrefix: config.keyEnvPrefix,
    });
    const invite = await createInvite(db, config.publicBaseUrl, owner.id);
    return { teamId: team.id, key: created.key, inviteUrl: invite.invite_url, inviteExpiresAt: invite.expires_at };
  } finally {
    await client.query('SELECT pg_advisory_unlock($1::bigint)', [DEMO_LOCK]).catch(() => undefined);
    client.release();
  }
}
