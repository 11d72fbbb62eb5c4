// The Python client (clients/python) against the real server over a socket, with a real run
// worker: its unittest suite runs in python3 with TOOLRUN_BASE_URL and TOOLRUN_API_KEY naming this
// server and a fresh team's key, and must pass with none of its live tests skipped; and every
// ```python sample of docs/python.md runs against the same server.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import type { RunWorker } from '../src/runs/worker.js';
import { createToolRegistry } from '../src/tools/registry.js';
import { makeTeam, type TeamFixture } from './helpers/fixtures.js';
import { makePng } from './helpers/media.js';
import { cliEnv, ROOT } from './helpers/process.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { startTestWorker } from './helpers/worker.js';

const PYTHON = process.env.PYTHON ?? 'python3';
const CLIENT_DIR = path.join(ROOT, 'clients', 'python');
// The suite takes a few seconds; this bounds a hung one.
const DEADLINE_MS = 120_000;

const tools = createToolRegistry();
let s: TestServer;
let worker: RunWorker;
let team: TeamFixture;
let tmp: string;

before(async () => {
  // 1 MiB parts, so the client's multi-part upload is exercised with a small file.
  s = await startTestServer({ tools, env: { TOOLRUN_PART_SIZE_BYTES: String(1024 * 1024) } });
  worker = await startTestWorker(s, tools);
  team = await makeTeam(s.database.db, { sparks: 1000, rate: 300 });
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'python-client-'));
});
after(async () => {
  await worker.stop(1000);
  await s.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

/** The environment python3 runs in: ours without toolrun settings, plus the server and the key. */
function pythonEnv(extraPath: string[] = []): NodeJS.ProcessEnv {
  return cliEnv({
    TOOLRUN_BASE_URL: s.url,
    TOOLRUN_API_KEY: team.key,
    PYTHONPATH: [CLIENT_DIR, ...extraPath].join(path.delimiter),
    // No __pycache__ in the checkout, unbuffered output, no proxy for the loopback server.
    PYTHONDONTWRITEBYTECODE: '1',
    PYTHONUNBUFFERED: '1',
    PYTHONFAULTHANDLER: '1',
    NO_PROXY: '127.0.0.1,localhost',
    no_proxy: '127.0.0.1,localhost',
  });
}

interface Result {
  code: number | null;
  signal: NodeJS.Signals | null;
  output: string;
}

/** Runs python3 without blocking this process's event loop (the server under test lives in it). */
function runPython(args: string[], env: NodeJS.ProcessEnv): Promise<Result> {
  return runPythonIn(ROOT, args, env);
}

function runPythonIn(cwd: string, args: string[], env: NodeJS.ProcessEnv): Promise<Result> {
  return new Promise((resolve, reject) => {
    const child = spawn(PYTHON, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    // A hung run is killed, first with SIGABRT: with PYTHONFAULTHANDLER set, Python prints every
    // thread's stack before it dies, so the report says where it hung.
    let kill: NodeJS.Timeout | undefined;
    const timer = setTimeout(() => {
      output += `\n[no exit within ${DEADLINE_MS} ms: SIGABRT]\n`;
      if (child.pid) process.kill(child.pid, 'SIGABRT');
      kill = setTimeout(() => child.pid && child.exitCode === null && process.kill(child.pid, 'SIGKILL'), 5000);
    }, DEADLINE_MS);
    child.once('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      reject(
        err.code === 'ENOENT'
          ? new Error(`${PYTHON} was not found on PATH: the Python client's tests need Python 3.9 or newer (CI installs python3)`)
          : err,
      );
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      clearTimeout(kill);
      resolve({ code, signal, output });
    });
  });
}

test('the Python client passes its unittest suite against a live server', async () => {
  const env = pythonEnv();
  const version = await runPython(['-c', 'import sys; print("%d.%d" % sys.version_info[:2])'], env);
  assert.equal(version.code, 0, version.output);
  const [major, minor] = version.output.trim().split('.').map(Number);
  assert.ok(major === 3 && (minor ?? 0) >= 9, `${PYTHON} is ${version.output.trim()}; the client needs Python 3.9 or newer`);

  const result = await runPython(['-m', 'unittest', 'discover', '-s', 'clients/python/tests', '-v'], env);
  const report = `python3 -m unittest output:\n${result.output}`;
  assert.equal(result.signal, null, report);
  assert.equal(result.code, 0, report);
  assert.match(result.output, /^OK\b/m, report);
  // The live tests must have run here: a skip would mean the environment did not reach them.
  assert.doesNotMatch(result.output, /\(test_live\.[^)]*\) \.\.\. skipped/, report);
  assert.match(result.output, /test_happy_path \(test_live\.Live[^)]*\) \.\.\. ok/, report);
});

test('every python sample of docs/python.md runs against a live server', async () => {
  const page = fs.readFileSync(path.join(ROOT, 'docs', 'python.md'), 'utf8');
  const samples = [...page.matchAll(/^```python\n([\s\S]*?)^```$/gm)].map((m) => m[1] ?? '');
  assert.ok(samples.length >= 3, `docs/python.md has ${samples.length} python samples`);
  fs.writeFileSync(path.join(tmp, 'photo.png'), await makePng(64, 48));
  for (const [i, code] of samples.entries()) {
    // Imported as a module, so a sample's `if __name__ == "__main__":` (a server) is defined, not started.
    fs.writeFileSync(path.join(tmp, `docs_sample_${i}.py`), code);
    const result = await runPythonIn(tmp, ['-c', `import docs_sample_${i}`], pythonEnv([tmp]));
    assert.equal(result.code, 0, `docs/python.md sample ${i + 1}:\n${code}\noutput:\n${result.output}`);
  }
  assert.ok(fs.readdirSync(path.join(tmp, 'results')).includes('photo-upscaled.png'));
  assert.ok(fs.readdirSync(path.join(tmp, 'upscaled')).includes('photo-upscaled.png'));
});
