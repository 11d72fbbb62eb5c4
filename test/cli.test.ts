// The operator CLI as real child processes (`node bin/toolrun.js ...`): every admin command and its
// JSON, the exit codes and messages of its refusals, configuration errors, `migrate`, and the
// embedded-PostgreSQL path (TOOLRUN_DATA_DIR without DATABASE_URL).
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Command } from 'commander';
import pg from 'pg';
import { adminCommand } from '../src/cli/admin.js';
import { loadConfig } from '../src/config/config.js';
import { answeredWith, createTestApp, type TestApp } from './helpers/app.js';
import { bearer } from './helpers/fixtures.js';
import { createTestDatabase, type TestDatabase } from './helpers/db.js';
import {
  cleanupDataDir,
  cliEnv,
  killLiveChildren,
  makeDataDir,
  pidGone,
  postmasterPid,
  runCli,
  waitFor,
  type CliResult,
} from './helpers/process.js';

const EX_USAGE = 64;
const EX_UNAVAILABLE = 69;
const EX_CONFIG = 78;
/** The line every admin command that reaches for its database starts stderr with. */
const DATABASE_LINE = /^toolrun: database: \S.* \((DATABASE_URL|TOOLRUN_DATA_DIR)\)\n/;

interface TeamJson {
  id: string;
  name: string;
  plan: string;
  sparks_available: number;
  runs_per_hour: number;
  max_concurrent_runs: number | null;
}
interface MemberJson {
  id: string;
  email: string;
  role: string;
}
interface KeyJson {
  id: string;
  name: string;
  prefix: string;
  scopes: string[];
  rate_limit_per_minute: number;
}
interface KeyListItem extends KeyJson {
  member_id: string;
  created_at: string;
  revoked_at: string | null;
  active: boolean;
}

let database: TestDatabase;
let dataDir: string;
let api: TestApp;
const dataDirs: string[] = [];

before(async () => {
  database = await createTestDatabase();
  dataDir = makeDataDir('cli');
  dataDirs.push(dataDir);
  // The same database, served in-process, to check that keys the CLI makes really work.
  api = await createTestApp({ database });
});
after(async () => {
  killLiveChildren();
  await api.close();
  await database.db.close();
  for (const dir of dataDirs) await cleanupDataDir(dir);
});

/** `toolrun ...` against the test database (DATABASE_URL). */
function toolrun(args: string[], extraEnv: Record<string, string> = {}): Promise<CliResult> {
  return runCli(args, cliEnv({ DATABASE_URL: database.url, TOOLRUN_DATA_DIR: dataDir, ...extraEnv }));
}

/**
 * A command's stderr: for admin commands only the line naming the database (they log only when
 * something is wrong), or for `migrate` only JSON log lines below warning level.
 */
function assertQuietStderr(args: string[], stderr: string): void {
  if (args[0] !== 'migrate') {
    assert.match(stderr, DATABASE_LINE, `toolrun ${args.join(' ')} did not name its database`);
    assert.equal(stderr.replace(DATABASE_LINE, ''), '', `toolrun ${args.join(' ')} wrote to stderr: ${stderr}`);
    return;
  }
  for (const line of stderr.split('\n').filter(Boolean)) {
    const entry = JSON.parse(line) as { level?: number; msg?: string };
    assert.ok(typeof entry.level === 'number' && entry.level <= 30, `toolrun ${args.join(' ')} logged: ${line}`);
  }
}

/** A command's stdout: exactly one line, one JSON document. */
function parseOneJson<T>(args: string[], stdout: string): T {
  assert.ok(stdout.endsWith('\n') && stdout.trim().split('\n').length === 1, `toolrun ${args.join(' ')}: one JSON line expected: ${stdout}`);
  return JSON.parse(stdout) as T;
}

/** Runs a command that must succeed and print exactly one JSON document on stdout. */
async function ok<T>(args: string[], extraEnv: Record<string, string> = {}): Promise<T> {
  const r = await toolrun(args, extraEnv);
  assert.equal(r.code, 0, `toolrun ${args.join(' ')} exited ${r.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
  assertQuietStderr(args, r.stderr);
  return parseOneJson<T>(args, r.stdout);
}

/** Runs a command that must fail with this exit code, nothing on stdout and a message on stderr. */
async function refused(args: string[], code: number, message: RegExp, extraEnv: Record<string, string> = {}): Promise<CliResult> {
  const r = await toolrun(args, extraEnv);
  assert.equal(r.code, code, `toolrun ${args.join(' ')}: exit ${r.code} (wanted ${code})\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
  assert.equal(r.stdout, '', `toolrun ${args.join(' ')}: nothing on stdout expected`);
  // Usage errors stop before the database is named; refusals come after its line.
  const said = r.stderr.replace(DATABASE_LINE, '');
  assert.match(said, message, `toolrun ${args.join(' ')}: stderr`);
  assert.ok(said.trim().split('\n').length <= 2, `a short message expected, got: ${r.stderr}`);
  return r;
}

const sortedKeys = (o: object) => Object.keys(o).sort();

async function createTeam(args: string[] = []): Promise<TeamJson> {
  const out = await ok<{ team: TeamJson }>(['admin', 'team', 'create', '--name', `CLI team ${randomBytes(3).toString('hex')}`, '--plan', 'pro', ...args]);
  return out.team;
}

async function addMember(teamId: string, role: string): Promise<MemberJson> {
  const email = `${role}-${randomBytes(3).toString('hex')}@example.test`;
  return (await ok<{ member: MemberJson }>(['admin', 'member', 'add', '--team', teamId, '--email', email, '--role', role])).member;
}

async function me(key: string): Promise<{ status: number; code?: string; body: Record<string, unknown> }> {
  const res = await api.app.inject({ method: 'GET', url: '/v1/me', headers: bearer(key) });
  const body = res.json<Record<string, unknown> & { error?: { code: string } }>();
  return { status: res.statusCode, code: body.error?.code, body };
}

describe('toolrun admin team', { concurrency: 3 }, () => {
  test('create prints {"team":{id,name,plan,sparks_available,runs_per_hour}}', async () => {
    const out = await ok<{ team: TeamJson }>(['admin', 'team', 'create', '--name', 'Acme Studio', '--plan', 'plus', '--sparks', '250', '--runs-per-hour', '40']);
    assert.deepEqual(sortedKeys(out), ['team']);
    assert.deepEqual(sortedKeys(out.team), ['id', 'max_concurrent_runs', 'name', 'plan', 'runs_per_hour', 'sparks_available']);
    assert.match(out.team.id, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    assert.deepEqual({ ...out.team, id: '' }, { id: '', name: 'Acme Studio', plan: 'plus', sparks_available: 250, runs_per_hour: 40, max_concurrent_runs: null });
  });

  test('create defaults: no Sparks, 1000 runs per hour', async () => {
    const team = await createTeam();
    assert.equal(team.plan, 'pro');
    assert.equal(team.sparks_available, 0);
    assert.equal(team.runs_per_hour, 1000);
  });

  test('show and update', async () => {
    const team = await createTeam(['--sparks', '5']);
    assert.deepEqual(await ok(['admin', 'team', 'show', '--team', team.id]), { team });
    const updated = await ok<{ team: TeamJson }>(['admin', 'team', 'update', '--team', team.id, '--plan', 'team', '--runs-per-hour', '7']);
    assert.deepEqual(updated, { team: { ...team, plan: 'team', runs_per_hour: 7 } });
    const planOnly = await ok<{ team: TeamJson }>(['admin', 'team', 'update', '--team', team.id, '--plan', 'free']);
    assert.deepEqual(planOnly, { team: { ...team, plan: 'free', runs_per_hour: 7 } });
    assert.deepEqual(await ok(['admin', 'team', 'show', '--team', team.id]), planOnly);
    const own = await ok<{ team: TeamJson }>(['admin', 'team', 'update', '--team', team.id, '--max-concurrent-runs', '3']);
    assert.deepEqual(own, { team: { ...planOnly.team, max_concurrent_runs: 3 } });
    const back = await ok<{ team: TeamJson }>(['admin', 'team', 'update', '--team', team.id, '--max-concurrent-runs', 'default']);
    assert.deepEqual(back, planOnly);
    await refused(['admin', 'team', 'update', '--team', team.id, '--max-concurrent-runs', '0'], EX_USAGE, /--max-concurrent-runs/);
    await refused(['admin', 'team', 'update', '--team', team.id, '--max-concurrent-runs', '1001'], EX_USAGE, /--max-concurrent-runs must be a whole number from 1 to 1000, or default/);
  });

  test('an invalid plan, a missing option or bad numbers are usage errors (exit 64)', async () => {
    await refused(['admin', 'team', 'create', '--name', 'X', '--plan', 'gold'], EX_USAGE, /--plan.*free, plus, pro, team/);
    await refused(['admin', 'team', 'create', '--name', 'X'], EX_USAGE, /--plan/);
    await refused(['admin', 'team', 'create', '--name', 'X', '--plan', 'pro', '--sparks', '-5'], EX_USAGE, /--sparks/);
    await refused(['admin', 'team', 'create', '--name', 'X', '--plan', 'pro', '--runs-per-hour', 'many'], EX_USAGE, /--runs-per-hour/);
    await refused(['admin', 'team', 'show', '--team', 'not-a-uuid'], EX_USAGE, /--team.*UUID/);
    await refused(['admin', 'team', 'frobnicate'], EX_USAGE, /unknown command/);
  });

  test('list prints {"object":"list","data":[team...]} oldest first; --limit bounds it', async () => {
    const a = await createTeam();
    const b = await createTeam();
    const all = await ok<{ object: string; data: TeamJson[] }>(['admin', 'team', 'list', '--limit', '10000']);
    assert.equal(all.object, 'list');
    const ids = all.data.map((t) => t.id);
    assert.ok(ids.indexOf(a.id) >= 0 && ids.indexOf(a.id) < ids.indexOf(b.id), 'both teams, the older first');
    assert.deepEqual(all.data.find((t) => t.id === b.id), b);
    const one = await ok<{ data: TeamJson[] }>(['admin', 'team', 'list', '--limit', '1']);
    assert.equal(one.data.length, 1);
    await refused(['admin', 'team', 'list', '--limit', '0'], EX_USAGE, /--limit must be a whole number >= 1/);
  });

  test('an unknown team id exits 1 naming the id, for every command that takes one', async () => {
    const id = randomUUID();
    const msg = new RegExp(`^toolrun: no team with id ${id}\\n$`);
    await refused(['admin', 'team', 'show', '--team', id], 1, msg);
    await refused(['admin', 'team', 'update', '--team', id, '--plan', 'plus'], 1, msg);
    await refused(['admin', 'sparks', 'grant', '--team', id, '--amount', '5'], 1, msg);
    await refused(['admin', 'member', 'add', '--team', id, '--email', 'a@example.test', '--role', 'owner'], 1, msg);
    await refused(['admin', 'key', 'list', '--team', id], 1, msg);
    await refused(['admin', 'member', 'list', '--team', id], 1, msg);
  });
});

describe('toolrun admin sparks grant', () => {
  test('adds, deducts with a negative amount, and refuses to go below zero', async () => {
    const team = await createTeam(['--sparks', '100']);
    assert.deepEqual(await ok(['admin', 'sparks', 'grant', '--team', team.id, '--amount', '50']), { team: { ...team, sparks_available: 150 } });
    assert.deepEqual(await ok(['admin', 'sparks', 'grant', '--team', team.id, '--amount', '-30']), { team: { ...team, sparks_available: 120 } });
    assert.deepEqual(await ok(['admin', 'sparks', 'grant', '--team', team.id, '--amount=-20']), { team: { ...team, sparks_available: 100 } });
    await refused(['admin', 'sparks', 'grant', '--team', team.id, '--amount', '-101'], 1, /cannot deduct 101 Sparks.*has 100 available/);
    await refused(['admin', 'sparks', 'grant', '--team', team.id, '--amount', '0'], 1, /--amount/);
    await refused(['admin', 'sparks', 'grant', '--team', team.id, '--amount', '1.5'], EX_USAGE, /--amount/);
    // The refusals changed nothing, and each accepted grant left one ledger row.
    assert.deepEqual(await ok(['admin', 'team', 'show', '--team', team.id]), { team: { ...team, sparks_available: 100 } });
    const { rows } = await database.db.pool.query<{ amount: number }>(
      "SELECT amount FROM ledger_entries WHERE team_id = $1::uuid AND kind = 'grant' ORDER BY id",
      [team.id],
    );
    assert.deepEqual(rows.map((r) => r.amount), [100, 50, -30, -20]);
    const deductAll = await ok<{ team: TeamJson }>(['admin', 'sparks', 'grant', '--team', team.id, '--amount', '-100']);
    assert.equal(deductAll.team.sparks_available, 0);
  });
});

describe('toolrun admin member', () => {
  test('add prints {"member":{id,email,role}}; update and remove', async () => {
    const team = await createTeam();
    const out = await ok<{ member: MemberJson }>(['admin', 'member', 'add', '--team', team.id, '--email', 'Ada@Example.test', '--role', 'admin']);
    assert.deepEqual(sortedKeys(out), ['member']);
    assert.deepEqual(sortedKeys(out.member), ['email', 'id', 'role']);
    assert.deepEqual({ ...out.member, id: '' }, { id: '', email: 'Ada@Example.test', role: 'admin' });
    await refused(['admin', 'member', 'add', '--team', team.id, '--email', 'ada@example.test', '--role', 'owner'], 1, /already a member/);
    await refused(['admin', 'member', 'add', '--team', team.id, '--email', 'b@example.test', '--role', 'boss'], EX_USAGE, /--role.*owner, admin, member/);
    await refused(['admin', 'member', 'add', '--team', team.id, '--email', 'not-an-email', '--role', 'owner'], 1, /--email/);
    assert.deepEqual(await ok(['admin', 'member', 'update', '--member', out.member.id, '--role', 'member']), { member: { ...out.member, role: 'member' } });
    assert.deepEqual(await ok(['admin', 'member', 'remove', '--member', out.member.id]), { member: { ...out.member, role: 'member' } });
    await refused(['admin', 'member', 'remove', '--member', out.member.id], 1, new RegExp(`no active member with id ${out.member.id}`));
    await refused(['admin', 'member', 'update', '--member', out.member.id, '--role', 'owner'], 1, /no active member/);
    // The email can join again, as a new member.
    const again = await ok<{ member: MemberJson }>(['admin', 'member', 'add', '--team', team.id, '--email', 'ada@example.test', '--role', 'owner']);
    assert.notEqual(again.member.id, out.member.id);
  });
});

describe('toolrun admin member list', () => {
  test("lists a team's current members oldest first; a lost key is replaced from what team list and member list show", async () => {
    const team = await createTeam(['--sparks', '10']);
    const owner = await addMember(team.id, 'owner');
    const admin = await addMember(team.id, 'admin');
    const gone = await addMember(team.id, 'member');
    await ok(['admin', 'member', 'remove', '--member', gone.id]);
    const listed = await ok<{ object: string; data: MemberJson[] }>(['admin', 'member', 'list', '--team', team.id]);
    assert.deepEqual(listed, { object: 'list', data: [owner, admin] });
    // What an operator does for a demo team whose key was lost: find the team, its owner, a new key.
    const teams = await ok<{ data: TeamJson[] }>(['admin', 'team', 'list', '--limit', '10000']);
    const found = teams.data.find((t) => t.name === team.name);
    assert.ok(found);
    const first = (await ok<{ data: MemberJson[] }>(['admin', 'member', 'list', '--team', found.id])).data.find((m) => m.role === 'owner');
    assert.equal(first?.id, owner.id);
    const made = await ok<{ key: string }>(['admin', 'key', 'create', '--member', owner.id, '--name', 'replacement']);
    const res = await me(made.key);
    assert.equal(res.status, 200);
    await refused(['admin', 'member', 'list', '--team', 'nope'], EX_USAGE, /--team.*UUID/);
  });
});

describe('toolrun admin member invite', () => {
  const BASE = 'https://toolrun.example.test';
  const accept = (token: string) =>
    api.app.inject({ method: 'POST', url: '/console/api/invites/accept', payload: { token, password: 'a long enough password' } });
  const tokenOf = (url: string) => url.slice(`${BASE}/console/invite#token=`.length);

  test('prints {"invite_url","expires_at"}: a 72-hour link under PUBLIC_BASE_URL that sets the password; a later link replaces it', async () => {
    const team = await createTeam();
    const owner = await addMember(team.id, 'owner');
    const first = await ok<{ invite_url: string; expires_at: string }>(['admin', 'member', 'invite', '--member', owner.id], { PUBLIC_BASE_URL: BASE });
    assert.deepEqual(sortedKeys(first), ['expires_at', 'invite_url']);
    assert.match(first.invite_url, /^https:\/\/toolrun\.example\.test\/console\/invite#token=[A-Za-z0-9_-]{43}$/);
    const hours = (Date.parse(first.expires_at) - Date.now()) / 3_600_000;
    assert.ok(hours > 71.9 && hours <= 72, `valid for ${hours} h`);
    const second = await ok<{ invite_url: string }>(['admin', 'member', 'invite', '--member', owner.id], { PUBLIC_BASE_URL: BASE });
    assert.equal((await accept(tokenOf(first.invite_url))).statusCode, 404, 'the earlier link stopped working');
    const res = await accept(tokenOf(second.invite_url));
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json<{ member: { id: string } }>().member.id, owner.id);
  });

  test('an unknown or removed member is refused; a malformed id is a usage error', async () => {
    await refused(['admin', 'member', 'invite', '--member', randomUUID()], 1, /no active member/);
    await refused(['admin', 'member', 'invite', '--member', 'nope'], EX_USAGE, /--member must be an id/);
    const team = await createTeam();
    await addMember(team.id, 'owner');
    const admin = await addMember(team.id, 'admin');
    await ok(['admin', 'member', 'remove', '--member', admin.id]);
    await refused(['admin', 'member', 'invite', '--member', admin.id], 1, /no active member/);
  });

  test('the last owner is neither demoted nor removed', async () => {
    const team = await createTeam();
    const owner = await addMember(team.id, 'owner');
    await refused(['admin', 'member', 'update', '--member', owner.id, '--role', 'admin'], 1, /last owner/);
    await refused(['admin', 'member', 'remove', '--member', owner.id], 1, /last owner/);
    const other = await addMember(team.id, 'owner');
    await ok(['admin', 'member', 'update', '--member', owner.id, '--role', 'admin']);
    await refused(['admin', 'member', 'remove', '--member', other.id], 1, /last owner/);
  });
});

describe('toolrun admin key', { concurrency: 2 }, () => {
  test('create prints {"key","api_key":{id,name,prefix,scopes,rate_limit_per_minute}} and the key works', async () => {
    const team = await createTeam(['--sparks', '42']);
    const owner = await addMember(team.id, 'owner');
    const out = await ok<{ key: string; api_key: KeyJson }>(['admin', 'key', 'create', '--member', owner.id, '--name', 'CI deploys']);
    assert.deepEqual(sortedKeys(out), ['api_key', 'key']);
    assert.deepEqual(sortedKeys(out.api_key), ['id', 'name', 'prefix', 'rate_limit_per_minute', 'scopes']);
    assert.match(out.key, /^svc_test_[A-Za-z0-9]{8}[A-Za-z0-9]{32}$/);
    assert.equal(out.api_key.prefix, out.key.slice('svc_test_'.length, 'svc_test_'.length + 8));
    assert.deepEqual({ ...out.api_key, id: '' }, { id: '', name: 'CI deploys', prefix: out.api_key.prefix, scopes: ['read', 'run'], rate_limit_per_minute: 60 });
    const r = await me(out.key);
    assert.equal(r.status, 200);
    assert.deepEqual(r.body.team, { id: team.id, name: team.name, plan: 'pro' });
    assert.equal(r.body.sparks_available, 42);
    assert.deepEqual(r.body.api_key, out.api_key);
  });

  test('scopes and rate choices; read is always on', async () => {
    const team = await createTeam();
    const admin = await addMember(team.id, 'admin');
    const a = await ok<{ api_key: KeyJson }>(['admin', 'key', 'create', '--member', admin.id, '--name', 'hooks', '--scopes', 'webhooks', '--rate', '300']);
    assert.deepEqual(a.api_key.scopes, ['read', 'webhooks']);
    assert.equal(a.api_key.rate_limit_per_minute, 300);
    const b = await ok<{ api_key: KeyJson }>(['admin', 'key', 'create', '--member', admin.id, '--name', 'all', '--scopes', 'webhooks,run,read', '--rate', '30']);
    assert.deepEqual(b.api_key.scopes, ['read', 'run', 'webhooks']);
    assert.equal(b.api_key.rate_limit_per_minute, 30);
    await refused(['admin', 'key', 'create', '--member', admin.id, '--name', 'x', '--rate', '45'], EX_USAGE, /--rate.*30, 60, 120, 300/);
    await refused(['admin', 'key', 'create', '--member', admin.id, '--name', 'x', '--rate', 'fast'], EX_USAGE, /--rate/);
    await refused(['admin', 'key', 'create', '--member', admin.id, '--name', 'x', '--scopes', 'read,admin'], EX_USAGE, /--scopes.*unknown scope "admin"/);
    await refused(['admin', 'key', 'create', '--member', admin.id, '--name', ''], 1, /--name/);
  });

  test('only owners and admins get keys; a Free team gets none; an unknown member is named', async () => {
    const team = await createTeam();
    const member = await addMember(team.id, 'member');
    await refused(['admin', 'key', 'create', '--member', member.id, '--name', 'nope'], 1, /role "member".*only owners and admins create API keys/);
    const free = await ok<{ team: TeamJson }>(['admin', 'team', 'create', '--name', 'Free team', '--plan', 'free']);
    const freeOwner = await addMember(free.team.id, 'owner');
    await refused(['admin', 'key', 'create', '--member', freeOwner.id, '--name', 'nope'], 1, /Free plan.*Plus, Pro or Team/);
    const unknown = randomUUID();
    await refused(['admin', 'key', 'create', '--member', unknown, '--name', 'nope'], 1, new RegExp(`no active member with id ${unknown}`));
    const { rows } = await database.db.pool.query('SELECT 1 FROM api_keys WHERE team_id = ANY($1::uuid[])', [[team.id, free.team.id]]);
    assert.equal(rows.length, 0, 'a refused create left a key behind');
  });

  test('list shows keys without the full key; revoke stops the key', async () => {
    const team = await createTeam();
    const owner = await addMember(team.id, 'owner');
    const k1 = await ok<{ key: string; api_key: KeyJson }>(['admin', 'key', 'create', '--member', owner.id, '--name', 'one']);
    const k2 = await ok<{ key: string; api_key: KeyJson }>(['admin', 'key', 'create', '--member', owner.id, '--name', 'two', '--scopes', 'read']);
    const list = await toolrun(['admin', 'key', 'list', '--team', team.id]);
    assert.equal(list.code, 0, list.stderr);
    for (const k of [k1, k2]) {
      assert.ok(!list.stdout.includes(k.key), 'key list printed a full key');
      assert.ok(!list.stdout.includes(k.key.slice(-32)), 'key list printed a key secret');
    }
    const parsed = JSON.parse(list.stdout) as { object: string; data: KeyListItem[] };
    assert.deepEqual(sortedKeys(parsed), ['data', 'object']);
    assert.equal(parsed.object, 'list');
    assert.deepEqual(parsed.data.map((k) => k.id).sort(), [k1.api_key.id, k2.api_key.id].sort());
    for (const item of parsed.data) {
      assert.deepEqual(sortedKeys(item), ['active', 'created_at', 'id', 'last_used_at', 'member_email', 'member_id', 'name', 'prefix', 'rate_limit_per_minute', 'revoked_at', 'scopes']);
      const made = item.id === k1.api_key.id ? k1 : k2;
      assert.deepEqual({ id: item.id, name: item.name, prefix: item.prefix, scopes: item.scopes, rate_limit_per_minute: item.rate_limit_per_minute }, made.api_key);
      assert.equal(item.member_id, owner.id);
      assert.equal(item.active, true);
      assert.equal(item.revoked_at, null);
    }
    assert.equal((await me(k1.key)).status, 200);
    const revoked = await ok<{ api_key: KeyListItem }>(['admin', 'key', 'revoke', '--key', k1.api_key.id]);
    assert.equal(revoked.api_key.id, k1.api_key.id);
    assert.equal(revoked.api_key.active, false);
    assert.ok(revoked.api_key.revoked_at && !Number.isNaN(Date.parse(revoked.api_key.revoked_at)));
    assert.ok(!JSON.stringify(revoked).includes(k1.key));
    const dead = await me(k1.key);
    assert.deepEqual([dead.status, dead.code], [401, 'invalid_api_key']);
    assert.equal((await me(k2.key)).status, 200, 'revoking one key touched another');
    const after = JSON.parse((await toolrun(['admin', 'key', 'list', '--team', team.id])).stdout) as { data: KeyListItem[] };
    assert.deepEqual(after.data.map((k) => [k.id, k.active]).sort(), [[k1.api_key.id, false], [k2.api_key.id, true]].sort());
    await refused(['admin', 'key', 'revoke', '--key', randomUUID()], 1, /no API key with id/);
  });

  test("a demoted member's key keeps working; a removed member's key dies for good", async () => {
    const team = await createTeam();
    const admin = await addMember(team.id, 'admin');
    const k = await ok<{ key: string }>(['admin', 'key', 'create', '--member', admin.id, '--name', 'k']);
    await ok(['admin', 'member', 'update', '--member', admin.id, '--role', 'member']);
    assert.equal((await me(k.key)).status, 200);
    await ok(['admin', 'member', 'remove', '--member', admin.id]);
    // The CLI is another process: the server hears of the removal from PostgreSQL.
    const gone = await answeredWith(401, async () => {
      const r = await me(k.key);
      return { ...r, statusCode: r.status };
    });
    assert.equal(gone.code, 'invalid_api_key');
    const { member: back } = await ok<{ member: MemberJson }>(['admin', 'member', 'add', '--team', team.id, '--email', admin.email, '--role', 'admin']);
    assert.notEqual(back.id, admin.id);
    assert.equal((await me(k.key)).code, 'invalid_api_key', 're-adding the email brought the old key back');
  });

  test('TOOLRUN_ENV=production issues svc_live_ keys', async () => {
    const team = await createTeam();
    const owner = await addMember(team.id, 'owner');
    const out = await ok<{ key: string; api_key: KeyJson }>(['admin', 'key', 'create', '--member', owner.id, '--name', 'live'], { TOOLRUN_ENV: 'production' });
    assert.match(out.key, /^svc_live_[A-Za-z0-9]{40}$/);
    assert.equal((await me(out.key)).code, 'invalid_api_key', 'a live key works on a non-production server');
  });
});

describe('configuration errors stop the CLI with a message naming the variable', { concurrency: 3 }, () => {
  const cases: [Record<string, string>, RegExp][] = [
    [{ PORT: 'abc' }, /PORT: must be a whole number from 0 to 65535, got "abc"/],
    [{ PORT: '70000' }, /PORT: must be a whole number/],
    [{ TOOLRUN_ENV: 'production', TOOLRUN_ALLOW_PRIVATE_NETWORK: '1' }, /TOOLRUN_ALLOW_PRIVATE_NETWORK: .*production/],
    [{ TOOLRUN_ALLOW_PRIVATE_NETWORK: 'maybe' }, /TOOLRUN_ALLOW_PRIVATE_NETWORK: must be 1\/true/],
    [{ DATABASE_URL: 'mysql://db.example/x' }, /DATABASE_URL: must use postgres: or postgresql:/],
    [{ LOG_LEVEL: 'loud' }, /LOG_LEVEL: must be one of/],
    [{ PUBLIC_BASE_URL: 'not a url' }, /PUBLIC_BASE_URL: must be a URL/],
  ];
  for (const [env, message] of cases) {
    test(Object.entries(env).map(([k, v]) => `${k}=${v}`).join(' '), async () => {
      for (const args of [['admin', 'team', 'show', '--team', randomUUID()], ['migrate'], ['serve']]) {
        const r = await refused(args, EX_CONFIG, message, env);
        assert.match(r.stderr, /^toolrun: configuration error: /);
      }
    });
  }
});

/** An empty, unmigrated database named like the runner's, so a green run drops it. */
async function emptyDatabase(): Promise<string> {
  const name = `toolrun_t_${(process.env.TEST_RUN_ID ?? 'adhoc').toLowerCase()}_${randomBytes(4).toString('hex')}`;
  const adminUrl = process.env.TEST_DATABASE_URL;
  assert.ok(adminUrl, 'TEST_DATABASE_URL is not set');
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE "${name}"`);
  } finally {
    await admin.end();
  }
  const u = new URL(adminUrl);
  u.pathname = `/${name}`;
  return u.toString();
}

describe('toolrun migrate', () => {
  test('migrates an empty database, prints JSON, exits 0, and is idempotent', async () => {
    const url = await emptyDatabase();
    for (let i = 0; i < 2; i++) {
      assert.deepEqual(await ok(['migrate'], { DATABASE_URL: url }), { migrated: true });
    }
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      const { rows } = await client.query<{ name: string }>('SELECT name FROM pgmigrations ORDER BY id');
      assert.ok(rows.length >= 1);
      assert.equal(rows[0]?.name, '0001_foundation');
      assert.equal(new Set(rows.map((r) => r.name)).size, rows.length);
      const teams = await client.query("SELECT to_regclass('public.teams') AS t");
      assert.equal(teams.rows[0]?.t, 'teams');
    } finally {
      await client.end();
    }
  });

  test('migrations started together on a new database all succeed (they take turns); admin commands work after', async () => {
    const url = await emptyDatabase();
    const runs = await Promise.all([0, 1, 2].map(() => toolrun(['migrate'], { DATABASE_URL: url })));
    for (const r of runs) assert.equal(r.code, 0, `exit ${r.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
    const created = await Promise.all(['Race A', 'Race B'].map((name) => toolrun(['admin', 'team', 'create', '--name', name, '--plan', 'plus'], { DATABASE_URL: url })));
    for (const r of created) assert.equal(r.code, 0, `exit ${r.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      const { rows } = await client.query<{ name: string }>('SELECT name FROM teams ORDER BY name');
      assert.deepEqual(rows.map((r) => r.name), ['Race A', 'Race B']);
    } finally {
      await client.end();
    }
  });

  test('admin commands never make a database: an empty one is refused (exit 69), named, and left empty', async () => {
    const url = await emptyDatabase();
    const r = await refused(['admin', 'team', 'create', '--name', 'Nowhere', '--plan', 'pro'], EX_UNAVAILABLE, /holds no Toolrun database: .*`toolrun migrate`/, { DATABASE_URL: url });
    const u = new URL(url);
    assert.ok(r.stderr.startsWith(`toolrun: database: postgres://${u.username}@${u.host}${u.pathname} (DATABASE_URL)\n`), r.stderr);
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      const { rows } = await client.query<{ n: number }>(`SELECT count(*)::integer AS n FROM pg_tables WHERE schemaname = 'public'`);
      assert.equal(rows[0]?.n, 0, 'the admin command created tables');
      // A database an upgrade has not migrated yet is refused too, naming the command that does it.
      await client.end();
      assert.equal((await toolrun(['migrate'], { DATABASE_URL: url })).code, 0);
      const c2 = new pg.Client({ connectionString: url });
      await c2.connect();
      await c2.query('DELETE FROM pgmigrations WHERE id = (SELECT max(id) FROM pgmigrations)');
      await c2.end();
      await refused(['admin', 'team', 'list'], EX_UNAVAILABLE, /needs migrations this version brings: run `toolrun migrate` first/, { DATABASE_URL: url });
    } finally {
      await client.end().catch(() => undefined);
    }
  });

  test('the database line never shows a password', async () => {
    const u = new URL(database.url);
    u.password = 'hunter2-secret';
    u.searchParams.set('password', 'hunter2-secret');
    const r = await toolrun(['admin', 'team', 'list', '--limit', '1'], { DATABASE_URL: u.toString() });
    assert.match(r.stderr, DATABASE_LINE);
    assert.doesNotMatch(r.stderr, /hunter2/);
  });

  test('help and unknown commands; every admin command and option is described', async () => {
    const help = await toolrun(['--help']);
    assert.equal(help.code, 0);
    for (const cmd of ['serve', 'worker', 'migrate', 'admin']) assert.match(help.stdout, new RegExp(`\\b${cmd}\\b`));
    const undescribed: string[] = [];
    const walk = (cmd: Command, at: string): void => {
      if (!cmd.description().trim()) undescribed.push(at);
      for (const o of cmd.options) if (!o.description.trim()) undescribed.push(`${at} ${o.flags}`);
      for (const sub of cmd.commands) walk(sub, `${at} ${sub.name()}`);
    };
    walk(adminCommand(loadConfig({ ...process.env, DATABASE_URL: database.url }), async () => undefined), 'admin');
    assert.deepEqual(undescribed, []);
    const memberHelp = await toolrun(['admin', 'member', 'list', '--help']);
    assert.equal(memberHelp.code, 0);
    assert.match(memberHelp.stdout, /a team's members \(removed ones left out\)/);
    await refused(['launch'], EX_USAGE, /unknown command 'launch'/);
  });
});

describe('the embedded PostgreSQL (TOOLRUN_DATA_DIR, no DATABASE_URL)', () => {
  test('migrate, then admin commands in separate processes share the data, and stop the server they start', async () => {
    const dir = makeDataDir('cli-embedded');
    dataDirs.push(dir);
    const env = cliEnv({ TOOLRUN_DATA_DIR: dir });
    const run = async <T>(args: string[]): Promise<T> => {
      const r = await runCli(args, env);
      assert.equal(r.code, 0, `toolrun ${args.join(' ')} exited ${r.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
      assertQuietStderr(args, r.stderr);
      // Each command stops the embedded server it started, before it exits.
      const pid = postmasterPid(dir);
      assert.ok(pid === null || pidGone(pid), `the embedded PostgreSQL (pid ${pid}) outlived toolrun ${args.join(' ')}`);
      return parseOneJson<T>(args, r.stdout);
    };
    assert.deepEqual(await run(['migrate']), { migrated: true });
    assert.ok(fs.existsSync(path.join(dir, 'pg', 'PG_VERSION')), 'no PostgreSQL data directory under TOOLRUN_DATA_DIR');
    const mode = fs.statSync(path.join(dir, 'pg-password')).mode & 0o777;
    assert.equal(mode & 0o077, 0, `pg-password is readable by others (mode ${mode.toString(8)})`);
    const { team } = await run<{ team: TeamJson }>(['admin', 'team', 'create', '--name', 'Embedded', '--plan', 'team', '--sparks', '9']);
    const shown = await run<{ team: TeamJson }>(['admin', 'team', 'show', '--team', team.id]);
    assert.deepEqual(shown.team, team);
    const r = await runCli(['admin', 'team', 'show', '--team', randomUUID()], env);
    assert.equal(r.code, 1);
    assert.match(r.stderr, new RegExp(`^toolrun: database: the embedded PostgreSQL in ${dir} \\(TOOLRUN_DATA_DIR\\)\\ntoolrun: no team with id `));
    const pid = postmasterPid(dir);
    assert.ok(pid === null || pidGone(pid), 'a failed command left the embedded PostgreSQL running');
  });

  test('admin commands on a data directory without a database are refused (exit 69) and create nothing', async () => {
    const dir = makeDataDir('cli-embedded-none');
    dataDirs.push(dir);
    const before = fs.readdirSync(dir);
    const r = await runCli(['admin', 'team', 'list'], cliEnv({ TOOLRUN_DATA_DIR: dir }));
    assert.equal(r.code, EX_UNAVAILABLE, r.stderr);
    assert.equal(r.stdout, '');
    assert.equal(r.stderr, `toolrun: database: the embedded PostgreSQL in ${dir} (TOOLRUN_DATA_DIR)\ntoolrun: there is no database in ${dir} (TOOLRUN_DATA_DIR): point TOOLRUN_DATA_DIR at the data directory the service uses, or set DATABASE_URL; \`toolrun serve\` or \`toolrun migrate\` makes a new one\n`);
    assert.deepEqual(fs.readdirSync(dir), before, 'the data directory was changed');
    const missing = path.join(dir, 'does-not-exist');
    const r2 = await runCli(['admin', 'team', 'list'], cliEnv({ TOOLRUN_DATA_DIR: missing }));
    assert.equal(r2.code, EX_UNAVAILABLE, r2.stderr);
    assert.ok(!fs.existsSync(missing), 'the admin command made the data directory');
  });

  test('admin commands against a server that is not there, or a database name it lacks: exit 69, a line saying what to check', async () => {
    const away = 'postgres://toolrun@127.0.0.1:1/toolrun';
    const r = await runCli(['admin', 'team', 'list'], cliEnv({ DATABASE_URL: away }));
    assert.equal(r.code, EX_UNAVAILABLE, r.stderr);
    assert.equal(r.stdout, '');
    assert.equal(
      r.stderr,
      `toolrun: database: ${away} (DATABASE_URL)\ntoolrun: cannot reach ${away} (DATABASE_URL) (connect ECONNREFUSED 127.0.0.1:1): check that PostgreSQL runs there and the address is right\n`,
    );
    const u = new URL(database.url);
    u.pathname = `/toolrun_missing_${randomBytes(4).toString('hex')}`;
    const r2 = await runCli(['admin', 'team', 'list'], cliEnv({ DATABASE_URL: u.toString() }));
    assert.equal(r2.code, EX_UNAVAILABLE, r2.stderr);
    assert.match(r2.stderr, /\ntoolrun: database "toolrun_missing_[0-9a-f]{8}" does not exist: point DATABASE_URL at the database the service uses\n$/);
    assert.doesNotMatch(r2.stderr, /\n\s+at /, 'no stack trace');
  });

  test('migrations started together on a new data directory initialise it once; admin commands together share one server', async () => {
    const dir = makeDataDir('cli-embedded-race');
    dataDirs.push(dir);
    const env = cliEnv({ TOOLRUN_DATA_DIR: dir });
    const migrations = await Promise.all([runCli(['migrate'], env), runCli(['migrate'], env)]);
    for (const r of migrations) assert.equal(r.code, 0, `exit ${r.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
    const runs = await Promise.all([
      runCli(['admin', 'team', 'create', '--name', 'Race A', '--plan', 'plus'], env),
      runCli(['admin', 'team', 'create', '--name', 'Race B', '--plan', 'plus'], env),
    ]);
    for (const r of runs) assert.equal(r.code, 0, `exit ${r.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
    await waitFor('the shared server to stop after the last command', () => {
      const pid = postmasterPid(dir);
      return pid === null || pidGone(pid);
    });
    for (const r of runs) {
      const { team } = JSON.parse(r.stdout) as { team: TeamJson };
      const shown = await runCli(['admin', 'team', 'show', '--team', team.id], env);
      assert.equal(shown.code, 0, shown.stderr);
      assert.deepEqual(JSON.parse(shown.stdout), { team });
    }
  });
});
