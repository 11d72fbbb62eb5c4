/**
 * withBenchService() (bench/lib/service.ts), the scaffold of every benchmark that starts the
 * service: run as a real benchmark process (test/helpers/bench-service-driver.ts) against the test
 * PostgreSQL, with a real child server, finishing, failing, interrupted and stopped by its watchdog.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, test } from 'node:test';
import pg from 'pg';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const DRIVER = path.join(ROOT, 'test', 'helpers', 'bench-service-driver.ts');

interface Made {
  dir: string;
  database: string;
  child: number;
}

interface Outcome {
  code: number | null;
  stdout: string;
  stderr: string;
  made: Made;
}

function adminUrl(): string {
  const url = process.env.TEST_DATABASE_URL;
  if (!url) throw new Error('TEST_DATABASE_URL is not set: run the tests through `npm test`');
  return url;
}

/** Runs the driver; `onMade` is called once it printed what it made (for the SIGINT case). */
function runDriver(mode: string, onMade?: (pid: number) => void, env: NodeJS.ProcessEnv = {}): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', DRIVER, mode], {
      cwd: ROOT,
      env: { ...process.env, DATABASE_URL: adminUrl(), ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    let made: Made | null = null;
    child.stdout.on('data', (c: Buffer) => {
      stdout += c.toString('utf8');
      const line = stdout.split('\n').find((l) => l.startsWith('{'));
      if (!made && line) {
        made = JSON.parse(line) as Made;
        onMade?.(child.pid ?? 0);
      }
    });
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
    child.once('error', reject);
    child.once('close', (code) => (made ? resolve({ code, stdout, stderr, made }) : reject(new Error(`the driver made nothing (exit ${String(code)}): ${stderr}`))));
  });
}

async function databaseExists(name: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: adminUrl() });
  await client.connect();
  try {
    const { rows } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1::text', [name]);
    return rows.length > 0;
  } finally {
    await client.end();
  }
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** Everything the scaffold made is gone: the temp dir, the database, the child process. */
async function assertCleanedUp(made: Made): Promise<void> {
  assert.equal(fs.existsSync(made.dir), false, `${made.dir} left behind`);
  assert.equal(await databaseExists(made.database), false, `database ${made.database} left behind`);
  assert.equal(alive(made.child), false, `child ${made.child} still running`);
}

const closedOrder = (stdout: string) => stdout.split('\n').filter((l) => l.startsWith('closed '));

describe('withBenchService', () => {
  test('a finished bench has its steps closed newest first, then the database dropped and the temp dir removed', async () => {
    const out = await runDriver('ok');
    assert.equal(out.code, 0, out.stderr);
    assert.match(out.stdout, /body done/);
    assert.deepEqual(closedOrder(out.stdout), ['closed second', 'closed first']);
    await assertCleanedUp(out.made);
  });

  test('a failed bench says its failure, then the last lines its children wrote, and still cleans up', async () => {
    const out = await runDriver('fail');
    assert.equal(out.code, 1);
    const said = out.stderr.indexOf('bench:driver failed: Error: the measurement went wrong');
    assert.ok(said >= 0, out.stderr);
    assert.equal(out.stderr.indexOf('bench:driver failed', said + 1), -1, 'the failure is said once');
    const tail = out.stderr.indexOf("lines of bare's output ---", said);
    assert.ok(tail > said, `no tail of the child's output after the failure:\n${out.stderr}`);
    // NODE_DEBUG=net: the child's own stderr lines (its listen) are in the tail.
    assert.match(out.stderr.slice(tail), /NET \d+: /);
    assert.deepEqual(closedOrder(out.stdout), ['closed second', 'closed first']);
    await assertCleanedUp(out.made);
  });

  test('Ctrl-C (SIGINT) cleans up and exits 130', async () => {
    const out = await runDriver('hang', (pid) => process.kill(pid, 'SIGINT'));
    assert.equal(out.code, 130, out.stderr);
    assert.deepEqual(closedOrder(out.stdout), ['closed second', 'closed first']);
    await assertCleanedUp(out.made);
  });

  test('the watchdog stops a bench that runs past its limit, cleaning up', async () => {
    // BENCH_MAX_MINUTES overrides the bench's own limit (10 min): 15 s, time enough to set up.
    const out = await runDriver('watchdog', undefined, { BENCH_MAX_MINUTES: '0.25' });
    assert.equal(out.code, 1);
    assert.match(out.stderr, /bench:driver: still running after 0\.25 min, stopping/);
    await assertCleanedUp(out.made);
  });
});
