// The API reference's code samples (src/http/samples, served as x-codeSamples) as
// test/docs-operations.test.ts checks and runs them: the samples and examples the served document
// holds, and one sample run against the test's server with its case's fixtures.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { ERROR_STATUS } from '../../src/core/errors.js';
import { exampleCode, listedCodes, OPERATION_SAMPLES, SAMPLE_LANGUAGES } from '../../src/http/samples/index.js';
import { makeTeam } from './fixtures.js';
import { CASES, Fixtures, type Env, type OperationContext } from './operation-cases.js';
import { Contract, isObject, operations, type Json } from './openapi-contract.js';
import { cliEnv, ROOT } from './process.js';
import { SampleProcess } from './sample-runner.js';

const HOOKS_PLACEHOLDER = 'https://hooks.example.com';
const PYTHON = process.env.PYTHON ?? 'python3';
export type Lang = (typeof SAMPLE_LANGUAGES)[number]['key'];

/** The samples of an operation as the served document holds them, by language. */
export function servedSamples(op: Json): Record<Lang, string> {
  const list = Array.isArray(op['x-codeSamples']) ? op['x-codeSamples'] : [];
  const out: Partial<Record<Lang, string>> = {};
  for (const l of SAMPLE_LANGUAGES) {
    const found = list.find((x): x is Json => isObject(x) && x.lang === l.lang && x.label === l.label);
    if (typeof found?.source === 'string') out[l.key] = found.source;
  }
  return out as Record<Lang, string>;
}

/** Every example of the document that does not validate against its schema, or names a code its status does not list. */
export function exampleProblems(d: Json): string[] {
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

/** How each language's sample is written to a file and run. */
const RUNNERS: Record<Lang, { ext: string; wrap: (code: string) => string; run: (file: string) => [string, string[]] }> = {
  curl: { ext: 'sh', wrap: (c) => `set -euo pipefail\n${c}\n`, run: (f) => ['bash', [f]] },
  // An ES module whatever it imports: top-level await, and its own scope.
  typescript: { ext: 'ts', wrap: (c) => `${c}\nexport {};\n`, run: (f) => [process.execPath, ['--import', 'tsx', f]] },
  python: { ext: 'py', wrap: (c) => `${c}\n`, run: (f) => [PYTHON, [f]] },
};

export async function runSample(ctx: OperationContext, id: string, lang: Lang): Promise<void> {
  const c = CASES[id];
  const samples = OPERATION_SAMPLES[id];
  const op = operations(ctx.doc).find((o) => o.op.operationId === id);
  assert.ok(c && samples && op, `${id}: unknown operation`);
  const team = await makeTeam(ctx.server.database.db, { scopes: ['read', 'run', 'webhooks'], sparks: 1000, rate: 300 });
  const f = new Fixtures(ctx, team.key);
  try {
    const facts = (await c.setup?.(f)) ?? {};
    const vars: Env = {};
    for (const v of samples.vars) {
      assert.ok(facts[v], `${id}: the case makes no ${v}, which the samples read`);
      vars[v] = facts[v];
    }
    const runner = RUNNERS[lang];
    const file = path.join(ctx.work, `${id}-${lang}.${runner.ext}`);
    fs.writeFileSync(file, runner.wrap(servedSamples(op.op)[lang].replaceAll(HOOKS_PLACEHOLDER, new URL(ctx.receiver.url()).origin)));
    const env = cliEnv({
      ...vars,
      TOOLRUN_API_KEY: team.key,
      TOOLRUN_BASE_URL: ctx.server.url,
      PYTHONPATH: path.join(ROOT, 'clients', 'python'),
      PYTHONDONTWRITEBYTECODE: '1',
      PYTHONUNBUFFERED: '1',
      NO_PROXY: '127.0.0.1,localhost',
      no_proxy: '127.0.0.1,localhost',
    });
    const [cmd, args] = runner.run(file);
    const proc = new SampleProcess(`the ${lang} sample of ${id}`, cmd, args, { cwd: ctx.work, env });
    const wanted = c.expect(facts);
    const shows = (w: RegExp | string) => (typeof w === 'string' ? w !== '' && proc.stdout.includes(w) : w.test(proc.stdout));
    if (c.stream) {
      const { open, trigger } = c.stream;
      await proc.until('to open its stream', () => open.test(proc.stdout));
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
