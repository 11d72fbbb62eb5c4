import fs from 'node:fs/promises';
import path from 'node:path';
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

/** Where a demo seed's key and invite link go when stdout is not a terminal, under the data directory. */
export const DEMO_CREDENTIALS_FILE = 'demo-credentials.txt';

function demoText(seeded: DemoSeed, url: string): string {
  return (
    `Demo team created (plan pro, 1000 Sparks). Its API key, shown only now:\n\n  ${seeded.key}\n\n` +
    `Try it:\n\n  curl -H "Authorization: Bearer ${seeded.key}" ${url}/v1/me\n\n` +
    `Team console: set the owner's (owner@demo.invalid) password with this link, valid until ${seeded.inviteExpiresAt}:\n\n  ${seeded.inviteUrl}\n\n`
  );
}

/**
 * Hands the demo key and invite link to the operator, never to a log. On a terminal they are
 * printed. Anywhere else (stdout sent to a file, a pipe, a container's log collector) whatever
 * reads the output would keep them, so they go to a file in the data directory that only this
 * user can read, and one line names it. Returns that file, or null when printed.
 */
export async function showDemoSeed(seeded: DemoSeed, url: string, dataDir: string, out: NodeJS.WritableStream): Promise<string | null> {
  const text = demoText(seeded, url);
  if ((out as { isTTY?: boolean }).isTTY === true) {
    out.write(`\n${text}`);
    return null;
  }
  await fs.mkdir(dataDir, { recursive: true, mode: 0o700 });
  const file = path.join(dataDir, DEMO_CREDENTIALS_FILE);
  // A fresh file (O_EXCL), so the mode is ours and no link planted at the name is followed; an
  // earlier seed's (the database was emptied, the data directory kept) is replaced.
  await fs.rm(file, { force: true });
  await fs.writeFile(file, text, { mode: 0o600, flag: 'wx' });
  out.write(`Demo team created (plan pro, 1000 Sparks). Its API key and the owner's console invite link are in ${file} (readable by this user only).\n`);
  return file;
}
