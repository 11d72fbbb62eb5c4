// The documentation cannot rot: every fenced code sample in docs/*.md runs here, in page order,
// against a real server started by the quick start's own command (`npm start`, with PORT=0, a
// fresh data directory and a fresh database), over real HTTP. Shell samples share one session
// (what one sets, the next sees), TypeScript samples are type-checked and run with tsx, JavaScript
// samples run with plain node, and configuration samples are loaded by the service's own parser.
// The convention is described in docs/README.md; the parser is test/helpers/doc-samples.ts and the
// session test/helpers/doc-session.ts. The pages stay in this one file: later pages use the server
// and the shell state the quick start leaves.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ERROR_STATUS } from '../src/core/errors.js';
import { createToolRegistry } from '../src/tools/registry.js';
import { DOCS, isRunnable, loadDocSamples, parseDirectives, parseSamples, sdkMissingReason, typecheckSamples, type Sample } from './helpers/doc-samples.js';
import { DocSession, loadDotenv } from './helpers/doc-session.js';
import { ROOT } from './helpers/process.js';

const { pages, samplesByPage, allSamples, tsSamples } = loadDocSamples();
const sdkMissing = tsSamples.length > 0 ? await sdkMissingReason() : null;
const session = new DocSession();

before(() => session.open());
after(() => session.close());

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

describe('TypeScript samples', () => {
  const skip = sdkMissing ?? (tsSamples.length === 0 ? 'no TypeScript samples' : false);
  test('type-check against the SDK (tsc, strict)', { skip }, () => {
    const { diagnostics, all } = typecheckSamples(tsSamples);
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
    const { diagnostics } = typecheckSamples([bad]);
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
      test(name, { skip: skip ?? false }, () => session.runSample(sample));
    }
    if (samples.some((s) => s.directives.background && !s.directives.skip)) {
      test(`${page}: background samples printed what they should, and stop`, async () => {
        await session.stopBackground();
      });
    }
    if (page === 'quickstart.md') {
      test('the quick start leaves the session a key, the server address and a file', () => {
        assert.match(session.env.TOOLRUN_API_KEY ?? '', /^svc_test_[A-Za-z0-9]{40}$/);
        assert.equal(session.env.TOOLRUN_BASE_URL, session.baseUrl);
        assert.match(session.env.FILE_ID ?? '', /^[0-9a-f-]{36}$/);
      });
    }
  });
}

test('the server stops cleanly', async () => {
  await session.stopBackground();
  assert.ok(session.server, 'the server sample ran');
  const proc = session.server;
  await proc.stop();
  assert.ok(proc.exit, 'the server exited');
  // Nothing the samples did made the service log an error (a 500, a failed run, a crash).
  const errors = proc.stdout.split('\n').filter((l) => l.startsWith('{') && ((JSON.parse(l) as { level?: number }).level ?? 0) >= 50);
  assert.deepEqual(errors, [], 'the server logged errors');
});
