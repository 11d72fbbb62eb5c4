// The operator CLI as real child processes (`node bin/toolrun.js ...`): configuration errors that
// stop every command, `migrate` (on empty databases, concurrently, and the refusals of admin
// commands on a database it has not migrated), the database line on stderr, and help.
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { Command } from 'commander';
import pg from 'pg';
import { adminCommand } from '../src/cli/admin.js';
import { loadConfig } from '../src/config/config.js';
import { CliAdmin, cliCalls, DATABASE_LINE, EX_UNAVAILABLE, EX_USAGE } from './helpers/cli-admin.js';

const EX_CONFIG = 78;

let cli: CliAdmin;

before(async () => {
  cli = await CliAdmin.start();
});
after(async () => {
  await cli.close();
});

const { toolrun, ok, refused } = cliCalls(() => cli);

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
    const u = new URL(cli.database.url);
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
    walk(adminCommand(loadConfig({ ...process.env, DATABASE_URL: cli.database.url }), async () => undefined), 'admin');
    assert.deepEqual(undescribed, []);
    const memberHelp = await toolrun(['admin', 'member', 'list', '--help']);
    assert.equal(memberHelp.code, 0);
    assert.match(memberHelp.stdout, /a team's members \(removed ones left out\)/);
    await refused(['launch'], EX_USAGE, /unknown command 'launch'/);
  });
});
