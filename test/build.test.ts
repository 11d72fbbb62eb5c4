// The compiled build that `npm start` runs (scripts/build.js, bin/toolrun.js): src/ compiles to a
// directory that runs on plain node without tsx, SQL migrations included, and a build is used only
// while it matches the sources exactly.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { FINGERPRINT_FILE, freshBuild, sourceFingerprint } from '../scripts/build-state.js';
import { createTestDatabase, type TestDatabase } from './helpers/db.js';
import { HOSTILE_BRAND, HostileSite } from './helpers/brand-hostile.js';
import { CHROMIUM } from './helpers/browser.js';
import { cliEnv, ROOT, waitFor } from './helpers/process.js';

let out: string;
let database: TestDatabase;

before(async () => {
  // Inside the repository, as dist/ is: the compiled files find node_modules/ by walking up.
  fs.mkdirSync(path.join(ROOT, '.test-data'), { recursive: true });
  out = path.join(fs.mkdtempSync(path.join(ROOT, '.test-data', 'build-')), 'dist');
  database = await createTestDatabase();
});
after(async () => {
  await database.db.close();
  fs.rmSync(path.dirname(out), { recursive: true, force: true });
});

/** Plain node, no loader: `node run.mjs <args>` calls the compiled CLI as bin/toolrun.js would. */
function compiledEntry(): string {
  const entry = path.join(path.dirname(out), 'run.mjs');
  fs.writeFileSync(entry, `const { main } = await import(${JSON.stringify(path.join(out, 'cli', 'main.js'))});\nawait main(process.argv);\n`);
  return entry;
}

function compiledEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  // cliEnv drops NODE_OPTIONS, so no TypeScript loader can come in from the test runner.
  return cliEnv({ DATABASE_URL: database.url, ...extra });
}

describe('the compiled build', () => {
  test('scripts/build.js compiles src/ with the migrations; a second call sees it is up to date', () => {
    const first = spawnSync(process.execPath, [path.join(ROOT, 'scripts', 'build.js'), '--out', out], { cwd: ROOT, encoding: 'utf8', timeout: 180_000 });
    assert.equal(first.status, 0, first.stderr);
    assert.match(first.stderr, /compiled src\//);
    assert.ok(fs.existsSync(path.join(out, 'cli', 'main.js')));
    const sql = fs.readdirSync(path.join(ROOT, 'src', 'db', 'migrations')).filter((f) => f.endsWith('.sql'));
    assert.ok(sql.length > 0);
    assert.deepEqual(fs.readdirSync(path.join(out, 'db', 'migrations')).filter((f) => f.endsWith('.sql')).sort(), sql.sort());
    assert.equal(fs.readFileSync(path.join(out, FINGERPRINT_FILE), 'utf8').trim(), sourceFingerprint(ROOT));
    assert.equal(freshBuild(ROOT, out), out);
    // The console's bundle beside the compiled server; its browser sources are not shipped.
    const manifest = JSON.parse(fs.readFileSync(path.join(out, 'console', 'assets', 'manifest.json'), 'utf8')) as { script: string };
    assert.match(manifest.script, /^main-[A-Z0-9]+\.js$/);
    assert.ok(fs.existsSync(path.join(out, 'console', 'assets', manifest.script)));
    assert.equal(fs.existsSync(path.join(out, 'console', 'web')), false);

    const second = spawnSync(process.execPath, [path.join(ROOT, 'scripts', 'build.js'), '--out', out], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });
    assert.equal(second.status, 0, second.stderr);
    assert.match(second.stderr, /is up to date/);
  });

  test('a build from other sources is stale: bin/toolrun.js would run the sources instead', () => {
    const file = path.join(out, FINGERPRINT_FILE);
    const real = fs.readFileSync(file, 'utf8');
    try {
      fs.writeFileSync(file, '0'.repeat(64) + '\n');
      assert.equal(freshBuild(ROOT, out), null);
    } finally {
      fs.writeFileSync(file, real);
    }
    assert.equal(freshBuild(ROOT, path.join(out, 'missing')), null);
  });

  test('without src/ (the container image ships dist/ alone) the build is what runs, whatever its fingerprint', () => {
    const root = path.dirname(out);
    assert.equal(fs.existsSync(path.join(root, 'src')), false);
    assert.equal(freshBuild(root, out), out);
    // Still none when there is no build at all.
    assert.equal(freshBuild(root, path.join(out, 'missing')), null);
  });

  test('the compiled CLI migrates a database and serves the API on plain node, and stops on SIGTERM', async () => {
    const entry = compiledEntry();
    const migrated = spawnSync(process.execPath, [entry, 'migrate'], { cwd: ROOT, env: compiledEnv({}), encoding: 'utf8', timeout: 60_000 });
    assert.equal(migrated.status, 0, migrated.stderr);
    assert.deepEqual(JSON.parse(migrated.stdout), { migrated: true });

    const child = spawn(process.execPath, [entry, 'serve', '--no-workers'], {
      cwd: ROOT,
      env: compiledEnv({ PORT: '0', LOG_LEVEL: 'info', TOOLRUN_DEMO_SEED: 'false', TOOLRUN_DATA_DIR: path.dirname(out) }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      const url = await waitFor(
        'the compiled server to listen',
        () => {
          if (child.exitCode !== null) throw new Error(`the compiled server exited ${child.exitCode}: ${stderr}`);
          for (const line of stdout.split('\n')) {
            if (!line.startsWith('{')) continue;
            const log = JSON.parse(line) as { msg?: string; url?: string };
            if (log.msg === 'toolrun API listening' && log.url) return log.url;
          }
          return null;
        },
        60_000,
      );
      const health = await fetch(`${url}/healthz`);
      assert.equal(health.status, 200);
      const doc = (await (await fetch(`${url}/v1/openapi.json`)).json()) as { openapi: string };
      assert.equal(doc.openapi, '3.1.0');
      const me = await fetch(`${url}/v1/me`);
      assert.equal(me.status, 401);
      assert.equal(((await me.json()) as { error: { code: string } }).error.code, 'api_key_required');
      // The console's page and script come from the build (no bundler at run time).
      const page = await (await fetch(`${url}/console/keys`)).text();
      const built = JSON.parse(fs.readFileSync(path.join(out, 'console', 'assets', 'manifest.json'), 'utf8')) as { script: string };
      const script = `/console/assets/${built.script}`;
      assert.ok(page.includes(`src="${script}"`), page);
      const js = await fetch(`${url}${script}`);
      assert.equal(js.status, 200);
      assert.match(js.headers.get('content-type') ?? '', /^text\/javascript/);
      child.kill('SIGTERM');
      assert.equal(await exited, 0, stderr);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });

  test("brand_kit_extract's render child runs compiled on plain node (supervisor.ts forks render-child.js, no tsx)", async (t) => {
    if (!fs.existsSync(CHROMIUM)) return t.skip(`no Chromium at ${CHROMIUM}`);
    const site = await new HostileSite().start();
    const workDir = fs.mkdtempSync(path.join(path.dirname(out), 'render-'));
    try {
      const script = path.join(path.dirname(out), 'render.mjs');
      fs.writeFileSync(
        script,
        `const { renderIsolated } = await import(${JSON.stringify(path.join(out, 'tools', 'brand-kit', 'render', 'supervisor.js'))});
const { DEFAULT_RENDER_LIMITS } = await import(${JSON.stringify(path.join(out, 'tools', 'brand-kit', 'render', 'limits.js'))});
const logger = { warn() {}, debug() {} };
const page = await renderIsolated(process.argv[2], { executablePath: ${JSON.stringify(CHROMIUM)}, allowPrivate: true, signal: new AbortController().signal, limits: DEFAULT_RENDER_LIMITS, workDir: process.argv[3], logger });
console.log(JSON.stringify({ h1: page.computed.h1, html: page.html.length, bound: page.memory.bound }));
`,
      );
      const child = spawn(process.execPath, [script, `${site.url}/plain`, workDir], { cwd: ROOT, env: cliEnv({}), stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
      child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
      const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
      assert.equal(code, 0, stderr);
      const got = JSON.parse(stdout) as { h1: { fontFamily: string[] } | null; html: number };
      assert.equal(got.h1?.fontFamily[0], HOSTILE_BRAND.heading);
      assert.ok(got.html > 100);
    } finally {
      await site.close();
    }
  });
});
