// The operator CLI's team, Sparks and member commands as real child processes
// (`node bin/toolrun.js admin ...`): their JSON, and the exit codes and messages of their
// refusals. API keys: cli-admin-keys.test.ts; invite links: cli-admin-invite.test.ts;
// configuration errors and `migrate`: cli-migrate.test.ts; the embedded-PostgreSQL path:
// cli-embedded.test.ts.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { CliAdmin, cliCalls, EX_USAGE, sortedKeys, type MemberJson, type TeamJson } from './helpers/cli-admin.js';

let cli: CliAdmin;

before(async () => {
  cli = await CliAdmin.start({ api: true });
});
after(async () => {
  await cli.close();
});

const { ok, refused, createTeam, addMember, me } = cliCalls(() => cli);

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
    const { rows } = await cli.database.db.pool.query<{ amount: number }>(
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

describe('toolrun admin member: owners', () => {
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
