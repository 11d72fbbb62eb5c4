// The operator CLI's embedded-PostgreSQL path as real child processes: TOOLRUN_DATA_DIR without
// DATABASE_URL (each command starts the server it needs and stops it before it exits), and the
// exit-69 refusals when there is no database to reach.
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { assertQuietStderr, CliAdmin, EX_UNAVAILABLE, parseOneJson, type TeamJson } from './helpers/cli-admin.js';
import { cliEnv, makeDataDir, pidGone, postmasterPid, runCli, waitFor } from './helpers/process.js';

let cli: CliAdmin;

before(async () => {
  cli = await CliAdmin.start();
});
after(async () => {
  await cli.close();
});

describe('the embedded PostgreSQL (TOOLRUN_DATA_DIR, no DATABASE_URL)', () => {
  test('migrate, then admin commands in separate processes share the data, and stop the server they start', async () => {
    const dir = makeDataDir('cli-embedded');
    cli.dataDirs.push(dir);
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
    cli.dataDirs.push(dir);
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
    const u = new URL(cli.database.url);
    u.pathname = `/toolrun_missing_${randomBytes(4).toString('hex')}`;
    const r2 = await runCli(['admin', 'team', 'list'], cliEnv({ DATABASE_URL: u.toString() }));
    assert.equal(r2.code, EX_UNAVAILABLE, r2.stderr);
    assert.match(r2.stderr, /\ntoolrun: database "toolrun_missing_[0-9a-f]{8}" does not exist: point DATABASE_URL at the database the service uses\n$/);
    assert.doesNotMatch(r2.stderr, /\n\s+at /, 'no stack trace');
  });

  test('migrations started together on a new data directory initialise it once; admin commands together share one server', async () => {
    const dir = makeDataDir('cli-embedded-race');
    cli.dataDirs.push(dir);
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
