// The SDK and the CLI as published: `npm pack` for both workspaces (prepack builds their dist/),
// the two tarballs installed offline into an empty project outside the repository (they have no
// dependencies), and used there the way a user would, against a live server with a run worker:
// a plain .mjs program, a typed .ts program (type-checked by the repository's tsc against the
// installed .d.ts, then run), a .cjs require (and a .cts type-check against the .d.cts), and the
// installed toolrun-cli bin. Nothing from the repository is on the programs' resolution path:
// no NODE_OPTIONS, no tsconfig `paths`, the project's own node_modules only.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import type { RunWorker } from '../src/runs/worker.js';
import { makeTeam, type TeamFixture } from './helpers/fixtures.js';
import { makePng } from './helpers/media.js';
import { cliEnv, ROOT } from './helpers/process.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { testRegistry } from './helpers/test-tools.js';
import { startTestWorker } from './helpers/worker.js';

const tools = testRegistry();
let s: TestServer;
let worker: RunWorker;
let team: TeamFixture;
let tmp: string;
let project: string;
let png: Buffer;

interface Result {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/**
 * A child process run to its end without blocking this process (the server answers from it).
 * Its environment is a user's: none of the test runner's variables, no NODE_OPTIONS, no npm_*.
 */
function run(command: string, args: string[], opts: { cwd: string; env?: Record<string, string>; timeoutMs?: number }): Promise<Result> {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(cliEnv(opts.env ?? {}))) if (!/^npm_/i.test(k)) env[k] = v;
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: opts.cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${command} ${args.join(' ')} did not finish within ${opts.timeoutMs ?? 60_000} ms\nstdout: ${stdout}\nstderr: ${stderr}`));
    }, opts.timeoutMs ?? 60_000);
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

function ok(r: Result, what: string): Result {
  assert.deepEqual({ code: r.code, signal: r.signal }, { code: 0, signal: null }, `${what} failed\nstdout: ${r.stdout.slice(-4000)}\nstderr: ${r.stderr.slice(-4000)}`);
  return r;
}

/** The server's address and the team's key, as a user's shell would hold them. */
const apiEnv = (): Record<string, string> => ({ TOOLRUN_API_KEY: team.key, TOOLRUN_BASE_URL: s.url });
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
/** The Node.js running this test, for every program: `npm run test:node-lines` runs this file on each line. */
const node = process.execPath;

interface PackedFile {
  path: string;
}
interface Packed {
  name: string;
  filename: string;
  files: PackedFile[];
}
let packed: Packed[] = [];

before(async () => {
  s = await startTestServer({ tools });
  worker = await startTestWorker(s, tools);
  team = await makeTeam(s.database.db, { sparks: 1000, rate: 300 });
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'toolrun-packages-'));
  project = path.join(tmp, 'project');
  fs.mkdirSync(project);
  png = await makePng(40, 30);
  fs.writeFileSync(path.join(project, 'photo.png'), png);
});
after(async () => {
  await worker?.stop(1000);
  await s?.close();
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

describe('the packed packages', () => {
  test('npm pack builds and packs both workspaces: only dist/, bin/, README and package.json', async () => {
    const r = ok(
      await run(npm, ['pack', '-w', '@toolrun/sdk', '-w', '@toolrun/cli', '--pack-destination', tmp, '--json', '--no-audit', '--no-fund'], { cwd: ROOT, timeoutMs: 120_000 }),
      'npm pack',
    );
    packed = JSON.parse(r.stdout.slice(r.stdout.indexOf('['))) as Packed[];
    assert.deepEqual(packed.map((p) => p.name).sort(), ['@toolrun/cli', '@toolrun/sdk']);
    for (const p of packed) assert.ok(fs.existsSync(path.join(tmp, p.filename)), p.filename);

    const sdkFiles = packed.find((p) => p.name === '@toolrun/sdk')?.files.map((f) => f.path) ?? [];
    for (const f of ['package.json', 'README.md', 'dist/index.js', 'dist/index.d.ts', 'dist/index.cjs', 'dist/index.d.cts', 'dist/client.js', 'dist/client.d.ts']) {
      assert.ok(sdkFiles.includes(f), `the SDK tarball holds ${f}: ${sdkFiles.join(', ')}`);
    }
    assert.deepEqual(sdkFiles.filter((f) => !['package.json', 'README.md'].includes(f) && !/^dist\/.+\.(js|cjs|d\.ts|d\.cts)$/.test(f)), [], 'nothing but dist/');
    const cliFiles = packed.find((p) => p.name === '@toolrun/cli')?.files.map((f) => f.path).sort() ?? [];
    assert.deepEqual(cliFiles, ['README.md', 'bin/toolrun-cli.js', 'dist/toolrun-cli.js', 'package.json']);
  });

  test('the tarballs install offline into an empty project: no dependencies, not private', async () => {
    assert.equal(packed.length, 2, 'packed first');
    fs.writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'toolrun-user', version: '1.0.0', private: true, type: 'module' }, null, 2));
    ok(
      await run(npm, ['install', ...packed.map((p) => path.join(tmp, p.filename)), '--offline', '--no-audit', '--no-fund'], { cwd: project, timeoutMs: 120_000 }),
      'npm install of the tarballs',
    );
    // Exactly the two packages: nothing was pulled in with them.
    const lock = JSON.parse(fs.readFileSync(path.join(project, 'package-lock.json'), 'utf8')) as { packages: Record<string, unknown> };
    assert.deepEqual(Object.keys(lock.packages).filter((k) => k !== '').sort(), ['node_modules/@toolrun/cli', 'node_modules/@toolrun/sdk']);
    for (const name of ['sdk', 'cli']) {
      const pkg = JSON.parse(fs.readFileSync(path.join(project, 'node_modules', '@toolrun', name, 'package.json'), 'utf8')) as Record<string, unknown>;
      assert.equal(pkg.private, undefined, `@toolrun/${name} is publishable`);
      assert.equal(pkg.dependencies, undefined, `@toolrun/${name} has no runtime dependencies`);
      assert.equal(fs.existsSync(path.join(project, 'node_modules', '@toolrun', name, 'src')), false);
    }
  });

  test('a plain .mjs program: me, upload, estimate, start, wait, download; then all of it in one run()', async () => {
    fs.writeFileSync(
      path.join(project, 'flow.mjs'),
      `import { SDK_VERSION, Toolrun, ToolrunError } from '@toolrun/sdk';

const client = new Toolrun({ testing: { minPollIntervalMs: 50 } }); // TOOLRUN_API_KEY, TOOLRUN_BASE_URL
const me = await client.me();
const file = await client.files.upload('photo.png');
const body = { inputs: { image: [file.id] } };
const estimate = await client.tools.estimate('test_copy', body);
const started = await client.runs.start('test_copy', body);
const done = await client.runs.wait(started);
const outputs = await client.runs.download(done, 'out-mjs');
const one = await client.run('test_copy', { image: 'photo.png' }, { download: 'out-run' });
let missing = null;
try {
  await client.runs.get('00000000-0000-4000-8000-000000000000');
} catch (err) {
  missing = { toolrunError: err instanceof ToolrunError, status: err.status };
}
console.log(JSON.stringify({
  resolved: import.meta.resolve('@toolrun/sdk'),
  version: SDK_VERSION,
  team: me.team.id,
  file: file.status,
  sparks: estimate.sparks,
  status: done.status,
  cost: done.cost_sparks,
  outputs: outputs.map((o) => ({ path: o.path, size: o.size_bytes, mime: o.mime_type })),
  one: { status: one.status, downloaded: one.downloaded.map((o) => o.path) },
  missing,
}));
`,
    );
    const r = ok(await run(node, ['flow.mjs'], { cwd: project, env: apiEnv() }), 'flow.mjs');
    const out = JSON.parse(r.stdout) as {
      resolved: string;
      version: string;
      team: string;
      file: string;
      sparks: number;
      status: string;
      cost: number;
      outputs: { path: string; size: number; mime: string }[];
      one: { status: string; downloaded: string[] };
      missing: { toolrunError: boolean; status: number } | null;
    };
    assert.equal(out.resolved, pathToFileURL(path.join(fs.realpathSync(project), 'node_modules', '@toolrun', 'sdk', 'dist', 'index.js')).href);
    assert.equal(out.version, '0.1.0');
    assert.equal(out.team, team.teamId);
    assert.equal(out.file, 'ready');
    assert.equal(out.status, 'succeeded');
    assert.equal(out.cost, out.sparks);
    assert.equal(out.outputs.length, 1);
    const [output] = out.outputs;
    assert.ok(output);
    assert.equal(output.mime, 'image/png');
    assert.deepEqual(fs.readFileSync(path.resolve(project, output.path)), png, 'the downloaded output is the input image');
    assert.equal(out.one.status, 'succeeded');
    assert.equal(out.one.downloaded.length, 1);
    assert.deepEqual(fs.readFileSync(path.resolve(project, out.one.downloaded[0] ?? '')), png, 'run() uploaded the path and downloaded the copy');
    assert.deepEqual(out.missing, { toolrunError: true, status: 404 });
  });

  test('TypeScript: the installed .d.ts type-check a program (and refuse a wrong one), which then runs', async () => {
    fs.writeFileSync(
      path.join(project, 'tsconfig.json'),
      JSON.stringify(
        {
          compilerOptions: {
            target: 'ES2022',
            module: 'NodeNext',
            moduleResolution: 'NodeNext',
            strict: true,
            noEmit: true,
            skipLibCheck: false,
            types: ['node'],
            // @types/node from the repository: a user's project has its own.
            typeRoots: [path.join(ROOT, 'node_modules', '@types')],
          },
          files: ['typed.ts', 'typed.cts'],
        },
        null,
        2,
      ),
    );
    fs.writeFileSync(
      path.join(project, 'typed.ts'),
      `import { Toolrun, ToolrunError, type Me, type Run, type ToolList } from '@toolrun/sdk';

const client = new Toolrun({ apiKey: process.env.TOOLRUN_API_KEY ?? '', baseUrl: process.env.TOOLRUN_BASE_URL ?? '' });
const me: Me = await client.me();
const sparks: number = me.sparks_available;
const list: ToolList = await client.tools.list();
const ids: string[] = list.data.map((t) => t.id);
const statusOf = (run: Run): Run['status'] => run.status;
const isError = (e: unknown): e is ToolrunError => e instanceof ToolrunError;
console.log(JSON.stringify({ team: me.team.id, sparks, testCopy: ids.includes('test_copy'), fns: [typeof statusOf, typeof isError] }));
`,
    );
    // CommonJS TypeScript: its import becomes require(), resolved through the "require" condition.
    fs.writeFileSync(
      path.join(project, 'typed.cts'),
      `import { Toolrun, type Me } from '@toolrun/sdk';

export async function teamId(client: Toolrun): Promise<string> {
  const me: Me = await client.me();
  return me.team.id;
}
`,
    );
    const tsc = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
    const checked = ok(await run(node, [tsc, '-p', 'tsconfig.json', '--pretty', 'false', '--listFiles'], { cwd: project }), 'tsc on typed.ts and typed.cts');
    const listed = checked.stdout.split('\n').map((l) => l.trim());
    const sdkDir = path.join(fs.realpathSync(project), 'node_modules', '@toolrun', 'sdk', 'dist');
    for (const f of ['index.d.ts', 'index.d.cts']) assert.ok(listed.includes(path.join(sdkDir, f)), `tsc read ${f}:\n${checked.stdout}`);

    // A wrong program is refused: the declarations are real types, not any.
    fs.writeFileSync(
      path.join(project, 'wrong.ts'),
      `import { Toolrun } from '@toolrun/sdk';

const client = new Toolrun({ apiKey: 'key' });
const n: number = (await client.me()).team.name;
await client.runs.nope();
export {};
`,
    );
    fs.writeFileSync(path.join(project, 'tsconfig.wrong.json'), JSON.stringify({ extends: './tsconfig.json', files: ['wrong.ts'] }));
    const wrong = await run(node, [tsc, '-p', 'tsconfig.wrong.json', '--pretty', 'false'], { cwd: project });
    assert.notEqual(wrong.code, 0);
    assert.match(wrong.stdout, /wrong\.ts\(4,7\): error TS2322/);
    assert.match(wrong.stdout, /wrong\.ts\(5,19\): error TS2339: Property 'nope' does not exist/);

    // Run with tsx from the repository (a user's project has its own), from the project's directory
    // so its tsconfig.json is the one tsx reads.
    const tsx = pathToFileURL(path.join(ROOT, 'node_modules', 'tsx', 'dist', 'loader.mjs')).href;
    const r = ok(await run(node, ['--import', tsx, 'typed.ts'], { cwd: project, env: apiEnv() }), 'typed.ts');
    const out = JSON.parse(r.stdout) as { team: string; sparks: unknown; testCopy: boolean; fns: string[] };
    assert.equal(out.team, team.teamId);
    assert.equal(typeof out.sparks, 'number');
    assert.equal(out.testCopy, true);
    assert.deepEqual(out.fns, ['function', 'function']);
  });

  test('CommonJS: require("@toolrun/sdk") gets the bundled dist/index.cjs', async () => {
    fs.writeFileSync(
      path.join(project, 'legacy.cjs'),
      `const { Toolrun, ToolrunError, verifyWebhook } = require('@toolrun/sdk');

new Toolrun().me().then((me) => {
  console.log(JSON.stringify({ resolved: require.resolve('@toolrun/sdk'), team: me.team.id, kinds: [typeof ToolrunError, typeof verifyWebhook] }));
}, (err) => {
  console.error(err);
  process.exit(1);
});
`,
    );
    const r = ok(await run(node, ['legacy.cjs'], { cwd: project, env: apiEnv() }), 'legacy.cjs');
    assert.deepEqual(JSON.parse(r.stdout), {
      resolved: path.join(fs.realpathSync(project), 'node_modules', '@toolrun', 'sdk', 'dist', 'index.cjs'),
      team: team.teamId,
      kinds: ['function', 'function'],
    });
  });

  test('the installed toolrun-cli: --help, me, and a whole run', async () => {
    const bin = path.join(project, 'node_modules', '.bin', 'toolrun-cli');
    const help = ok(await run(node, [bin, '--help'], { cwd: project }), 'toolrun-cli --help');
    assert.match(help.stdout, /^Usage: toolrun-cli \[options\] \[command\]/);
    for (const command of ['tools', 'me', 'estimate', 'run', 'runs']) assert.match(help.stdout, new RegExp(`^  ${command} `, 'm'));

    // Executed as a user's shell would: the bin link, its shebang and `node` from PATH.
    const pathEnv = { PATH: `${path.dirname(node)}${path.delimiter}${process.env.PATH ?? ''}` };
    const me = ok(await run(bin, ['me', '--json'], { cwd: project, env: { ...apiEnv(), ...pathEnv } }), 'toolrun-cli me --json');
    const meDoc = JSON.parse(me.stdout) as { object: string; team: { id: string } };
    assert.equal(meDoc.object, 'me');
    assert.equal(meDoc.team.id, team.teamId);

    // Uploads, estimates, starts, follows and downloads (the progress lines go to stderr).
    const r = ok(
      await run(node, [bin, 'run', 'test_copy', '--file', 'image=photo.png', '--out', 'out-cli'], { cwd: project, env: { ...apiEnv(), TOOLRUN_CLI_TEST_POLL_MS: '50' } }),
      'toolrun-cli run',
    );
    const written = fs.readdirSync(path.join(project, 'out-cli'));
    assert.equal(written.length, 1, `${written.join(', ')}\n${r.stdout}\n${r.stderr}`);
    assert.deepEqual(fs.readFileSync(path.join(project, 'out-cli', written[0] ?? '')), png);
  });
});
