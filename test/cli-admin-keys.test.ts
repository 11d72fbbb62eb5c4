// The operator CLI's API-key commands as real child processes (`node bin/toolrun.js admin key
// ...`): their JSON, their refusals, and that the keys they make (and revoke) really work, or stop
// working, on the same database served in-process.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { answeredWith } from './helpers/app.js';
import { CliAdmin, cliCalls, EX_USAGE, sortedKeys, type MemberJson, type TeamJson } from './helpers/cli-admin.js';

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

let cli: CliAdmin;

before(async () => {
  cli = await CliAdmin.start({ api: true });
});
after(async () => {
  await cli.close();
});

const { toolrun, ok, refused, createTeam, addMember, me } = cliCalls(() => cli);

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
    const { rows } = await cli.database.db.pool.query('SELECT 1 FROM api_keys WHERE team_id = ANY($1::uuid[])', [[team.id, free.team.id]]);
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
