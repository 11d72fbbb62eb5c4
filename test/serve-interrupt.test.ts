// Ctrl-C on `npm start` in a terminal, as an operator does it (issue 19, "no stack traces or client
// objects in operator output for expected conditions"). The terminal signals its whole foreground
// group and npm forwards the signal to its child as well, so the service must take the two as one
// keypress (not "second signal: exiting now"), and the embedded PostgreSQL must not get it at all
// (it would end every connection while the service still drains: warnings with pg's client object
// in them). `script` gives npm a real pseudo-terminal; writing ^C to it is the keypress.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { cleanupDataDir, cliEnv, makeDataDir, ROOT, waitFor } from './helpers/process.js';

const dataDir = makeDataDir('interrupt');
after(() => cleanupDataDir(dataDir));

describe('Ctrl-C on npm start in a terminal', () => {
  test('one orderly shutdown: no second-signal exit, no warning, PostgreSQL stopped after the service', async () => {
    const npm = path.join(path.dirname(process.execPath), 'npm');
    const env: NodeJS.ProcessEnv = {};
    // A user's shell: the test runner's npm_* variables would make npm think it runs inside `npm test`.
    for (const [k, v] of Object.entries(cliEnv({ PORT: '0', HOST: '127.0.0.1', TOOLRUN_DATA_DIR: dataDir, LOG_LEVEL: 'info' }))) {
      if (!/^npm_/i.test(k)) env[k] = v;
    }
    const child = spawn('script', ['-q', '-e', '-c', `exec '${npm}' start`, '/dev/null'], {
      cwd: ROOT,
      env: { ...env, TERM: 'dumb', SHELL: '/bin/sh' },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      await waitFor('the service to print its console link', () => out.includes('/console/invite#token='), 180_000);
      // On a terminal the demo key and link are printed, and no file of them is written.
      assert.match(out, /svc_test_[A-Za-z0-9]{40}/);
      assert.equal(fs.existsSync(path.join(dataDir, 'demo-credentials.txt')), false);
      const pidFile = path.join(dataDir, 'pg', 'postmaster.pid');
      assert.ok(fs.existsSync(pidFile), `embedded PostgreSQL's ${pidFile} while serving`);
      child.stdin.write('\u0003');
      await waitFor('npm start to exit', () => child.exitCode !== null || child.signalCode !== null, 60_000);
      await exited;
      const lines = out.split(/\r?\n/);
      assert.equal(lines.filter((l) => l.includes('"msg":"shutting down"')).length, 1, out.slice(-3000));
      assert.ok(!out.includes('second signal'), out.slice(-3000));
      assert.deepEqual(lines.filter((l) => /"level":(40|50|60)/.test(l)).map((l) => l.slice(0, 300)), [], 'no warning or error at an asked-for shutdown');
      assert.ok(!out.includes('"client":'), 'no pg client object in the output');
      assert.ok(!/\n\s+at /.test(out), 'no stack trace in the output');
      assert.equal(fs.existsSync(pidFile), false, 'embedded PostgreSQL stopped with the service');
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
  });
});
