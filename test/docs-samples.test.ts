// The documentation cannot rot: every fenced code sample in docs/*.md runs here, in page order,
// against a real server started by the quick start's own command (`npm start`, with PORT=0, a
// fresh data directory and a fresh database), over real HTTP. Shell samples share one session
// (what one sets, the next sees), TypeScript samples are type-checked and run with tsx, JavaScript
// samples run with plain node, and configuration samples are loaded by the service's own parser.
// The convention is described in docs/README.md.
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import sharp from 'sharp';
import { loadConfig } from '../src/config/config.js';
import { ERROR_STATUS } from '../src/core/errors.js';
import { createToolRegistry } from '../src/tools/registry.js';
import { createTestDatabase, type TestDatabase } from './helpers/db.js';
import { cleanupDataDir, cliEnv, makeDataDir, ROOT, waitFor } from './helpers/process.js';
import { freePort } from './helpers/server.js';

const DOCS = path.join(ROOT, 'docs');
/** Placeholders in the samples, replaced by the addresses of what this test started. */
const BASE_URL_PLACEHOLDER = 'http://127.0.0.1:8080';
const HOOKS_PLACEHOLDER = 'https://hooks.example.com';
const RUNNABLE = ['sh', 'ts', 'js'] as const;
type RunnableLang = (typeof RUNNABLE)[number];
/** Fences that look like code in a language the runner does not take: write sh, ts or js. */
const REFUSED_LANGS = ['bash', 'shell', 'zsh', 'console', 'typescript', 'javascript', 'mjs', 'cjs', 'tsx', 'jsx', 'env'];
const SAMPLE_TIMEOUT_MS = 60_000;

interface Directives {
  skip: string | null;
  server: boolean;
  background: boolean;
  ready: RegExp | null;
  expect: RegExp[];
  files: string[];
}

interface Sample {
  page: string;
  /** 1-based line of the opening fence. */
  line: number;
  lang: string;
  code: string;
  directives: Directives;
}

const isRunnable = (lang: string): lang is RunnableLang => (RUNNABLE as readonly string[]).includes(lang);

function regex(source: string, where: string): RegExp {
  try {
    return new RegExp(source, 'm');
  } catch (err) {
    throw new Error(`${where}: bad regular expression ${JSON.stringify(source)}: ${(err as Error).message}`);
  }
}

function parseDirectives(text: string, where: string): Directives {
  const d: Directives = { skip: null, server: false, background: false, ready: null, expect: [], files: [] };
  // A skip is alone, and its reason is free text (semicolons included).
  const skip = /^\s*skip(?:\s+(.*?))?\s*$/s.exec(text);
  if (skip) {
    if (!skip[1]) throw new Error(`${where}: "skip" needs a reason`);
    d.skip = skip[1];
    return d;
  }
  for (const raw of text.split(';')) {
    const item = raw.trim();
    if (!item) continue;
    const space = item.indexOf(' ');
    const name = space < 0 ? item : item.slice(0, space);
    const arg = space < 0 ? '' : item.slice(space + 1).trim();
    switch (name) {
      case 'skip':
        throw new Error(`${where}: a skipped sample takes no other directive`);
      case 'server':
      case 'background':
        if (arg) throw new Error(`${where}: "${name}" takes no argument`);
        d[name] = true;
        break;
      case 'ready':
        if (!arg) throw new Error(`${where}: "ready" needs a regular expression`);
        d.ready = regex(arg, where);
        break;
      case 'expect':
        if (!arg) throw new Error(`${where}: "expect" needs a regular expression`);
        d.expect.push(regex(arg, where));
        break;
      case 'files':
        if (!arg) throw new Error(`${where}: "files" needs paths`);
        d.files.push(...arg.split(/\s+/));
        break;
      default:
        throw new Error(`${where}: unknown sample directive "${name}" (see docs/README.md)`);
    }
  }
  if (d.ready && !d.background) throw new Error(`${where}: "ready" is for background samples`);
  if (d.background && !d.ready) throw new Error(`${where}: a background sample needs "ready"`);
  if (d.server && (d.background || d.expect.length || d.files.length)) throw new Error(`${where}: "server" takes no other directive`);
  return d;
}

/** The fenced code blocks of a Markdown page, with the directive comment right before each. */
export function parseSamples(page: string, markdown: string): Sample[] {
  const lines = markdown.split('\n');
  const samples: Sample[] = [];
  const directiveRe = /^\s*<!--\s*sample:(.*?)-->\s*$/;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? '';
    const open = /^( {0,3})(`{3,}|~{3,})\s*([^\s`]*)[^`]*$/.exec(line);
    if (!open) {
      const stray = directiveRe.exec(line);
      if (stray && !/^( {0,3})(`{3,}|~{3,})/.test(lines[i + 1] ?? '')) {
        throw new Error(`${page}:${i + 1}: a sample directive must be on the line right before a fence`);
      }
      continue;
    }
    const indent = open[1]?.length ?? 0;
    const fence = open[2] ?? '```';
    const lang = (open[3] ?? '').toLowerCase();
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length; i++) {
      const l = lines[i] ?? '';
      const close = /^ {0,3}(`{3,}|~{3,})\s*$/.exec(l);
      if (close && close[1]?.[0] === fence[0] && (close[1]?.length ?? 0) >= fence.length) break;
      body.push(l.replace(new RegExp(`^ {0,${indent}}`), ''));
    }
    assert.ok(i < lines.length, `${page}:${start + 1}: the fence is never closed`);
    const where = `${page}:${start + 1}`;
    const directive = directiveRe.exec(lines[start - 1] ?? '');
    const directives = directive ? parseDirectives(directive[1] ?? '', where) : parseDirectives('', where);
    if (!lang) throw new Error(`${where}: say what the block is (\`\`\`sh, \`\`\`ts, \`\`\`js, or \`\`\`text for output)`);
    if (REFUSED_LANGS.includes(lang)) throw new Error(`${where}: write \`\`\`sh, \`\`\`ts or \`\`\`js (or \`\`\`dotenv), not \`\`\`${lang}`);
    if (directive && !isRunnable(lang) && !(lang === 'dotenv' && directives.skip)) {
      throw new Error(`${where}: only sh, ts and js samples take directives, not \`\`\`${lang || '(no language)'}`);
    }
    samples.push({ page, line: start + 1, lang, code: body.join('\n'), directives });
  }
  return samples;
}

/** The pages, in the order docs/README.md links them. */
function docPages(): string[] {
  const index = fs.readFileSync(path.join(DOCS, 'README.md'), 'utf8');
  const pages: string[] = [];
  for (const m of index.matchAll(/\]\(([a-z0-9-]+\.md)\)/g)) {
    const page = m[1] ?? '';
    if (page !== 'decisions.md' && !pages.includes(page)) pages.push(page);
  }
  return pages;
}

const pages = docPages();
const samplesByPage = new Map(pages.map((p) => [p, parseSamples(p, fs.readFileSync(path.join(DOCS, p), 'utf8'))]));
const allSamples = [...samplesByPage.values()].flat();
const tsSamples = allSamples.filter((s) => s.lang === 'ts' && !s.directives.skip);

/**
 * Why the TypeScript samples cannot run: only when the SDK package itself is not there (another
 * part of the project builds it). Any other failure to load it fails the samples instead.
 */
async function sdkMissingReason(): Promise<string | null> {
  const specifier = '@toolrun/sdk';
  try {
    await import(specifier);
    return null;
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    const entry = path.join(ROOT, 'packages', 'sdk', 'src', 'index.ts');
    if (e.code === 'ERR_MODULE_NOT_FOUND' && (e.message.includes(`'${specifier}'`) || e.message.includes(entry))) {
      return `the SDK package @toolrun/sdk (packages/sdk) is not there yet, so the TypeScript samples cannot run: ${e.message.split('\n')[0]}`;
    }
    return null;
  }
}
const sdkMissing = tsSamples.length > 0 ? await sdkMissingReason() : null;

// ---------------------------------------------------------------------------------------------
// Processes: every child is its own process group (detached), stopped by that id.

interface Proc {
  label: string;
  child: ChildProcess;
  stdout: string;
  stderr: string;
  exit: { code: number | null; signal: NodeJS.Signals | null } | null;
  exited: Promise<void>;
}

const live = new Set<Proc>();

function start(label: string, command: string, args: string[], opts: { cwd: string; env: Record<string, string> }): Proc {
  const child = spawn(command, args, { cwd: opts.cwd, env: opts.env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  const proc: Proc = { label, child, stdout: '', stderr: '', exit: null, exited: Promise.resolve() };
  child.stdout?.on('data', (c: Buffer) => (proc.stdout += c.toString()));
  child.stderr?.on('data', (c: Buffer) => (proc.stderr += c.toString()));
  proc.exited = new Promise((resolve) => {
    child.once('error', (err) => {
      proc.stderr += `\nspawn error: ${err.message}`;
      proc.exit = { code: null, signal: null };
      resolve();
    });
    child.once('close', (code, signal) => {
      proc.exit = { code, signal };
      live.delete(proc);
      resolve();
    });
  });
  live.add(proc);
  return proc;
}

function signalGroup(proc: Proc, signal: NodeJS.Signals): void {
  if (proc.exit || !proc.child.pid) return;
  try {
    process.kill(-proc.child.pid, signal);
  } catch {
    // already gone
  }
}

const output = (proc: Proc) => `\n--- stdout of ${proc.label}:\n${proc.stdout}\n--- stderr:\n${proc.stderr}`;

async function stopProc(proc: Proc, timeoutMs = 20_000): Promise<void> {
  signalGroup(proc, 'SIGTERM');
  const stopped = await Promise.race([proc.exited.then(() => true), new Promise<false>((r) => setTimeout(() => r(false), timeoutMs).unref())]);
  if (!stopped) {
    signalGroup(proc, 'SIGKILL');
    await proc.exited;
  }
}

/** Runs a command to its end (killed at the deadline). */
async function runToEnd(label: string, command: string, args: string[], opts: { cwd: string; env: Record<string, string> }): Promise<Proc> {
  const proc = start(label, command, args, opts);
  let timer: NodeJS.Timeout | undefined;
  const timedOut = await Promise.race([
    proc.exited.then(() => false),
    new Promise<true>((r) => {
      timer = setTimeout(() => r(true), SAMPLE_TIMEOUT_MS);
    }),
  ]);
  clearTimeout(timer);
  if (timedOut) {
    signalGroup(proc, 'SIGKILL');
    await proc.exited;
    assert.fail(`${label} did not finish within ${SAMPLE_TIMEOUT_MS} ms${output(proc)}`);
  }
  return proc;
}

// ---------------------------------------------------------------------------------------------
// The session the samples share.

let database: TestDatabase;
let dataDir: string;
/** The scratch directory the samples run in: inside the checkout, so `npx toolrun` and the SDK resolve. */
let work: string;
let samplesDir: string;
let server: Proc | null = null;
let baseUrl = '';
let env: Record<string, string> = {};
let tlsFront: https.Server | null = null;
let hooksOrigin = '';
let receiverPort = 0;
let background: { sample: Sample; proc: Proc } | null = null;

const sampleName = (s: Sample) => `${s.page.replace(/\.md$/, '')}-L${s.line}`;

function substitute(code: string): string {
  assert.ok(baseUrl, 'the server sample must come before samples that use the server');
  return code.replaceAll(BASE_URL_PLACEHOLDER, baseUrl).replaceAll(HOOKS_PLACEHOLDER, hooksOrigin);
}

function toEnv(source: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(source)) if (v !== undefined) out[k] = v;
  return out;
}

/** An HTTPS front on 127.0.0.1 (the test certificate) that forwards to the receiver port. */
async function startTlsFront(): Promise<void> {
  const cert = process.env.TEST_TLS_CERT_FILE;
  const key = process.env.TEST_TLS_KEY_FILE;
  assert.ok(cert && key, 'TEST_TLS_CERT_FILE / TEST_TLS_KEY_FILE are not set: run the tests through `npm test`');
  receiverPort = await freePort();
  tlsFront = https.createServer({ cert: fs.readFileSync(cert), key: fs.readFileSync(key) }, (req, res) => {
    const upstream = http.request(
      { host: '127.0.0.1', port: receiverPort, method: req.method, path: req.url, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on('error', () => {
      if (!res.headersSent) res.writeHead(502);
      res.end();
    });
    req.pipe(upstream);
  });
  const front = tlsFront;
  await new Promise<void>((resolve) => front.listen(0, '127.0.0.1', resolve));
  const address = front.address();
  assert.ok(address && typeof address === 'object');
  hooksOrigin = `https://127.0.0.1:${address.port}`;
}

before(async () => {
  database = await createTestDatabase();
  dataDir = makeDataDir('docs');
  fs.mkdirSync(path.join(ROOT, '.test-data'), { recursive: true });
  work = fs.mkdtempSync(path.join(ROOT, '.test-data', 'docs-samples-'));
  samplesDir = path.join(work, '.samples');
  fs.mkdirSync(samplesDir);
  // photo.jpg: 640x480, a disc on a warm background (the quick start's "any JPEG").
  await sharp({ create: { width: 640, height: 480, channels: 3, background: { r: 200, g: 120, b: 60 } } })
    .composite([{ input: Buffer.from('<svg width="640" height="480"><circle cx="320" cy="240" r="150" fill="#3366cc"/></svg>') }])
    .jpeg({ quality: 85 })
    .toFile(path.join(work, 'photo.jpg'));
  await startTlsFront();
  env = toEnv(cliEnv({ DATABASE_URL: database.url, TOOLRUN_DATA_DIR: dataDir }));
});

after(async () => {
  for (const proc of [...live]) await stopProc(proc, 10_000);
  if (tlsFront) {
    tlsFront.closeAllConnections();
    await new Promise<void>((resolve) => tlsFront?.close(() => resolve()));
  }
  await database?.db.close();
  if (dataDir) await cleanupDataDir(dataDir);
  if (work) fs.rmSync(work, { recursive: true, force: true });
});

function checkExpectations(sample: Sample, proc: Proc): void {
  for (const re of sample.directives.expect) {
    assert.match(proc.stdout, re, `${sample.page}:${sample.line}: the output does not match ${re}${output(proc)}`);
  }
  for (const file of sample.directives.files) {
    const p = path.join(work, file);
    assert.ok(fs.existsSync(p), `${sample.page}:${sample.line}: ${file} was not written${output(proc)}`);
    const bytes = fs.readFileSync(p);
    assert.ok(bytes.length > 0, `${sample.page}:${sample.line}: ${file} is empty`);
    if (/\.jpe?g$/i.test(file)) assert.deepEqual([...bytes.subarray(0, 3)], [0xff, 0xd8, 0xff], `${file} is not a JPEG`);
    if (/\.png$/i.test(file)) assert.deepEqual([...bytes.subarray(0, 4)], [0x89, 0x50, 0x4e, 0x47], `${file} is not a PNG`);
    if (/\.json$/i.test(file)) assert.doesNotThrow(() => JSON.parse(bytes.toString('utf8')), `${file} is not JSON`);
  }
}

async function runServer(sample: Sample): Promise<void> {
  assert.equal(sample.lang, 'sh', `${sample.page}:${sample.line}: the server sample is a sh sample`);
  assert.equal(server, null, 'only one server sample');
  server = start(`the server sample (${sample.page}:${sample.line})`, 'bash', ['-c', sample.code], {
    cwd: ROOT,
    env: { ...env, PORT: '0', LOG_LEVEL: 'info', TOOLRUN_ALLOW_PRIVATE_NETWORK: '1', TOOLRUN_WORKER_CONCURRENCY: '2' },
  });
  const proc = server;
  const listening = await waitFor(
    'the server to listen',
    () => {
      for (const line of proc.stdout.split('\n')) {
        if (!line.startsWith('{')) continue;
        const entry = JSON.parse(line) as { msg?: unknown; url?: unknown };
        if (entry.msg === 'toolrun API listening' && typeof entry.url === 'string') return entry.url;
      }
      if (proc.exit) throw new Error(`the server exited (${JSON.stringify(proc.exit)})${output(proc)}`);
      return null;
    },
    SAMPLE_TIMEOUT_MS,
  );
  assert.match(listening, /^http:\/\/127\.0\.0\.1:\d+$/);
  baseUrl = listening;
  const ready = await fetch(`${baseUrl}/readyz`);
  assert.equal(ready.status, 200);
}

/** Stops the running background sample once everything it should print has appeared. */
async function stopBackground(): Promise<void> {
  if (!background) return;
  const { sample, proc } = background;
  background = null;
  try {
    await waitFor(
      `${sample.page}:${sample.line} to print what it should`,
      () => {
        if (sample.directives.expect.every((re) => re.test(proc.stdout))) return true;
        if (proc.exit) throw new Error(`it exited (${JSON.stringify(proc.exit)})`);
        return false;
      },
      30_000,
    );
  } catch (err) {
    await stopProc(proc);
    assert.fail(`${(err as Error).message}${output(proc)}`);
  }
  await stopProc(proc);
  checkExpectations(sample, proc);
}

function writeSampleFile(sample: Sample): string {
  const ext = sample.lang === 'js' ? 'mjs' : sample.lang;
  const file = path.join(samplesDir, `${sampleName(sample)}.${ext}`);
  // `export {}` keeps a TypeScript sample a module (top-level await, its own scope) whatever it holds.
  const code = sample.lang === 'ts' ? `${substitute(sample.code)}\nexport {};\n` : `${substitute(sample.code)}\n`;
  fs.writeFileSync(file, code);
  return file;
}

function commandFor(sample: Sample, file: string): [string, string[]] {
  if (sample.lang === 'ts') return [process.execPath, ['--import', 'tsx', file]];
  if (sample.lang === 'js') return [process.execPath, [file]];
  return ['bash', [file]];
}

async function runSample(sample: Sample): Promise<void> {
  if (sample.directives.server) return runServer(sample);
  const label = `${sample.page}:${sample.line} (${sample.lang})`;
  if (sample.directives.background) {
    await stopBackground();
    const file = writeSampleFile(sample);
    const [command, args] = commandFor(sample, file);
    const proc = start(label, command, args, { cwd: work, env: { ...env, PORT: String(receiverPort) } });
    background = { sample, proc };
    const ready = sample.directives.ready;
    assert.ok(ready);
    await waitFor(
      `${label} to be ready (${ready})`,
      () => {
        if (ready.test(proc.stdout)) return true;
        if (proc.exit) throw new Error(`${label} exited (${JSON.stringify(proc.exit)})${output(proc)}`);
        return false;
      },
      SAMPLE_TIMEOUT_MS,
    );
    return;
  }
  if (sample.lang === 'sh') {
    // As if typed into one shell: everything the sample sets (set -a exports it, functions too)
    // is written out and handed to every later sample.
    const envOut = path.join(samplesDir, `${sampleName(sample)}.env`);
    const file = path.join(samplesDir, `${sampleName(sample)}.sh`);
    fs.writeFileSync(file, `set -euo pipefail\nset -a\n${substitute(sample.code)}\nenv -0 > "$DOCS_SAMPLE_ENV_OUT"\n`);
    const proc = await runToEnd(label, 'bash', [file], { cwd: work, env: { ...env, DOCS_SAMPLE_ENV_OUT: envOut } });
    assert.deepEqual(proc.exit, { code: 0, signal: null }, `${label} failed${output(proc)}`);
    const next: Record<string, string> = {};
    for (const entry of fs.readFileSync(envOut, 'utf8').split('\0')) {
      const eq = entry.indexOf('=');
      if (eq <= 0) continue;
      const name = entry.slice(0, eq);
      if (['PWD', 'OLDPWD', 'SHLVL', '_', 'DOCS_SAMPLE_ENV_OUT'].includes(name)) continue;
      next[name] = entry.slice(eq + 1);
    }
    env = next;
    checkExpectations(sample, proc);
    return;
  }
  const file = writeSampleFile(sample);
  const [command, args] = commandFor(sample, file);
  const proc = await runToEnd(label, command, args, { cwd: work, env });
  assert.deepEqual(proc.exit, { code: 0, signal: null }, `${label} failed${output(proc)}`);
  checkExpectations(sample, proc);
}

function loadDotenv(sample: Sample): void {
  const vars: Record<string, string> = {};
  for (const [i, raw] of sample.code.split('\n').entries()) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    const m = /^([A-Z][A-Z0-9_]*)=(.*)$/.exec(line);
    assert.ok(m, `${sample.page}:${sample.line + 1 + i}: not a NAME=value line: ${line}`);
    vars[m[1] ?? ''] = (m[2] ?? '').replace(/^(["'])(.*)\1$/, '$2');
  }
  assert.ok(Object.keys(vars).length > 0, `${sample.page}:${sample.line}: an empty configuration sample`);
  assert.doesNotThrow(() => loadConfig(vars, ROOT), `${sample.page}:${sample.line}: the service refuses this configuration`);
  const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## Configuration'), readme.indexOf('\n## ', readme.indexOf('## Configuration') + 1));
  for (const name of Object.keys(vars)) {
    assert.ok(section.includes(`\`${name}\``), `${sample.page}:${sample.line}: ${name} is not in the README's configuration table`);
  }
}

// ---------------------------------------------------------------------------------------------

describe('the documentation pages', () => {
  test('docs/README.md links every page, the README links the docs, and every page has samples that run', () => {
    const onDisk = fs
      .readdirSync(DOCS)
      .filter((f) => f.endsWith('.md') && f !== 'README.md' && f !== 'decisions.md')
      .sort();
    assert.deepEqual([...pages].sort(), onDisk, 'docs/README.md must link every page under docs/ (and only those)');
    const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
    for (const page of ['README.md', ...pages]) assert.ok(readme.includes(`](docs/${page})`), `README.md does not link docs/${page}`);
    for (const [page, samples] of samplesByPage) {
      // Written by `npm run bench`: figures and charts, nothing to run.
      if (page === 'benchmarks.md') continue;
      const runnable = samples.filter((s) => isRunnable(s.lang) && !s.directives.skip);
      assert.ok(runnable.length > 0, `${page} has no sample that runs`);
    }
    assert.equal(allSamples.filter((s) => s.directives.server).length, 1, 'exactly one server sample');
    const first = allSamples.findIndex((s) => isRunnable(s.lang) && !s.directives.skip);
    assert.ok(allSamples[first]?.directives.server, 'the server sample is the first sample that runs');
  });

  test('the parser finds fences, directives and mistakes', () => {
    const md = [
      'text',
      '<!-- sample: expect ^ok$; files a.json -->',
      '```sh',
      'echo ok',
      '```',
      '   <!-- sample: skip no reason to run -->',
      '   ```ts',
      '   const x = 1;',
      '   ```',
      '```json',
      '{}',
      '```',
    ].join('\n');
    const s = parseSamples('x.md', md);
    assert.deepEqual(
      s.map((x) => [x.line, x.lang, x.code, x.directives.expect.map(String), x.directives.files, x.directives.skip]),
      [
        [3, 'sh', 'echo ok', ['/^ok$/m'], ['a.json'], null],
        [7, 'ts', 'const x = 1;', [], [], 'no reason to run'],
        [10, 'json', '{}', [], [], null],
      ],
    );
    assert.throws(() => parseSamples('x.md', '<!-- sample: skip -->\n```sh\nx\n```'), /needs a reason/);
    assert.throws(() => parseSamples('x.md', '<!-- sample: expeect x -->\n```sh\nx\n```'), /unknown sample directive/);
    assert.throws(() => parseSamples('x.md', '<!-- sample: expect x -->\n\n```sh\nx\n```'), /right before a fence/);
    assert.throws(() => parseSamples('x.md', '```bash\nx\n```'), /not ```bash/);
    assert.throws(() => parseSamples('x.md', '<!-- sample: background -->\n```sh\nx\n```'), /needs "ready"/);
    assert.throws(() => parseSamples('x.md', '```sh\nx\n'), /never closed/);
    assert.throws(() => parseSamples('x.md', '```\nx\n```'), /say what the block is/);
    assert.throws(() => parseSamples('x.md', '<!-- sample: expect x -->\n```json\n{}\n```'), /only sh, ts and js samples take directives/);
  });

  test('errors.md lists every error code the service answers, with its status', () => {
    const text = fs.readFileSync(path.join(DOCS, 'errors.md'), 'utf8');
    for (const [code, status] of Object.entries(ERROR_STATUS)) {
      assert.match(text, new RegExp(`^\\| ${status} \\| \`${code}\` \\|`, 'm'), `errors.md: no row "| ${status} | \`${code}\` |"`);
    }
  });

  test('prices.md prices every tool, with the plans that include it', () => {
    const text = fs.readFileSync(path.join(DOCS, 'prices.md'), 'utf8');
    const tools = createToolRegistry().listed();
    assert.ok(tools.length >= 5);
    for (const tool of tools) {
      const plans = tool.plans.map((p) => p[0]?.toUpperCase() + p.slice(1)).join(', ');
      assert.match(text, new RegExp(`^\\| \`${tool.id}\` \\| ${plans} \\| .+ \\|$`, 'm'), `prices.md: no row for ${tool.id} (${plans})`);
    }
  });
});

/**
 * Type-checks TypeScript samples with the project's compiler settings (strict) and returns the
 * diagnostics about them; the SDK's own sources are judged by its package, not here.
 */
function typecheck(samples: Sample[]): { diagnostics: string[]; all: string } {
  const dir = fs.mkdtempSync(path.join(ROOT, '.test-data', 'docs-typecheck-'));
  try {
    const files = samples.map((s) => {
      const file = path.join(dir, `${sampleName(s)}.ts`);
      fs.writeFileSync(file, `${s.code}\nexport {};\n`);
      return file;
    });
    const tsconfig = path.join(dir, 'tsconfig.json');
    fs.writeFileSync(tsconfig, JSON.stringify({ extends: path.join(ROOT, 'tsconfig.json'), compilerOptions: { noEmit: true }, include: [], files }));
    const tsc = spawnSync(process.execPath, [path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', tsconfig, '--pretty', 'false'], {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: SAMPLE_TIMEOUT_MS,
    });
    const all = `${tsc.stdout ?? ''}${tsc.stderr ?? ''}`;
    assert.ok(tsc.status === 0 || all.trim().length > 0, `tsc failed without a diagnostic (status ${tsc.status}, ${tsc.error?.message ?? ''})`);
    const rel = path.relative(ROOT, dir);
    const diagnostics = all.split('\n').filter((l) => l.startsWith(dir) || l.startsWith(rel));
    return { diagnostics: diagnostics.map((l) => l.replace(dir + path.sep, '').replace(rel + path.sep, '')), all };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

describe('TypeScript samples', () => {
  const skip = sdkMissing ?? (tsSamples.length === 0 ? 'no TypeScript samples' : false);
  test('type-check against the SDK (tsc, strict)', { skip }, () => {
    const { diagnostics, all } = typecheck(tsSamples);
    assert.deepEqual(diagnostics, [], `the TypeScript samples do not type-check:\n${all}`);
  });

  test('the type-check can fail: a method the SDK lacks, a wrong type', { skip }, () => {
    const bad: Sample = {
      page: 'bad.md',
      line: 1,
      lang: 'ts',
      code: "import { Toolrun } from '@toolrun/sdk';\nconst client = new Toolrun();\nawait client.runs.nope();\nconst n: number = (await client.me()).team.name;",
      directives: parseDirectives('', 'bad.md:1'),
    };
    const { diagnostics } = typecheck([bad]);
    assert.equal(diagnostics.length, 2, diagnostics.join('\n'));
    assert.match(diagnostics[0] ?? '', /^bad-L1\.ts\(3,\d+\): error TS2339: Property 'nope' does not exist/);
    assert.match(diagnostics[1] ?? '', /^bad-L1\.ts\(4,\d+\): error TS2322/);
  });
});

for (const [page, samples] of samplesByPage) {
  describe(`docs/${page}`, () => {
    for (const sample of samples) {
      const name = `${page}:${sample.line} ${sample.lang || 'text'}${sample.directives.server ? ' (server)' : ''}${sample.directives.background ? ' (background)' : ''}`;
      if (sample.lang === 'dotenv') {
        if (sample.directives.skip) test(name, { skip: sample.directives.skip }, () => undefined);
        else test(`${name}: accepted by the configuration parser`, () => loadDotenv(sample));
        continue;
      }
      if (!isRunnable(sample.lang)) continue;
      const skip = sample.directives.skip ?? (sample.lang === 'ts' ? sdkMissing : null);
      test(name, { skip: skip ?? false }, () => runSample(sample));
    }
    if (samples.some((s) => s.directives.background && !s.directives.skip)) {
      test(`${page}: background samples printed what they should, and stop`, async () => {
        await stopBackground();
      });
    }
    if (page === 'quickstart.md') {
      test('the quick start leaves the session a key, the server address and a file', () => {
        assert.match(env.TOOLRUN_API_KEY ?? '', /^svc_test_[A-Za-z0-9]{40}$/);
        assert.equal(env.TOOLRUN_BASE_URL, baseUrl);
        assert.match(env.FILE_ID ?? '', /^[0-9a-f-]{36}$/);
      });
    }
  });
}

test('the server stops cleanly', async () => {
  await stopBackground();
  assert.ok(server, 'the server sample ran');
  const proc = server;
  await stopProc(proc);
  assert.ok(proc.exit, 'the server exited');
  // Nothing the samples did made the service log an error (a 500, a failed run, a crash).
  const errors = proc.stdout.split('\n').filter((l) => l.startsWith('{') && ((JSON.parse(l) as { level?: number }).level ?? 0) >= 50);
  assert.deepEqual(errors, [], 'the server logged errors');
});
