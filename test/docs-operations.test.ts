// The API reference (GET /v1/openapi.json, shown at /docs) as documentation that cannot rot: every
// operation has request and response examples that validate against its own schemas, and code
// samples in curl, TypeScript (@toolrun/sdk) and Python (clients/python) as x-codeSamples. Each
// sample, as the document serves it, runs here against a real server over HTTP: curl with bash,
// TypeScript with tsx after a strict type-check, Python with python3. Every sample gets a fresh
// team's key in TOOLRUN_API_KEY, the server in TOOLRUN_BASE_URL, and the ids it reads (FILE_ID,
// RUN_ID, ...) made first through the API, as an earlier call would have; it must exit 0 and print
// what the operation answered. https://hooks.example.com stands for a receiver the test runs.
// The cases are in test/helpers/operation-cases.ts, the runner in test/helpers/operation-samples.ts.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import sharp from 'sharp';
import { OPERATION_SAMPLES, SAMPLE_LANGUAGES } from '../src/http/samples/index.js';
import type { RunWorker } from '../src/runs/worker.js';
import { isObject, operations, type Json } from './helpers/openapi-contract.js';
import { CASES, type OperationContext } from './helpers/operation-cases.js';
import { exampleProblems, runSample, servedSamples } from './helpers/operation-samples.js';
import { ROOT } from './helpers/process.js';
import { closeReceivers, Receiver } from './helpers/receiver.js';
import { SampleProcess, typecheck } from './helpers/sample-runner.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { testRegistry } from './helpers/test-tools.js';
import { startTestWorker } from './helpers/worker.js';

const TYPECHECK = { prefix: 'docs-operations-tsc-', timeoutMs: 120_000 };

const tools = testRegistry();
let s: TestServer | undefined;
let worker: RunWorker | undefined;
let work = '';
let ctx: OperationContext;

before(async () => {
  s = await startTestServer({ tools, env: { TOOLRUN_ALLOW_PRIVATE_NETWORK: '1', TOOLRUN_WORKER_POLL_MS: '200' } });
  worker = await startTestWorker(s, tools, { concurrency: 4 });
  const receiver = await Receiver.start();
  fs.mkdirSync(path.join(ROOT, '.test-data'), { recursive: true });
  // Inside the checkout, so the TypeScript samples resolve @toolrun/sdk as the repository maps it.
  work = fs.mkdtempSync(path.join(ROOT, '.test-data', 'docs-operations-'));
  const photo = await sharp({ create: { width: 160, height: 120, channels: 3, background: { r: 200, g: 120, b: 60 } } })
    .jpeg({ quality: 85 })
    .toBuffer();
  fs.writeFileSync(path.join(work, 'photo.jpg'), photo);
  const res = await fetch(`${s.url}/v1/openapi.json`);
  assert.equal(res.status, 200);
  ctx = { server: s, receiver, photo, work, doc: (await res.json()) as Json };
});

after(async () => {
  for (const proc of SampleProcess.running()) await proc.kill();
  await worker?.stop(1000);
  await closeReceivers();
  await s?.close();
  if (work) fs.rmSync(work, { recursive: true, force: true });
});

describe('the reference: examples and samples in GET /v1/openapi.json', () => {
  test('every operation has code samples in curl, TypeScript and Python, a test case, and nothing else has', () => {
    const ops = operations(ctx.doc);
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
    assert.deepEqual(exampleProblems(ctx.doc), []);
  });

  test('the example checks can fail', () => {
    const bad = structuredClone(ctx.doc);
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

describe('the TypeScript samples', () => {
  test('type-check against the SDK (tsc, strict)', () => {
    const programs = Object.fromEntries(operations(ctx.doc).map((o) => [String(o.op.operationId), servedSamples(o.op).typescript]));
    const { diagnostics, all } = typecheck(programs, TYPECHECK);
    assert.deepEqual(diagnostics, [], `the TypeScript samples do not type-check:\n${all}`);
  });

  test('the type-check can fail: an env value that may be missing, a field the run lacks', () => {
    const bad = "import { Toolrun } from '@toolrun/sdk';\nconst run = await new Toolrun().runs.get(process.env.RUN_ID);\nconsole.log(run.nope);";
    const { diagnostics } = typecheck({ bad }, TYPECHECK);
    assert.equal(diagnostics.length, 2, diagnostics.join('\n'));
    assert.match(diagnostics[0] ?? '', /^bad\.ts\(2,\d+\): error TS2345/);
    assert.match(diagnostics[1] ?? '', /^bad\.ts\(3,\d+\): error TS2339/);
  });
});

describe('every code sample runs against a real server', () => {
  for (const id of Object.keys(OPERATION_SAMPLES)) {
    for (const l of SAMPLE_LANGUAGES) test(`${id}: ${l.label}`, () => runSample(ctx, id, l.key));
  }
});
