// The API reference (GET /v1/openapi.json, shown at /docs) as documentation that cannot rot: every
// operation has request and response examples that validate against its own schemas, and code
// samples in curl, TypeScript (@toolrun/sdk) and Python (clients/python) as x-codeSamples. Each
// sample, as the document serves it, runs here against a real server over HTTP: curl with bash,
// TypeScript with tsx after a strict type-check, Python with python3. Every sample gets a fresh
// team's key in TOOLRUN_API_KEY, the server in TOOLRUN_BASE_URL, and the ids it reads (FILE_ID,
// RUN_ID, ...) made first through the API, as an earlier call would have; it must exit 0 and print
// what the operation answered. https://hooks.example.com stands for a receiver the test runs.
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import sharp from 'sharp';
import { ERROR_STATUS } from '../src/core/errors.js';
import { exampleCode, listedCodes, OPERATION_SAMPLES, SAMPLE_LANGUAGES } from '../src/http/samples/index.js';
import type { RunWorker } from '../src/runs/worker.js';
import { callApi, makeTeam } from './helpers/fixtures.js';
import { Contract, isObject, operations, type Json } from './helpers/openapi-contract.js';
import { cliEnv, ROOT, waitFor } from './helpers/process.js';
import { closeReceivers, Receiver } from './helpers/receiver.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { testRegistry } from './helpers/test-tools.js';
import { uploadAll, type Upload } from './helpers/uploads.js';
import { startTestWorker } from './helpers/worker.js';

const HOOKS_PLACEHOLDER = 'https://hooks.example.com';
const SAMPLE_TIMEOUT_MS = 60_000;
const PYTHON = process.env.PYTHON ?? 'python3';
type Lang = (typeof SAMPLE_LANGUAGES)[number]['key'];
type Env = Record<string, string>;
type RunJson = { id: string; status: string; outputs: { asset_id: string }[] };

const tools = testRegistry();
let s: TestServer;
let worker: RunWorker;
let receiver: Receiver;
let work: string;
let photo: Buffer;
let doc: Json;

/** What one sample needs before it runs, and what its output must show. */
class Fixtures {
  private readonly started: string[] = [];
  constructor(readonly key: string) {}

  async api<T>(method: string, url: string, body?: unknown, headers: Env = {}): Promise<T> {
    const res = await callApi(s.url, this.key, method, url, body, headers);
    const text = await res.text();
    assert.ok(res.ok, `${method} ${url}: ${res.status} ${text}`);
    return JSON.parse(text) as T;
  }

  uploadUrl(): Promise<Upload> {
    return this.api('POST', '/v1/files/upload-url', { file_name: 'photo.jpg', mime_type: 'image/jpeg', size_bytes: photo.length });
  }

  async readyFile(): Promise<string> {
    const upload = await this.uploadUrl();
    const file = await this.api<{ id: string; status: string }>('POST', `/v1/files/${upload.file_id}/complete`, {
      upload_id: upload.upload_id,
      parts: await uploadAll(upload, photo),
    });
    assert.equal(file.status, 'ready');
    return file.id;
  }

  async upscale(): Promise<RunJson> {
    return this.api('POST', '/v1/tools/image_upscale/runs', { inputs: { image: [await this.readyFile()] } });
  }

  async succeeded(): Promise<RunJson> {
    const { id } = await this.upscale();
    const final = async () => {
      const r = await this.api<RunJson>('GET', `/v1/runs/${id}`, undefined, { prefer: 'wait=10' });
      return ['succeeded', 'failed', 'canceled'].includes(r.status) ? r : null;
    };
    const run = await waitFor(`run ${id} to be final`, final, SAMPLE_TIMEOUT_MS);
    assert.equal(run.status, 'succeeded');
    return run;
  }

  /** A run that works until canceled (the test tool's hang mode): what a cancel acts on. */
  async hanging(): Promise<RunJson> {
    const run = await this.api<RunJson>('POST', '/v1/tools/test_copy/runs', { inputs: { image: [await this.readyFile()], mode: 'hang' } });
    this.started.push(run.id);
    return run;
  }

  async cancel(runId: string): Promise<void> {
    const res = await callApi(s.url, this.key, 'POST', `/v1/runs/${runId}/cancel`);
    assert.ok(res.status === 200 || res.status === 409, `cancel ${runId}: ${res.status} ${await res.text()}`);
  }

  async endpoint(): Promise<string> {
    return (await this.api<{ id: string }>('POST', '/v1/webhook-endpoints', { url: receiver.url('/toolrun') })).id;
  }

  /** An endpoint with one delivery (of a canceled run), failed when asked: given up after its retries. */
  async delivery(failed: boolean): Promise<Env> {
    const endpoint = await this.endpoint();
    await this.cancel((await this.hanging()).id);
    const page = await this.api<{ data: { id: string }[] }>('GET', `/v1/webhook-endpoints/${endpoint}/deliveries`);
    const id = page.data[0]?.id;
    assert.ok(id, 'the canceled run made no delivery');
    if (failed) await s.database.db.pool.query("UPDATE webhook_deliveries SET status = 'failed', attempts = 6, finished_at = now() WHERE id = $1::uuid", [id]);
    return { WEBHOOK_ENDPOINT_ID: endpoint, DELIVERY_ID: id };
  }

  /** Runs left working by a sample that failed would hold a worker slot: cancel them. */
  async cleanup(): Promise<void> {
    for (const id of this.started) await this.cancel(id);
  }
}

interface Case {
  /** Makes what the samples read: keys they list in `vars` go into their environment; the rest are for `expect`. */
  setup?: (f: Fixtures) => Promise<Env>;
  /** What the output must show, in every language. */
  expect: (env: Env) => (RegExp | string)[];
  /** A stream that stays open: once the sample's output says it is open, `trigger` makes an event. */
  stream?: { open: RegExp; trigger: (f: Fixtures, env: Env) => Promise<void> };
}

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/;
const yes = (field: string, value: boolean) => new RegExp(`"?${field}"?:?\\s*${value ? '(true|True)' : '(false|False)'}`);
const endpointVar = async (f: Fixtures): Promise<Env> => ({ WEBHOOK_ENDPOINT_ID: await f.endpoint() });

const CASES: Record<string, Case> = {
  healthz: { expect: () => [/\bok\b/] },
  readyz: { expect: () => [/\bok\b/] },
  getOpenApi: { expect: () => [/3\.1\.0/] },
  getMe: { expect: () => [/\b1000\b/, /\bpro\b/] },
  listTools: { expect: () => [/image_upscale/, /image_color_grade/] },
  createFileUpload: { expect: () => [UUID, /"object":"file_upload"|\bready$/m] },
  completeFileUpload: {
    setup: async (f) => {
      const u = await f.uploadUrl();
      return { FILE_ID: u.file_id, UPLOAD_ID: u.upload_id, PART_URL: u.parts[0]?.url ?? '' };
    },
    expect: () => [UUID, /\bready\b/],
  },
  estimateRun: { setup: async (f) => ({ FILE_ID: await f.readyFile() }), expect: () => [/"sparks":\d+|\b\d+ Sparks/] },
  startRun: { setup: async (f) => ({ FILE_ID: await f.readyFile() }), expect: () => [UUID, /\bqueued\b/] },
  listRuns: { setup: async (f) => ({ LISTED_RUN: (await f.succeeded()).id }), expect: (e) => [e.LISTED_RUN ?? '', /succeeded/] },
  getRun: { setup: async (f) => ({ RUN_ID: (await f.succeeded()).id }), expect: (e) => [e.RUN_ID ?? '', /\bsucceeded\b/] },
  cancelRun: { setup: async (f) => ({ RUN_ID: (await f.hanging()).id }), expect: (e) => [e.RUN_ID ?? '', /\bcanceled\b/] },
  getOutputUrl: {
    setup: async (f) => {
      const run = await f.succeeded();
      return { RUN_ID: run.id, ASSET_ID: run.outputs[0]?.asset_id ?? '' };
    },
    expect: (e) => [e.ASSET_ID ?? '', /"url":"http|\b[1-9]\d* bytes/],
  },
  streamRunEvents: { setup: async (f) => ({ RUN_ID: (await f.upscale()).id }), expect: () => [/\bdone\b/, /\bsucceeded\b/] },
  listWebhookEndpoints: { setup: async (f) => ({ LISTED_ENDPOINT: await f.endpoint() }), expect: (e) => [e.LISTED_ENDPOINT ?? ''] },
  createWebhookEndpoint: { expect: () => [UUID, /whsec_[A-Za-z0-9_-]{20,}/] },
  updateWebhookEndpoint: { setup: endpointVar, expect: (e) => [e.WEBHOOK_ENDPOINT_ID ?? '', yes('enabled', false)] },
  deleteWebhookEndpoint: { setup: endpointVar, expect: (e) => [e.WEBHOOK_ENDPOINT_ID ?? '', yes('deleted', true)] },
  testWebhookEndpoint: { setup: endpointVar, expect: () => [yes('delivered', true)] },
  rotateWebhookEndpointSecret: { setup: endpointVar, expect: (e) => [e.WEBHOOK_ENDPOINT_ID ?? '', /whsec_[A-Za-z0-9_-]{20,}/] },
  listWebhookDeliveries: {
    setup: async (f) => {
      const d = await f.delivery(false);
      return { WEBHOOK_ENDPOINT_ID: d.WEBHOOK_ENDPOINT_ID ?? '', LISTED_DELIVERY: d.DELIVERY_ID ?? '' };
    },
    expect: (e) => [e.LISTED_DELIVERY ?? '', /run\.canceled/],
  },
  redeliverWebhookDelivery: { setup: (f) => f.delivery(true), expect: (e) => [e.DELIVERY_ID ?? '', /\bpending\b/] },
  streamEvents: {
    setup: async (f) => ({ TRIGGER_RUN: (await f.hanging()).id }),
    stream: { open: /^retry: \d+$|^listening$/m, trigger: (f, e) => f.cancel(e.TRIGGER_RUN ?? '') },
    expect: (e) => [/run\.canceled/, e.TRIGGER_RUN ?? ''],
  },
};

/** A sample's process, in its own process group (detached) so that a pipeline stops with it. */
class SampleProcess {
  out = '';
  err = '';
  exit: { code: number | null; signal: NodeJS.Signals | null } | null = null;
  readonly exited: Promise<void>;
  private readonly child: ChildProcess;

  constructor(readonly label: string, command: string, args: string[], env: NodeJS.ProcessEnv) {
    this.child = spawn(command, args, { cwd: work, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    this.child.stdout?.on('data', (c: Buffer) => (this.out += c.toString()));
    this.child.stderr?.on('data', (c: Buffer) => (this.err += c.toString()));
    this.exited = new Promise((resolve) => {
      const ended = (exit: NonNullable<SampleProcess['exit']>) => {
        this.exit ??= exit;
        live.delete(this);
        resolve();
      };
      this.child.once('error', (e) => {
        this.err += `\nspawn error: ${e.message}`;
        ended({ code: null, signal: null });
      });
      this.child.once('close', (code, signal) => ended({ code, signal }));
    });
    live.add(this);
  }

  get report(): string {
    return `\n--- stdout of ${this.label}:\n${this.out}\n--- stderr:\n${this.err}`;
  }

  async kill(): Promise<void> {
    try {
      if (!this.exit && this.child.pid) process.kill(-this.child.pid, 'SIGKILL');
    } catch {
      // already gone
    }
    await this.exited;
  }

  /** Waits until `done` holds of the output; fails if the process exits first. */
  until(what: string, done: () => boolean): Promise<unknown> {
    return waitFor(`${this.label} ${what}`, () => {
      if (done()) return true;
      if (this.exit) throw new Error(`it exited (${JSON.stringify(this.exit)}) first${this.report}`);
      return false;
    }, SAMPLE_TIMEOUT_MS);
  }

  /** Waits for the process to exit; kills it and fails at the deadline. */
  async finish(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const late = await Promise.race([this.exited.then(() => false), new Promise<true>((r) => (timer = setTimeout(() => r(true), SAMPLE_TIMEOUT_MS)))]);
    clearTimeout(timer);
    if (late) await this.kill();
    assert.ok(!late, `${this.label} did not finish within ${SAMPLE_TIMEOUT_MS} ms${this.report}`);
  }
}
const live = new Set<SampleProcess>();

// ---------------------------------------------------------------------------------------------

before(async () => {
  s = await startTestServer({ tools, env: { TOOLRUN_ALLOW_PRIVATE_NETWORK: '1', TOOLRUN_WORKER_POLL_MS: '200' } });
  worker = await startTestWorker(s, tools, { concurrency: 4 });
  receiver = await Receiver.start();
  fs.mkdirSync(path.join(ROOT, '.test-data'), { recursive: true });
  // Inside the checkout, so the TypeScript samples resolve @toolrun/sdk as the repository maps it.
  work = fs.mkdtempSync(path.join(ROOT, '.test-data', 'docs-operations-'));
  photo = await sharp({ create: { width: 160, height: 120, channels: 3, background: { r: 200, g: 120, b: 60 } } })
    .jpeg({ quality: 85 })
    .toBuffer();
  fs.writeFileSync(path.join(work, 'photo.jpg'), photo);
  const res = await fetch(`${s.url}/v1/openapi.json`);
  assert.equal(res.status, 200);
  doc = (await res.json()) as Json;
});

after(async () => {
  for (const proc of [...live]) await proc.kill();
  await worker?.stop(1000);
  await closeReceivers();
  await s?.close();
  if (work) fs.rmSync(work, { recursive: true, force: true });
});

/** The samples of an operation as the served document holds them, by language. */
function servedSamples(op: Json): Record<Lang, string> {
  const list = Array.isArray(op['x-codeSamples']) ? op['x-codeSamples'] : [];
  const out: Partial<Record<Lang, string>> = {};
  for (const l of SAMPLE_LANGUAGES) {
    const found = list.find((x): x is Json => isObject(x) && x.lang === l.lang && x.label === l.label);
    if (typeof found?.source === 'string') out[l.key] = found.source;
  }
  return out as Record<Lang, string>;
}

/** Every example of the document that does not validate against its schema, or names a code its status does not list. */
function exampleProblems(d: Json): string[] {
  const contract = new Contract(d);
  const problems: string[] = [];
  const check = (where: string, schema: unknown, value: unknown) => {
    const errors = contract.schemaErrors(`example ${where}`, schema, value);
    if (errors) problems.push(`${where}: ${errors}`);
  };
  for (const o of operations(d)) {
    const where = `${o.method} ${o.path}`;
    for (const p of Array.isArray(o.op.parameters) ? o.op.parameters.filter(isObject) : []) {
      if (p.in !== 'path' && p.in !== 'query') continue;
      if (p.example === undefined) problems.push(`${where}: parameter ${String(p.name)} has no example`);
      else check(`${where} parameter ${String(p.name)}`, p.schema, p.example);
    }
    const media: [string, Json | undefined][] = [];
    if (isObject(o.op.requestBody) && isObject(o.op.requestBody.content)) media.push(['request body', o.op.requestBody.content['application/json'] as Json]);
    for (const [status, r] of Object.entries(isObject(o.op.responses) ? o.op.responses : {})) {
      for (const [type, m] of Object.entries(isObject(r) && isObject(r.content) ? r.content : {})) media.push([`${status} ${type}`, isObject(m) ? m : undefined]);
    }
    for (const [what, m] of media) {
      const examples = isObject(m?.examples) ? Object.entries(m.examples) : [];
      if (!examples.length) problems.push(`${where} ${what}: no examples`);
      for (const [name, ex] of examples) {
        if (!isObject(ex) || typeof ex.summary !== 'string') problems.push(`${where} ${what} ${name}: not an Example Object with a summary`);
        else check(`${where} ${what} ${name}`, m?.schema, ex.value);
      }
      const status = what.split(' ')[0] ?? '';
      if (!/^[45]/.test(status)) continue;
      const responses = isObject(o.op.responses) ? o.op.responses : {};
      const listed = listedCodes(isObject(responses[status]) ? responses[status].description : '');
      const shown = examples.map(([, ex]) => exampleCode(isObject(ex) ? ex.value : null));
      for (const code of shown) {
        if (!code || !listed.includes(code) || String(ERROR_STATUS[code as keyof typeof ERROR_STATUS]) !== status) {
          problems.push(`${where} ${what}: an example with code ${code} (listed: ${listed.join(', ')})`);
        }
      }
      for (const code of listed) if (!shown.includes(code)) problems.push(`${where} ${what}: no example of ${code}`);
    }
  }
  return problems;
}

describe('the reference: examples and samples in GET /v1/openapi.json', () => {
  test('every operation has code samples in curl, TypeScript and Python, a test case, and nothing else has', () => {
    const ops = operations(doc);
    assert.ok(ops.length >= 23, `only ${ops.length} operations`);
    for (const o of ops) {
      const id = String(o.op.operationId);
      const served = servedSamples(o.op);
      const mine = OPERATION_SAMPLES[id];
      assert.ok(mine, `${id}: no samples in src/http/samples`);
      for (const l of SAMPLE_LANGUAGES) assert.equal(served[l.key], mine[l.key], `${id}: the ${l.label} sample is not in x-codeSamples`);
      assert.ok(CASES[id], `${id}: no case in this test`);
    }
    const ids = ops.map((o) => String(o.op.operationId)).sort();
    assert.deepEqual(Object.keys(OPERATION_SAMPLES).sort(), ids, 'samples for operations the document lacks');
    assert.deepEqual(Object.keys(CASES).sort(), ids, 'cases for operations the document lacks');
  });

  test('every request body, response and parameter has examples that validate, errors one per code listed', () => {
    assert.deepEqual(exampleProblems(doc), []);
  });

  test('the example checks can fail', () => {
    const bad = structuredClone(doc);
    const paths = bad.paths as Record<string, Record<string, Json>>;
    const getRun = paths['/v1/runs/{run_id}']?.get;
    assert.ok(getRun && isObject(getRun.responses));
    const ok = (getRun.responses['200'] as { content: Record<string, Json> }).content['application/json'];
    assert.ok(ok);
    ok.examples = { wrong: { summary: 'a run without its fields', value: { object: 'run' } } };
    const notFound = (getRun.responses['404'] as { content: Record<string, Json> }).content['application/json'];
    assert.ok(notFound);
    notFound.examples = { other: { summary: 'a code 404 does not list here', value: { error: { code: 'file_not_found', message: 'x', request_id: null, errors: null, details: null } } } };
    delete (getRun.parameters as Json[]).find((p) => p.name === 'run_id')?.example;
    const problems = exampleProblems(bad).join('\n');
    assert.match(problems, /GET \/v1\/runs\/\{run_id\} 200 application\/json wrong: .*required/);
    assert.match(problems, /404 application\/json: an example with code file_not_found/);
    assert.match(problems, /404 application\/json: no example of run_not_found/);
    assert.match(problems, /parameter run_id has no example/);
  });
});

/** Type-checks TypeScript programs with the project's settings (strict); the diagnostics about them, named by program. */
function typecheck(programs: Record<string, string>): { diagnostics: string[]; all: string } {
  const dir = fs.mkdtempSync(path.join(ROOT, '.test-data', 'docs-operations-tsc-'));
  try {
    const files = Object.entries(programs).map(([name, code]) => {
      const file = path.join(dir, `${name}.ts`);
      fs.writeFileSync(file, `${code}\nexport {};\n`);
      return file;
    });
    const tsconfig = path.join(dir, 'tsconfig.json');
    fs.writeFileSync(tsconfig, JSON.stringify({ extends: path.join(ROOT, 'tsconfig.json'), compilerOptions: { noEmit: true }, include: [], files }));
    const tsc = spawnSync(process.execPath, [path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', tsconfig, '--pretty', 'false'], {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 120_000,
    });
    const all = `${tsc.stdout ?? ''}${tsc.stderr ?? ''}`;
    assert.ok(tsc.status === 0 || all.trim().length > 0, `tsc failed without a diagnostic (status ${tsc.status}, ${tsc.error?.message ?? ''})`);
    const rel = path.relative(ROOT, dir);
    const diagnostics = all.split('\n').filter((l) => l.startsWith(dir) || l.startsWith(rel));
    return { diagnostics: diagnostics.map((l) => l.replace(`${dir}${path.sep}`, '').replace(`${rel}${path.sep}`, '')), all };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

describe('the TypeScript samples', () => {
  test('type-check against the SDK (tsc, strict)', () => {
    const programs = Object.fromEntries(operations(doc).map((o) => [String(o.op.operationId), servedSamples(o.op).typescript]));
    const { diagnostics, all } = typecheck(programs);
    assert.deepEqual(diagnostics, [], `the TypeScript samples do not type-check:\n${all}`);
  });

  test('the type-check can fail: an env value that may be missing, a field the run lacks', () => {
    const bad = "import { Toolrun } from '@toolrun/sdk';\nconst run = await new Toolrun().runs.get(process.env.RUN_ID);\nconsole.log(run.nope);";
    const { diagnostics } = typecheck({ bad });
    assert.equal(diagnostics.length, 2, diagnostics.join('\n'));
    assert.match(diagnostics[0] ?? '', /^bad\.ts\(2,\d+\): error TS2345/);
    assert.match(diagnostics[1] ?? '', /^bad\.ts\(3,\d+\): error TS2339/);
  });
});

/** How each language's sample is written to a file and run. */
const RUNNERS: Record<Lang, { ext: string; wrap: (code: string) => string; run: (file: string) => [string, string[]] }> = {
  curl: { ext: 'sh', wrap: (c) => `set -euo pipefail\n${c}\n`, run: (f) => ['bash', [f]] },
  // An ES module whatever it imports: top-level await, and its own scope.
  typescript: { ext: 'ts', wrap: (c) => `${c}\nexport {};\n`, run: (f) => [process.execPath, ['--import', 'tsx', f]] },
  python: { ext: 'py', wrap: (c) => `${c}\n`, run: (f) => [PYTHON, [f]] },
};

async function runSample(id: string, lang: Lang): Promise<void> {
  const c = CASES[id];
  const samples = OPERATION_SAMPLES[id];
  const op = operations(doc).find((o) => o.op.operationId === id);
  assert.ok(c && samples && op, `${id}: unknown operation`);
  const team = await makeTeam(s.database.db, { scopes: ['read', 'run', 'webhooks'], sparks: 1000, rate: 300 });
  const f = new Fixtures(team.key);
  try {
    const facts = (await c.setup?.(f)) ?? {};
    const vars: Env = {};
    for (const v of samples.vars) {
      assert.ok(facts[v], `${id}: the case makes no ${v}, which the samples read`);
      vars[v] = facts[v];
    }
    const runner = RUNNERS[lang];
    const file = path.join(work, `${id}-${lang}.${runner.ext}`);
    fs.writeFileSync(file, runner.wrap(servedSamples(op.op)[lang].replaceAll(HOOKS_PLACEHOLDER, new URL(receiver.url()).origin)));
    const env = cliEnv({
      ...vars,
      TOOLRUN_API_KEY: team.key,
      TOOLRUN_BASE_URL: s.url,
      PYTHONPATH: path.join(ROOT, 'clients', 'python'),
      PYTHONDONTWRITEBYTECODE: '1',
      PYTHONUNBUFFERED: '1',
      NO_PROXY: '127.0.0.1,localhost',
      no_proxy: '127.0.0.1,localhost',
    });
    const [cmd, args] = runner.run(file);
    const proc = new SampleProcess(`the ${lang} sample of ${id}`, cmd, args, env);
    const wanted = c.expect(facts);
    const shows = (w: RegExp | string) => (typeof w === 'string' ? w !== '' && proc.out.includes(w) : w.test(proc.out));
    if (c.stream) {
      const { open, trigger } = c.stream;
      await proc.until('to open its stream', () => open.test(proc.out));
      await trigger(f, facts);
      // curl follows the stream until stopped, like a terminal until Ctrl-C: stopped once it printed the event.
      if (lang === 'curl') {
        await proc.until('to print the event', () => wanted.every(shows));
        return proc.kill();
      }
    }
    await proc.finish();
    assert.deepEqual(proc.exit, { code: 0, signal: null }, `${proc.label} failed${proc.report}`);
    for (const w of wanted) assert.ok(shows(w), `${proc.label} did not print ${String(w)}${proc.report}`);
  } finally {
    await f.cleanup();
  }
}

describe('every code sample runs against a real server', () => {
  for (const id of Object.keys(OPERATION_SAMPLES)) {
    for (const l of SAMPLE_LANGUAGES) test(`${id}: ${l.label}`, () => runSample(id, l.key));
  }
});
