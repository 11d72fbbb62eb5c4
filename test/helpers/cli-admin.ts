// Shared by the operator-CLI tests (test/cli-*.test.ts): one test database per file, `toolrun`
// run as a child process against it, and the checks every admin command's output must pass (one
// JSON line on stdout; on stderr only the line naming the database, and for invites the line naming
// the links' base URL; refusals with their exit code).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { bearer } from './fixtures.js';
import { createTestApp, type TestApp } from './app.js';
import { createTestDatabase, type TestDatabase } from './db.js';
import { cleanupDataDir, cliEnv, killLiveChildren, makeDataDir, runCli, type CliResult } from './process.js';

export const EX_USAGE = 64;
export const EX_UNAVAILABLE = 69;
/** The line every admin command that reaches for its database starts stderr with. */
export const DATABASE_LINE = /^toolrun: database: \S.* \((DATABASE_URL|TOOLRUN_DATA_DIR)\)\n/;
/** The line `admin member invite` adds: the base URL of its links and where it came from. */
export const INVITE_BASE_LINE = /^toolrun: invite links use \S+(,| from) .*\n/;

export interface TeamJson {
  id: string;
  name: string;
  plan: string;
  sparks_available: number;
  runs_per_hour: number;
  max_concurrent_runs: number | null;
}
export interface MemberJson {
  id: string;
  email: string;
  role: string;
}

export const sortedKeys = (o: object) => Object.keys(o).sort();

/**
 * A command's stderr: for admin commands only the line naming the database (they log only when
 * something is wrong), or for `migrate` only JSON log lines below warning level.
 */
export function assertQuietStderr(args: string[], stderr: string): void {
  if (args[0] !== 'migrate') {
    assert.match(stderr, DATABASE_LINE, `toolrun ${args.join(' ')} did not name its database`);
    let rest = stderr.replace(DATABASE_LINE, '');
    if (args.slice(0, 3).join(' ') === 'admin member invite') {
      assert.match(rest, INVITE_BASE_LINE, 'the invite command names the base URL of its link');
      rest = rest.replace(INVITE_BASE_LINE, '');
    }
    assert.equal(rest, '', `toolrun ${args.join(' ')} wrote to stderr: ${stderr}`);
    return;
  }
  for (const line of stderr.split('\n').filter(Boolean)) {
    const entry = JSON.parse(line) as { level?: number; msg?: string };
    assert.ok(typeof entry.level === 'number' && entry.level <= 30, `toolrun ${args.join(' ')} logged: ${line}`);
  }
}

/** A command's stdout: exactly one line, one JSON document. */
export function parseOneJson<T>(args: string[], stdout: string): T {
  assert.ok(stdout.endsWith('\n') && stdout.trim().split('\n').length === 1, `toolrun ${args.join(' ')}: one JSON line expected: ${stdout}`);
  return JSON.parse(stdout) as T;
}

/**
 * One test file's own database and data directory, and optionally the same database served
 * in-process (`api`), to check that keys and invites the CLI makes really work.
 */
export class CliAdmin {
  /** Data directories the file's tests made; removed with the file's own when it closes. */
  readonly dataDirs: string[] = [];
  private app: TestApp | null = null;

  private constructor(
    readonly database: TestDatabase,
    readonly dataDir: string,
  ) {
    this.dataDirs.push(dataDir);
  }

  static async start(opts: { api?: boolean } = {}): Promise<CliAdmin> {
    const cli = new CliAdmin(await createTestDatabase(), makeDataDir('cli'));
    if (opts.api) cli.app = await createTestApp({ database: cli.database });
    return cli;
  }

  get api(): TestApp {
    assert.ok(this.app, 'CliAdmin.start({ api: true }) serves the database in-process');
    return this.app;
  }

  async close(): Promise<void> {
    killLiveChildren();
    await this.app?.close();
    await this.database.db.close();
    for (const dir of this.dataDirs) await cleanupDataDir(dir);
  }
}

export interface CliCalls {
  /** `toolrun ...` against the test database (DATABASE_URL). */
  toolrun(args: string[], extraEnv?: Record<string, string>): Promise<CliResult>;
  /** Runs a command that must succeed and print exactly one JSON document on stdout. */
  ok<T>(args: string[], extraEnv?: Record<string, string>): Promise<T>;
  /** Runs a command that must fail with this exit code, nothing on stdout and a message on stderr. */
  refused(args: string[], code: number, message: RegExp, extraEnv?: Record<string, string>): Promise<CliResult>;
  createTeam(args?: string[]): Promise<TeamJson>;
  addMember(teamId: string, role: string): Promise<MemberJson>;
  /** GET /v1/me on the in-process server. */
  me(key: string): Promise<{ status: number; code?: string; body: Record<string, unknown> }>;
}

/**
 * The commands a file's tests run, bound to its CliAdmin. It is read when a command runs, not
 * now: the calls are made at the top of the file, the CliAdmin only in its `before` hook.
 */
export function cliCalls(current: () => CliAdmin): CliCalls {
  const toolrun: CliCalls['toolrun'] = (args, extraEnv = {}) => {
    const cli = current();
    return runCli(args, cliEnv({ DATABASE_URL: cli.database.url, TOOLRUN_DATA_DIR: cli.dataDir, ...extraEnv }));
  };

  const ok = async <T>(args: string[], extraEnv: Record<string, string> = {}): Promise<T> => {
    const r = await toolrun(args, extraEnv);
    assert.equal(r.code, 0, `toolrun ${args.join(' ')} exited ${r.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
    assertQuietStderr(args, r.stderr);
    return parseOneJson<T>(args, r.stdout);
  };

  const refused: CliCalls['refused'] = async (args, code, message, extraEnv = {}) => {
    const r = await toolrun(args, extraEnv);
    assert.equal(r.code, code, `toolrun ${args.join(' ')}: exit ${r.code} (wanted ${code})\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
    assert.equal(r.stdout, '', `toolrun ${args.join(' ')}: nothing on stdout expected`);
    // Usage errors stop before the database is named; refusals come after its line.
    const said = r.stderr.replace(DATABASE_LINE, '');
    assert.match(said, message, `toolrun ${args.join(' ')}: stderr`);
    assert.ok(said.trim().split('\n').length <= 2, `a short message expected, got: ${r.stderr}`);
    return r;
  };

  const createTeam: CliCalls['createTeam'] = async (args = []) => {
    const out = await ok<{ team: TeamJson }>(['admin', 'team', 'create', '--name', `CLI team ${randomBytes(3).toString('hex')}`, '--plan', 'pro', ...args]);
    return out.team;
  };

  const addMember: CliCalls['addMember'] = async (teamId, role) => {
    const email = `${role}-${randomBytes(3).toString('hex')}@example.test`;
    return (await ok<{ member: MemberJson }>(['admin', 'member', 'add', '--team', teamId, '--email', email, '--role', role])).member;
  };

  const me: CliCalls['me'] = async (key) => {
    const res = await current().api.app.inject({ method: 'GET', url: '/v1/me', headers: bearer(key) });
    const body = res.json<Record<string, unknown> & { error?: { code: string } }>();
    return { status: res.statusCode, code: body.error?.code, body };
  };

  return { toolrun, ok, refused, createTeam, addMember, me };
}
