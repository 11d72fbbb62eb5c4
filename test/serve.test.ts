// End to end over real sockets: `toolrun serve` as a child process with the embedded PostgreSQL
// (no DATABASE_URL), as `npm start` runs it. First start and the demo key, HTTP, the admin CLI
// against the running server, SIGTERM, a restart, a SIGKILL and the orphaned server taken over,
// two processes sharing one embedded server, and no key in the logs.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { cleanupDataDir, CliProcess, cliEnv, killLiveChildren, makeDataDir, pidGone, postmasterPid, runCli, waitFor } from './helpers/process.js';

const KEY_PATTERN = /svc_(?:test|live)_[A-Za-z0-9]{40}/g;
const dataDirs: string[] = [];

after(async () => {
  killLiveChildren();
  for (const dir of dataDirs) await cleanupDataDir(dir);
});

function newDataDir(label: string): string {
  const dir = makeDataDir(label);
  dataDirs.push(dir);
  return dir;
}

interface Serve {
  proc: CliProcess;
  url: string;
}

function serveEnv(dataDir: string): NodeJS.ProcessEnv {
  // PORT=0: any free port; the listening URL is read from the log.
  return cliEnv({ TOOLRUN_DATA_DIR: dataDir, PORT: '0', LOG_LEVEL: 'info' });
}

async function startServe(dataDir: string): Promise<Serve> {
  const proc = new CliProcess(['serve'], serveEnv(dataDir));
  const line = await proc.waitForLog('toolrun API listening');
  assert.equal(typeof line.url, 'string');
  const url = String(line.url);
  assert.match(url, /^http:\/\/127\.0\.0\.1:\d+$/);
  assert.notEqual(new URL(url).port, '0');
  return { proc, url };
}

/** The embedded server's pid, from its pid file, once it is there. */
async function pgPid(dataDir: string): Promise<number> {
  return waitFor('postmaster.pid', () => postmasterPid(dataDir), 30_000);
}

async function assertPgStops(dataDir: string, pid: number): Promise<void> {
  await waitFor(`embedded PostgreSQL ${pid} to stop`, () => pidGone(pid), 30_000);
  await waitFor('postmaster.pid to be removed', () => !fs.existsSync(path.join(dataDir, 'pg', 'postmaster.pid')), 10_000);
}

async function getJson(url: string, key?: string): Promise<{ status: number; headers: Headers; body: Record<string, unknown> }> {
  const res = await fetch(url, key ? { headers: { authorization: `Bearer ${key}` } } : {});
  return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, unknown> };
}

/** Waits until the request-completion log line for a fetch made now has arrived. */
async function requestLogged(s: Serve): Promise<void> {
  const res = await fetch(`${s.url}/healthz`);
  assert.equal(res.status, 200);
  const id = res.headers.get('x-request-id');
  assert.ok(id);
  await waitFor('the log line of the request', () => s.proc.logs().some((l) => l.request_id === id && l.msg === 'request completed'), 10_000);
}

/** Keys appear nowhere in the logs: not in JSON lines on stdout, not on stderr. */
function assertNoKeyInLogs(proc: CliProcess, keys: string[]): void {
  for (const line of proc.stdoutLines.filter((l) => l.startsWith('{'))) {
    assert.doesNotMatch(line, KEY_PATTERN, `a key in a log line: ${line}`);
    for (const key of keys) assert.ok(!line.includes(key.slice(-32)), `a key secret in a log line: ${line}`);
  }
  assert.doesNotMatch(proc.stderr, KEY_PATTERN, 'a key on stderr');
}

describe('toolrun serve with the embedded PostgreSQL', () => {
  const dataDir = newDataDir('serve');
  let demoKey = '';
  let teamId = '';

  test('first start: listens, writes the demo key, a curl line and the invite link to an owner-only file it names once, and serves it', async () => {
    const s = await startServe(dataDir);
    const pid = await pgPid(dataDir);
    try {
      // The line naming the file is written with the listening line; a later request's log line comes after it.
      await requestLogged(s);
      // stdout is a pipe here, not a terminal: the key and link are not printed, only where they are.
      const file = path.join(dataDir, 'demo-credentials.txt');
      assert.deepEqual(
        s.proc.stdoutLines.filter((l) => l.trim() && !l.startsWith('{')),
        [`Demo team created (plan pro, 1000 Sparks). Its API key and the owner's console invite link are in ${file} (readable by this user only).`],
      );
      assert.doesNotMatch(s.proc.stdout, KEY_PATTERN);
      assert.doesNotMatch(s.proc.stdout, /#token=/);
      assert.equal(fs.statSync(file).mode & 0o777, 0o600, 'readable by its owner only');
      const banner = fs.readFileSync(file, 'utf8').split('\n');
      const text = banner.join('\n');
      assert.equal(text.match(/Demo team created/g)?.length, 1, `one banner expected:\n${text}`);
      const keys = [...new Set(text.match(KEY_PATTERN) ?? [])];
      assert.equal(keys.length, 1, `one demo key expected, got ${keys.length}`);
      demoKey = keys[0] ?? '';
      assert.match(demoKey, /^svc_test_/);
      const curl = banner.filter((l) => l.includes('curl'));
      assert.equal(curl.length, 1);
      assert.equal(curl[0]?.trim(), `curl -H "Authorization: Bearer ${demoKey}" ${s.url}/v1/me`);
      // The owner's console invite link, printed once too: it sets the password and signs in.
      const links = text.match(/\S+\/console\/invite#token=[A-Za-z0-9_-]{43}/g) ?? [];
      assert.equal(links.length, 1, `one invite link expected:\n${text}`);
      const token = (links[0] ?? '').split('#token=')[1];
      const accepted = await fetch(`${s.url}/console/api/invites/accept`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ token, password: 'the demo team passphrase' }),
      });
      assert.equal(accepted.status, 200, await accepted.clone().text());
      assert.equal(((await accepted.json()) as { member: { email: string } }).member.email, 'owner@demo.invalid');

      const me = await getJson(`${s.url}/v1/me`, demoKey);
      assert.equal(me.status, 200, JSON.stringify(me.body));
      assert.match(me.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/);
      assert.equal(me.headers.get('ratelimit-limit'), '60');
      const team = me.body.team as { id: string; name: string; plan: string };
      assert.equal(team.plan, 'pro');
      assert.equal(me.body.sparks_available, 1000);
      assert.deepEqual((me.body.api_key as { scopes: string[] }).scopes, ['read', 'run', 'webhooks']);
      teamId = team.id;

      for (const p of ['/healthz', '/readyz']) {
        const r = await getJson(`${s.url}${p}`);
        assert.equal(r.status, 200, p);
        assert.deepEqual(r.body, { status: 'ok' });
        assert.ok(r.headers.get('x-request-id'), `${p}: X-Request-Id`);
      }
      const unauth = await getJson(`${s.url}/v1/me`);
      assert.equal(unauth.status, 401);
      assert.equal((unauth.body.error as { request_id: string }).request_id, unauth.headers.get('x-request-id'));

      // The document names the server as it really is, even with PORT=0.
      const doc = await getJson(`${s.url}/v1/openapi.json`);
      assert.deepEqual(doc.body.servers, [{ url: s.url }]);

      // The embedded server runs under the data directory, its password readable by us only.
      assert.ok(fs.existsSync(path.join(dataDir, 'pg', 'PG_VERSION')));
      assert.equal(fs.statSync(path.join(dataDir, 'pg-password')).mode & 0o077, 0);
      assert.ok(!pidGone(pid));
    } finally {
      const exit = await s.proc.stop('SIGTERM');
      assert.deepEqual(exit, { code: 0, signal: null }, `SIGTERM exit\nstdout: ${s.proc.stdout}\nstderr: ${s.proc.stderr}`);
    }
    await assertPgStops(dataDir, pid);
    assertNoKeyInLogs(s.proc, [demoKey]);
    assert.ok(s.proc.logs().some((l) => l.msg === 'shutting down' && l.signal === 'SIGTERM'));
  });

  test('admin commands work against the running server and leave it running', async () => {
    assert.ok(demoKey && teamId, 'needs the first start');
    const s = await startServe(dataDir);
    const pid = await pgPid(dataDir);
    try {
      const env = cliEnv({ TOOLRUN_DATA_DIR: dataDir });
      const show = await runCli(['admin', 'team', 'show', '--team', teamId], env);
      assert.equal(show.code, 0, show.stderr);
      assert.equal(show.stderr, `toolrun: database: the embedded PostgreSQL in ${dataDir} (TOOLRUN_DATA_DIR)\n`, 'only the line naming the database');
      assert.deepEqual(JSON.parse(show.stdout), { team: { id: teamId, name: 'Demo team', plan: 'pro', sparks_available: 1000, runs_per_hour: 1000, max_concurrent_runs: null } });

      const grant = await runCli(['admin', 'sparks', 'grant', '--team', teamId, '--amount', '-1'], env);
      assert.equal(grant.code, 0, grant.stderr);
      const list = await runCli(['admin', 'key', 'list', '--team', teamId], env);
      assert.equal(list.code, 0, list.stderr);
      assert.doesNotMatch(list.stdout, KEY_PATTERN);
      assert.equal((JSON.parse(list.stdout) as { data: unknown[] }).data.length, 1);

      // The commands attached to the server this `serve` runs, and did not stop it on their way out.
      assert.equal(postmasterPid(dataDir), pid);
      assert.ok(!pidGone(pid), 'an admin command stopped the server of the running service');
      assert.equal((await getJson(`${s.url}/readyz`)).status, 200);
      const me = await getJson(`${s.url}/v1/me`, demoKey);
      assert.equal(me.status, 200);
      assert.equal(me.body.sparks_available, 999, 'the grant went to another database');
      const back = await runCli(['admin', 'sparks', 'grant', '--team', teamId, '--amount', '1'], env);
      assert.equal(back.code, 0, back.stderr);
    } finally {
      assert.deepEqual(await s.proc.stop('SIGTERM'), { code: 0, signal: null });
    }
    await assertPgStops(dataDir, pid);
  });

  test('a second start on the same data directory prints no new key; the old key still works', async () => {
    assert.ok(demoKey, 'needs the first start');
    const s = await startServe(dataDir);
    const pid = await pgPid(dataDir);
    try {
      await requestLogged(s);
      assert.doesNotMatch(s.proc.stdout, /Demo team created/);
      assert.doesNotMatch(s.proc.stdout, KEY_PATTERN);
      assert.match(fs.readFileSync(path.join(dataDir, 'demo-credentials.txt'), 'utf8'), new RegExp(demoKey), 'the first start\'s file is left as it was');
      assert.deepEqual(
        s.proc.stdoutLines.filter((l) => l.trim() && !l.startsWith('{')),
        [],
        'only JSON log lines expected on a later start',
      );
      const me = await getJson(`${s.url}/v1/me`, demoKey);
      assert.equal(me.status, 200);
      assert.equal(me.body.sparks_available, 1000);
    } finally {
      assert.deepEqual(await s.proc.stop('SIGTERM'), { code: 0, signal: null });
    }
    await assertPgStops(dataDir, pid);
    assertNoKeyInLogs(s.proc, [demoKey]);
  });

  test('after a SIGKILL the orphaned PostgreSQL is taken over by the next start and stopped by its SIGTERM', async () => {
    assert.ok(demoKey, 'needs the first start');
    const first = await startServe(dataDir);
    const pid = await pgPid(dataDir);
    assert.deepEqual(await first.proc.stop('SIGKILL'), { code: null, signal: 'SIGKILL' });
    assert.ok(!pidGone(pid), 'the embedded PostgreSQL died with the SIGKILLed service; nothing to take over');

    const second = await startServe(dataDir);
    try {
      assert.equal(postmasterPid(dataDir), pid, 'a new server was started instead of taking over the orphan');
      assert.ok(second.proc.logs().some((l) => typeof l.msg === 'string' && /taking over an embedded PostgreSQL/.test(l.msg)));
      const me = await getJson(`${second.url}/v1/me`, demoKey);
      assert.equal(me.status, 200);
      assert.equal(me.body.sparks_available, 1000);
    } finally {
      assert.deepEqual(await second.proc.stop('SIGTERM'), { code: 0, signal: null });
    }
    await assertPgStops(dataDir, pid);
  });

  test('a server started by another process (a worker) is handed over: the last one out stops it', async () => {
    const worker = new CliProcess(['worker'], serveEnv(dataDir));
    await worker.waitForLog(/^run worker started/);
    const pid = await pgPid(dataDir);
    const s = await startServe(dataDir);
    try {
      assert.equal(postmasterPid(dataDir), pid);
      assert.deepEqual(await worker.stop('SIGTERM'), { code: 0, signal: null });
      assert.ok(!pidGone(pid), 'the worker stopped the server while serve was using it');
      assert.equal((await getJson(`${s.url}/readyz`)).status, 200);
      assert.equal((await getJson(`${s.url}/v1/me`, demoKey)).status, 200);
    } finally {
      assert.deepEqual(await s.proc.stop('SIGTERM'), { code: 0, signal: null });
    }
    await assertPgStops(dataDir, pid);
  });
});

describe('two services started together on a new data directory', () => {
  test('initialise it once, seed one demo team, share one server, and the last one stops it', async () => {
    const dataDir = newDataDir('serve-pair');
    const [a, b] = await Promise.all([startServe(dataDir), startServe(dataDir)]);
    const pid = await pgPid(dataDir);
    try {
      await Promise.all([requestLogged(a), requestLogged(b)]);
      assert.doesNotMatch(`${a.proc.stdout}\n${b.proc.stdout}`, KEY_PATTERN);
      const named = `${a.proc.stdout}\n${b.proc.stdout}`.match(/Demo team created/g) ?? [];
      assert.equal(named.length, 1, 'exactly one of the two seeds, and says so once');
      const keys = [...new Set(fs.readFileSync(path.join(dataDir, 'demo-credentials.txt'), 'utf8').match(KEY_PATTERN) ?? [])];
      assert.equal(keys.length, 1, 'exactly one demo key expected across both');
      const key = keys[0] ?? '';
      for (const s of [a, b]) assert.equal((await getJson(`${s.url}/v1/me`, key)).status, 200);
      assert.deepEqual(await a.proc.stop('SIGTERM'), { code: 0, signal: null });
      assert.ok(!pidGone(pid), 'the first service to stop took the shared server with it');
      assert.equal((await getJson(`${b.url}/readyz`)).status, 200);
      assert.equal((await getJson(`${b.url}/v1/me`, key)).status, 200);
    } finally {
      for (const s of [a, b]) await s.proc.stop('SIGTERM');
    }
    assert.deepEqual(await b.proc.exited, { code: 0, signal: null });
    await assertPgStops(dataDir, pid);
  });
});
