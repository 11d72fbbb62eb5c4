// What a real `toolrun serve` process loads, read from outside: the process runs with a test-only
// resolve hook (--import test/helpers/module-record.mjs) that writes every module it resolves to
// a file, and its /proc/<pid>/maps shows whether sharp's native libvips is mapped. An API-only
// process (--no-workers) serves tool metadata, prices and input checks without sharp, the ffmpeg
// wrappers, the brand-kit parsers or the AWS SDK; a full `serve` loads the upload prober on the
// first completion and a tool's runner on its first run, not at start.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, before, describe, test } from 'node:test';
import { createTestDatabase, type TestDatabase } from './helpers/db.js';
import { api, uploadReadyFile } from './helpers/faults.js';
import { makeTeam, type TeamFixture } from './helpers/fixtures.js';
import { colourful, encode } from './helpers/images.js';
import { cleanupDataDir, CliProcess, cliEnv, killLiveChildren, makeDataDir, ROOT, waitFor } from './helpers/process.js';
import type { RunJson } from './helpers/runs.js';

const RECORDER = pathToFileURL(path.join(ROOT, 'test', 'helpers', 'module-record.mjs')).href;

/** What only runs and uploads need, by what the module URLs look like (sources or dist/). */
const HEAVY: Record<string, RegExp> = {
  sharp: /\/node_modules\/(sharp|@img\/sharp-[^/]+)\//,
  'file-type': /\/node_modules\/file-type\//,
  'the ffmpeg wrappers': /\/media\/(ffmpeg|measure|probe)\.[jt]s$/,
  'the video runners': /\/tools\/video\/(upscale|transition)\.[jt]s$/,
  'the image runners': /\/tools\/image\/(upscale|grade|common)\.[jt]s$/,
  'the brand-kit parsers': /\/node_modules\/(css-tree|parse5)\/|\/tools\/brand-kit\/(run|css|html|colors|images)\.[jt]s$/,
  'the AWS SDK': /\/node_modules\/(@aws-sdk|@smithy)\//,
  // Only setting a password needs them (src/console/password-strength.ts).
  'the password dictionaries': /\/node_modules\/@zxcvbn-ts\//,
};

let database: TestDatabase;
let team: TeamFixture;
const dirs: string[] = [];

before(async () => {
  database = await createTestDatabase();
  team = await makeTeam(database.db, { plan: 'pro', sparks: 1000, rate: 300 });
});

after(async () => {
  killLiveChildren();
  for (const dir of dirs) await cleanupDataDir(dir);
  await database.db.close();
});

interface Recorded {
  proc: CliProcess;
  url: string;
  /** The module URLs the process resolved so far. */
  modules(): string[];
  /** Whether sharp's native libvips is mapped into the process. */
  libvipsMapped(): boolean;
}

async function startRecorded(args: string[]): Promise<Recorded> {
  const dir = makeDataDir('lean');
  dirs.push(dir);
  const record = path.join(dir, 'modules.txt');
  const env = cliEnv({
    DATABASE_URL: database.url,
    PORT: '0',
    LOG_LEVEL: 'info',
    TOOLRUN_DEMO_SEED: 'false',
    TOOLRUN_DATA_DIR: dir,
    MODULE_RECORD_FILE: record,
  });
  const proc = new CliProcess(args, env, ['--import', RECORDER]);
  const line = await proc.waitForLog('toolrun API listening');
  const pid = proc.pid;
  return {
    proc,
    url: String(line.url),
    modules: () => (fs.existsSync(record) ? fs.readFileSync(record, 'utf8').split('\n').filter(Boolean) : []),
    libvipsMapped: () => /libvips/.test(fs.readFileSync(`/proc/${pid}/maps`, 'utf8')),
  };
}

/** The names in HEAVY that some loaded module matches. */
function heavyLoaded(modules: string[]): string[] {
  return Object.entries(HEAVY)
    .filter(([, pattern]) => modules.some((m) => pattern.test(m)))
    .map(([name]) => name);
}

function assertLoaded(modules: string[], pattern: RegExp, what: string): void {
  assert.ok(modules.some((m) => pattern.test(m)), `${what} should be loaded; the process resolved ${modules.length} modules`);
}

describe('what a toolrun process loads, and when', () => {
  test('serve --no-workers answers tool metadata, prices and input checks without loading any runner library', async () => {
    const s = await startRecorded(['serve', '--no-workers']);
    try {
      const tools = await api<{ data: { id: string }[] }>(s.url, team.key, 'GET', '/v1/tools');
      assert.equal(tools.status, 200);
      assert.deepEqual(tools.body.data.map((t) => t.id).sort(), ['brand_kit_extract', 'image_color_grade', 'image_upscale', 'video_transition', 'video_upscale']);
      const priced = await api<{ sparks: number }>(s.url, team.key, 'POST', '/v1/tools/video_transition/estimate', { inputs: { style: 'fade' }, duration_seconds: 25 });
      assert.equal(priced.status, 200, JSON.stringify(priced.body));
      assert.equal(priced.body.sparks, 7);
      // video_upscale's price and checks of a length alone, from its metadata modules.
      const upscale = await api<{ sparks: number }>(s.url, team.key, 'POST', '/v1/tools/video_upscale/estimate', { inputs: { target: '4k', method: 'lanczos' }, duration_seconds: 25 });
      assert.equal(upscale.status, 200, JSON.stringify(upscale.body));
      assert.equal(upscale.body.sparks, 18);
      // Left out, the method is decided from the length (learned fits 25 s): that too without a runner library.
      const byDefault = await api<{ sparks: number }>(s.url, team.key, 'POST', '/v1/tools/video_upscale/estimate', { inputs: { target: '4k', method: 'learned' }, duration_seconds: 25 });
      const leftOut = await api<{ sparks: number }>(s.url, team.key, 'POST', '/v1/tools/video_upscale/estimate', { inputs: { target: '4k' }, duration_seconds: 25 });
      assert.equal(leftOut.status, 200, JSON.stringify(leftOut.body));
      assert.equal(leftOut.body.sparks, byDefault.body.sparks);
      assert.ok(leftOut.body.sparks > 18, `${leftOut.body.sparks}`);
      const kit = await api<{ sparks: number }>(s.url, team.key, 'POST', '/v1/tools/brand_kit_extract/estimate', { inputs: { url: 'https://example.com' } });
      assert.equal(kit.status, 200, JSON.stringify(kit.body));
      // brand_kit_extract's own check (a url or files), from its metadata module.
      const refused = await api<{ error: { code: string; errors: { code: string }[] } }>(s.url, team.key, 'POST', '/v1/tools/brand_kit_extract/runs', { inputs: {} });
      assert.equal(refused.status, 422, JSON.stringify(refused.body));
      assert.deepEqual(refused.body.error.errors.map((e) => e.code), ['missing_source']);

      const modules = s.modules();
      // The recorder works: the HTTP stack and the tool catalog are in the record.
      assertLoaded(modules, /\/node_modules\/fastify\//, 'fastify');
      assertLoaded(modules, /\/tools\/catalog\/brand-kit-extract\.[jt]s$/, 'the brand_kit_extract metadata');
      assert.deepEqual(heavyLoaded(modules), []);
      assert.equal(s.libvipsMapped(), false, 'libvips is mapped into the API-only process');
      // The test database is migrated already (createTestDatabase): nothing to apply, so the
      // migration library is not loaded either.
      assert.ok(!modules.some((m) => /\/node_modules\/node-pg-migrate\//.test(m)), 'node-pg-migrate is loaded');
      assert.equal((await s.proc.stop()).code, 0, s.proc.stderr);
    } finally {
      if (s.proc.child.exitCode === null) s.proc.child.kill('SIGKILL');
    }
  });

  test('serve with its workers starts without them; the first completed upload loads the prober, the first run its runner', async () => {
    const s = await startRecorded(['serve']);
    try {
      assert.deepEqual(heavyLoaded(s.modules()), [], 'loaded at start');
      assert.equal(s.libvipsMapped(), false, 'libvips is mapped at start');

      const png = await encode(colourful(64, 48), 'png');
      const fileId = await uploadReadyFile(s.url, team.key, png, 'small.png', 'image/png');
      assert.deepEqual(heavyLoaded(s.modules()).sort(), ['file-type', 'sharp', 'the ffmpeg wrappers']);
      assert.equal(s.libvipsMapped(), true, 'the prober decoded the image with sharp');

      const started = await api<RunJson>(s.url, team.key, 'POST', '/v1/tools/image_upscale/runs', { inputs: { image: [fileId] } });
      assert.equal(started.status, 202, JSON.stringify(started.body));
      const finished = await waitFor(
        'the image_upscale run to finish',
        async () => {
          const run = await api<RunJson>(s.url, team.key, 'GET', `/v1/runs/${started.body.id}`, undefined, { prefer: 'wait=10' });
          assert.equal(run.status, 200, JSON.stringify(run.body));
          return ['succeeded', 'failed', 'canceled'].includes(run.body.status) ? run.body : null;
        },
        60_000,
      );
      assert.equal(finished.status, 'succeeded', finished.error ?? '');
      assert.equal(finished.outputs.length, 1);
      // Only what that run needed: the other tools' libraries are still not loaded.
      assert.deepEqual(heavyLoaded(s.modules()).sort(), ['file-type', 'sharp', 'the ffmpeg wrappers', 'the image runners']);
      assert.equal((await s.proc.stop()).code, 0, s.proc.stderr);
    } finally {
      if (s.proc.child.exitCode === null) s.proc.child.kill('SIGKILL');
    }
  });
});
