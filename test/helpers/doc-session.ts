// The one session test/docs-samples.test.ts runs the docs' samples in, in page order: a real
// server started by the quick start's own command (`npm start`, with PORT=0, a fresh data directory
// and a fresh database), a shell whose state carries from one sh sample to the next, a scratch
// directory inside the checkout, and an HTTPS front standing in for https://hooks.example.com.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import path from 'node:path';
import sharp from 'sharp';
import { loadConfig } from '../../src/config/config.js';
import { createTestDatabase, type TestDatabase } from './db.js';
import { sampleName, type Sample } from './doc-samples.js';
import { cleanupDataDir, cliEnv, makeDataDir, ROOT, waitFor } from './process.js';
import { SAMPLE_TIMEOUT_MS, SampleProcess } from './sample-runner.js';
import { freePort } from './server.js';

/** Placeholders in the samples, replaced by the addresses of what the session started. */
const BASE_URL_PLACEHOLDER = 'http://127.0.0.1:8080';
const HOOKS_PLACEHOLDER = 'https://hooks.example.com';

function toEnv(source: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(source)) if (v !== undefined) out[k] = v;
  return out;
}

export class DocSession {
  /** What the shell samples so far have set: every later sample starts with it. */
  env: Record<string, string> = {};
  baseUrl = '';
  server: SampleProcess | null = null;
  private database: TestDatabase | undefined;
  private dataDir = '';
  /** The scratch directory the samples run in: inside the checkout, so `npx toolrun` and the SDK resolve. */
  private work = '';
  private samplesDir = '';
  private tlsFront: https.Server | null = null;
  private hooksOrigin = '';
  private receiverPort = 0;
  private background: { sample: Sample; proc: SampleProcess } | null = null;

  async open(): Promise<void> {
    this.database = await createTestDatabase();
    this.dataDir = makeDataDir('docs');
    fs.mkdirSync(path.join(ROOT, '.test-data'), { recursive: true });
    this.work = fs.mkdtempSync(path.join(ROOT, '.test-data', 'docs-samples-'));
    this.samplesDir = path.join(this.work, '.samples');
    fs.mkdirSync(this.samplesDir);
    // photo.jpg: 640x480, a disc on a warm background (the quick start's "any JPEG").
    await sharp({ create: { width: 640, height: 480, channels: 3, background: { r: 200, g: 120, b: 60 } } })
      .composite([{ input: Buffer.from('<svg width="640" height="480"><circle cx="320" cy="240" r="150" fill="#3366cc"/></svg>') }])
      .jpeg({ quality: 85 })
      .toFile(path.join(this.work, 'photo.jpg'));
    await this.startTlsFront();
    this.env = toEnv(cliEnv({ DATABASE_URL: this.database.url, TOOLRUN_DATA_DIR: this.dataDir }));
  }

  /** Stops whatever open() got to start, even when it failed half way. */
  async close(): Promise<void> {
    for (const proc of SampleProcess.running()) await proc.stop(10_000);
    const front = this.tlsFront;
    if (front) {
      front.closeAllConnections();
      await new Promise<void>((resolve) => front.close(() => resolve()));
    }
    await this.database?.db.close();
    if (this.dataDir) await cleanupDataDir(this.dataDir);
    if (this.work) fs.rmSync(this.work, { recursive: true, force: true });
  }

  /** An HTTPS front on 127.0.0.1 (the test certificate) that forwards to the receiver port. */
  private async startTlsFront(): Promise<void> {
    const cert = process.env.TEST_TLS_CERT_FILE;
    const key = process.env.TEST_TLS_KEY_FILE;
    assert.ok(cert && key, 'TEST_TLS_CERT_FILE / TEST_TLS_KEY_FILE are not set: run the tests through `npm test`');
    this.receiverPort = await freePort();
    const front = https.createServer({ cert: fs.readFileSync(cert), key: fs.readFileSync(key) }, (req, res) => {
      const upstream = http.request(
        { host: '127.0.0.1', port: this.receiverPort, method: req.method, path: req.url, headers: req.headers },
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
    this.tlsFront = front;
    await new Promise<void>((resolve) => front.listen(0, '127.0.0.1', resolve));
    const address = front.address();
    assert.ok(address && typeof address === 'object');
    this.hooksOrigin = `https://127.0.0.1:${address.port}`;
  }

  private substitute(code: string): string {
    assert.ok(this.baseUrl, 'the server sample must come before samples that use the server');
    return code.replaceAll(BASE_URL_PLACEHOLDER, this.baseUrl).replaceAll(HOOKS_PLACEHOLDER, this.hooksOrigin);
  }

  private checkExpectations(sample: Sample, proc: SampleProcess): void {
    for (const re of sample.directives.expect) {
      assert.match(proc.stdout, re, `${sample.page}:${sample.line}: the output does not match ${re}${proc.report}`);
    }
    for (const file of sample.directives.files) {
      const p = path.join(this.work, file);
      assert.ok(fs.existsSync(p), `${sample.page}:${sample.line}: ${file} was not written${proc.report}`);
      const bytes = fs.readFileSync(p);
      assert.ok(bytes.length > 0, `${sample.page}:${sample.line}: ${file} is empty`);
      if (/\.jpe?g$/i.test(file)) assert.deepEqual([...bytes.subarray(0, 3)], [0xff, 0xd8, 0xff], `${file} is not a JPEG`);
      if (/\.png$/i.test(file)) assert.deepEqual([...bytes.subarray(0, 4)], [0x89, 0x50, 0x4e, 0x47], `${file} is not a PNG`);
      if (/\.json$/i.test(file)) assert.doesNotThrow(() => JSON.parse(bytes.toString('utf8')), `${file} is not JSON`);
    }
  }

  private async runServer(sample: Sample): Promise<void> {
    assert.equal(sample.lang, 'sh', `${sample.page}:${sample.line}: the server sample is a sh sample`);
    assert.equal(this.server, null, 'only one server sample');
    const proc = new SampleProcess(`the server sample (${sample.page}:${sample.line})`, 'bash', ['-c', sample.code], {
      cwd: ROOT,
      env: { ...this.env, PORT: '0', LOG_LEVEL: 'info', TOOLRUN_ALLOW_PRIVATE_NETWORK: '1', TOOLRUN_WORKER_CONCURRENCY: '2' },
    });
    this.server = proc;
    const listening = await waitFor(
      'the server to listen',
      () => {
        for (const line of proc.stdout.split('\n')) {
          if (!line.startsWith('{')) continue;
          const entry = JSON.parse(line) as { msg?: unknown; url?: unknown };
          if (entry.msg === 'toolrun API listening' && typeof entry.url === 'string') return entry.url;
        }
        if (proc.exit) throw new Error(`the server exited (${JSON.stringify(proc.exit)})${proc.report}`);
        return null;
      },
      SAMPLE_TIMEOUT_MS,
    );
    assert.match(listening, /^http:\/\/127\.0\.0\.1:\d+$/);
    this.baseUrl = listening;
    const ready = await fetch(`${this.baseUrl}/readyz`);
    assert.equal(ready.status, 200);
  }

  /** Stops the running background sample once everything it should print has appeared. */
  async stopBackground(): Promise<void> {
    if (!this.background) return;
    const { sample, proc } = this.background;
    this.background = null;
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
      await proc.stop();
      assert.fail(`${(err as Error).message}${proc.report}`);
    }
    await proc.stop();
    this.checkExpectations(sample, proc);
  }

  private writeSampleFile(sample: Sample): string {
    const ext = sample.lang === 'js' ? 'mjs' : sample.lang;
    const file = path.join(this.samplesDir, `${sampleName(sample)}.${ext}`);
    // `export {}` keeps a TypeScript sample a module (top-level await, its own scope) whatever it holds.
    const code = sample.lang === 'ts' ? `${this.substitute(sample.code)}\nexport {};\n` : `${this.substitute(sample.code)}\n`;
    fs.writeFileSync(file, code);
    return file;
  }

  private commandFor(sample: Sample, file: string): [string, string[]] {
    if (sample.lang === 'ts') return [process.execPath, ['--import', 'tsx', file]];
    if (sample.lang === 'js') return [process.execPath, [file]];
    return ['bash', [file]];
  }

  async runSample(sample: Sample): Promise<void> {
    if (sample.directives.server) return this.runServer(sample);
    const label = `${sample.page}:${sample.line} (${sample.lang})`;
    if (sample.directives.background) {
      await this.stopBackground();
      const file = this.writeSampleFile(sample);
      const [command, args] = this.commandFor(sample, file);
      const proc = new SampleProcess(label, command, args, { cwd: this.work, env: { ...this.env, PORT: String(this.receiverPort) } });
      this.background = { sample, proc };
      const ready = sample.directives.ready;
      assert.ok(ready);
      await waitFor(
        `${label} to be ready (${ready})`,
        () => {
          if (ready.test(proc.stdout)) return true;
          if (proc.exit) throw new Error(`${label} exited (${JSON.stringify(proc.exit)})${proc.report}`);
          return false;
        },
        SAMPLE_TIMEOUT_MS,
      );
      return;
    }
    if (sample.lang === 'sh') {
      // As if typed into one shell: everything the sample sets (set -a exports it, functions too)
      // is written out and handed to every later sample.
      const envOut = path.join(this.samplesDir, `${sampleName(sample)}.env`);
      const file = path.join(this.samplesDir, `${sampleName(sample)}.sh`);
      fs.writeFileSync(file, `set -euo pipefail\nset -a\n${this.substitute(sample.code)}\nenv -0 > "$DOCS_SAMPLE_ENV_OUT"\n`);
      const proc = new SampleProcess(label, 'bash', [file], { cwd: this.work, env: { ...this.env, DOCS_SAMPLE_ENV_OUT: envOut } });
      await proc.finish();
      assert.deepEqual(proc.exit, { code: 0, signal: null }, `${label} failed${proc.report}`);
      const next: Record<string, string> = {};
      for (const entry of fs.readFileSync(envOut, 'utf8').split('\0')) {
        const eq = entry.indexOf('=');
        if (eq <= 0) continue;
        const name = entry.slice(0, eq);
        if (['PWD', 'OLDPWD', 'SHLVL', '_', 'DOCS_SAMPLE_ENV_OUT'].includes(name)) continue;
        next[name] = entry.slice(eq + 1);
      }
      this.env = next;
      this.checkExpectations(sample, proc);
      return;
    }
    const file = this.writeSampleFile(sample);
    const [command, args] = this.commandFor(sample, file);
    const proc = new SampleProcess(label, command, args, { cwd: this.work, env: this.env });
    await proc.finish();
    assert.deepEqual(proc.exit, { code: 0, signal: null }, `${label} failed${proc.report}`);
    this.checkExpectations(sample, proc);
  }
}

/** A configuration (dotenv) sample: the service's own parser takes it, and the README documents every name. */
export function loadDotenv(sample: Sample): void {
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
