import { Command, InvalidArgumentError } from 'commander';
import type { Config } from '../config/config.js';
import { webhooksAdminCommand } from './admin-webhooks.js';
import { baseUrl, integer, oneOf, uuid, type WithDb } from './options.js';
import { createApiKey, DEFAULT_RATE, listApiKeys, parseScopes, RATE_CHOICES, revokeApiKey } from '../auth/key-admin.js';
import type { Plan, Role, Scope } from '../auth/repository.js';
import {
  addMember,
  AdminError,
  grantSparks,
  isEmailAddress,
  listMembers,
  listTeams,
  mustGetTeam,
  PLANS,
  ROLES,
  updateTeam,
  type Member,
  type Team,
} from '../teams/repository.js';
import { removeMember, updateMember } from '../teams/membership.js';

// `default` stays a word here (commander turns a parser's null into ''); the action maps it to null.
function concurrentRuns(raw: string): number | 'default' {
  if (raw === 'default') return raw;
  const n = integer('--max-concurrent-runs', { min: 1 })(raw);
  if (n > 1000) throw new InvalidArgumentError('--max-concurrent-runs must be a whole number from 1 to 1000, or default');
  return n;
}

function rate(raw: string): number {
  const n = integer('--rate')(raw);
  if (!RATE_CHOICES.includes(n)) throw new InvalidArgumentError(`--rate must be one of ${RATE_CHOICES.join(', ')}`);
  return n;
}

function scopes(raw: string): Scope[] {
  try {
    return parseScopes(raw);
  } catch (err) {
    if (err instanceof AdminError) throw new InvalidArgumentError(`--scopes: ${err.message}`);
    throw err;
  }
}

/** Which base URL invite links are built on, where it came from, and how to change it. */
export function inviteBaseLine(config: Config, flag: string | undefined): string {
  if (flag) return `invite links use ${flag} from --base-url`;
  if (config.publicBaseUrlSource === 'PUBLIC_BASE_URL') return `invite links use ${config.publicBaseUrl} from PUBLIC_BASE_URL (--base-url overrides it)`;
  return (
    `invite links use ${config.publicBaseUrl}, the default (PUBLIC_BASE_URL is not set here, so http://HOST:PORT); ` +
    'if members open the console elsewhere, set PUBLIC_BASE_URL as the server has it, or pass --base-url'
  );
}

const teamView = (t: Team) => ({ team: t });
const memberView = (m: Member) => ({ member: { id: m.id, email: m.email, role: m.role } });

export function adminCommand(config: Config, withDb: WithDb): Command {
  const admin = new Command('admin').description(
    'operator commands against the database the service uses (never a new one); each prints JSON on stdout and names the database on stderr',
  );

  const team = admin.command('team').description('create, list, show and change teams');
  team
    .command('list')
    .description('teams, oldest first (the demo team is the first on a new install)')
    .option('--limit <n>', 'most teams to print (default 100)', integer('--limit', { min: 1 }), 100)
    .action((o: { limit: number }) => withDb(async (db) => ({ object: 'list', data: await listTeams(db.pool, Math.min(o.limit, 10_000)) })));
  team
    .command('create')
    .description('make a team with a plan and, optionally, a first grant of Sparks')
    .requiredOption('--name <name>', 'team name')
    .requiredOption('--plan <plan>', PLANS.join('|'), oneOf('--plan', PLANS))
    .option('--sparks <n>', 'initial Sparks grant', integer('--sparks', { min: 0 }))
    .option('--runs-per-hour <n>', 'hourly ceiling on new runs (default 1000)', integer('--runs-per-hour', { min: 1 }))
    .action((o: { name: string; plan: Plan; sparks?: number; runsPerHour?: number }) =>
      withDb(async (db) => {
        const { createTeam } = await import('../teams/repository.js');
        if (!o.name.trim() || o.name.length > 200) throw new AdminError('--name must be 1 to 200 characters');
        return teamView(await createTeam(db, o));
      }),
    );
  team
    .command('update')
    .description("change a team's plan, hourly ceiling on new runs or concurrent runs (keys see it within seconds)")
    .requiredOption('--team <id>', 'team id', uuid('--team'))
    .option('--plan <plan>', PLANS.join('|'), oneOf('--plan', PLANS))
    .option('--runs-per-hour <n>', 'hourly ceiling on new runs', integer('--runs-per-hour', { min: 1 }))
    .option(
      '--max-concurrent-runs <n>',
      "runs of the team running at once, 1 to 1000 (more stay queued), or `default` for the plan's (TOOLRUN_TEAM_CONCURRENCY)",
      concurrentRuns,
    )
    .action((o: { team: string; plan?: Plan; runsPerHour?: number; maxConcurrentRuns?: number | 'default' }) =>
      withDb(async (db) =>
        teamView(await updateTeam(db.pool, o.team, { ...o, maxConcurrentRuns: o.maxConcurrentRuns === 'default' ? null : o.maxConcurrentRuns })),
      ),
    );
  team
    .command('show')
    .description('one team: plan, Sparks available, hourly ceiling')
    .requiredOption('--team <id>', 'team id', uuid('--team'))
    .action((o: { team: string }) => withDb(async (db) => teamView(await mustGetTeam(db.pool, o.team))));

  admin
    .command('sparks')
    .description("change a team's Sparks")
    .command('grant')
    .description('add Sparks to a team, or deduct them with a negative amount (never below zero)')
    .requiredOption('--team <id>', 'team id', uuid('--team'))
    .requiredOption('--amount <n>', 'Sparks to add (negative deducts)', integer('--amount'))
    .action((o: { team: string; amount: number }) => withDb(async (db) => teamView(await grantSparks(db, o.team, o.amount))));

  const member = admin.command('member').description('list, add, change, remove and invite team members');
  member
    .command('list')
    .description("a team's members (removed ones left out), oldest first: the demo owner is the demo team's first")
    .requiredOption('--team <id>', 'team id', uuid('--team'))
    .action((o: { team: string }) => withDb(async (db) => ({ object: 'list', data: await listMembers(db.pool, o.team) })));
  member
    .command('add')
    .description('add a member to a team (then `member invite` gives them a console link)')
    .requiredOption('--team <id>', 'team id', uuid('--team'))
    .requiredOption('--email <email>', 'member email')
    .requiredOption('--role <role>', ROLES.join('|'), oneOf('--role', ROLES))
    .action((o: { team: string; email: string; role: Role }) =>
      withDb(async (db) => {
        if (!isEmailAddress(o.email)) throw new AdminError('--email must be an email address');
        return memberView(await addMember(db, { teamId: o.team, email: o.email, role: o.role }));
      }),
    );
  member
    .command('update')
    .description("change a member's role (a team keeps at least one owner)")
    .requiredOption('--member <id>', 'member id', uuid('--member'))
    .requiredOption('--role <role>', ROLES.join('|'), oneOf('--role', ROLES))
    .action((o: { member: string; role: Role }) => withDb(async (db) => memberView(await updateMember(db, o.member, o.role))));
  member
    .command('remove')
    .description("remove a member: their keys stop for good and their console sessions end")
    .requiredOption('--member <id>', 'member id', uuid('--member'))
    .action((o: { member: string }) => withDb(async (db) => memberView(await removeMember(db, o.member))));

  member
    .command('invite')
    .description("print a one-time link that sets the member's console password (valid 72 hours; replaces earlier links)")
    .requiredOption('--member <id>', 'member id', uuid('--member'))
    .option('--base-url <url>', "the address members open the console at (default: PUBLIC_BASE_URL, else http://HOST:PORT)", baseUrl('--base-url'))
    .action((o: { member: string; baseUrl?: string }) =>
      withDb(async (db) => {
        const { createInvite } = await import('../console/invites.js');
        const made = await createInvite(db, o.baseUrl ?? config.publicBaseUrl, o.member);
        // This process's environment is not necessarily the server's: a link on another host or
        // port is dead, so say which base was used and where it came from (after the database line).
        process.stderr.write(`toolrun: ${inviteBaseLine(config, o.baseUrl)}\n`);
        return made;
      }),
    );

  const key = admin.command('key').description('create, list and revoke API keys');
  key
    .command('create')
    .description("make an API key for an owner or admin (a lost demo key is replaced so); the full key is printed only here")
    .requiredOption('--member <id>', 'member id (an owner or admin)', uuid('--member'))
    .requiredOption('--name <name>', 'key name')
    .option('--scopes <list>', 'comma-separated: read,run,webhooks (read is always on; default read,run)', scopes)
    .option('--rate <n>', `requests per minute: ${RATE_CHOICES.join('|')}`, rate, DEFAULT_RATE)
    .action((o: { member: string; name: string; scopes?: Scope[]; rate: number }) =>
      withDb(async (db) =>
        createApiKey(db, {
          memberId: o.member,
          name: o.name,
          scopes: o.scopes ?? parseScopes(undefined),
          rate: o.rate,
          envPrefix: config.keyEnvPrefix,
        }),
      ),
    );
  key
    .command('revoke')
    .description('revoke a key: it fails at once in every API process')
    .requiredOption('--key <id>', 'API key id', uuid('--key'))
    .action((o: { key: string }) => withDb(async (db) => ({ api_key: await revokeApiKey(db.pool, o.key) })));
  key
    .command('list')
    .description("a team's keys, without their secrets")
    .requiredOption('--team <id>', 'team id', uuid('--team'))
    .action((o: { team: string }) => withDb(async (db) => ({ object: 'list', data: await listApiKeys(db.pool, o.team) })));

  admin
    .command('brand-kits')
    .description('brand kits teams saved (brand_kit_extract with save: true)')
    .command('list')
    .description("a team's saved brand kits, newest first")
    .requiredOption('--team <id>', 'team id', uuid('--team'))
    .option('--limit <n>', 'most kits to print, newest first (default 100)', integer('--limit', { min: 1 }), 100)
    .action((o: { team: string; limit: number }) =>
      withDb(async (db) => {
        const { listBrandKits } = await import('../tools/brand-kit/store.js');
        return { object: 'list', data: await listBrandKits(db.pool, o.team, Math.min(o.limit, 1000)) };
      }),
    );

  admin.addCommand(webhooksAdminCommand(withDb));

  return admin;
}
