// brand_kit_extract's runner called directly, as the worker calls it, on a local test site: the
// kit (colours, fonts, logos rendered as real images) and its schema, a kit from images only,
// the refusal of private addresses, and the bounds on pages, stylesheets, time and cancel. Through
// the API and a real worker: tools-brand-kit-api.test.ts.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import pino from 'pino';
import sharp from 'sharp';
import { resolveMediaBinaries } from '../src/media/binaries.js';
import { createBrandKitRunner } from '../src/tools/brand-kit/run.js';
import type { BrandKit } from '../src/tools/brand-kit/schema.js';
import { brandKitExtract } from '../src/tools/catalog/brand-kit-extract.js';
import { ToolError, type InputFile, type RunContext, type ToolOutput } from '../src/tools/manifest.js';
import { assertSiteKit, assertValidKit, pixel, twoColourPng } from './helpers/brand-kit.js';
import { BrandSite } from './helpers/brand-site.js';
import { waitFor } from './helpers/worker.js';

let site: BrandSite;
const workDirs: string[] = [];

before(async () => {
  site = await new BrandSite().start();
});
after(async () => {
  await site.close();
  for (const d of workDirs) fs.rmSync(d, { recursive: true, force: true });
});

interface Direct {
  outputs: ToolOutput[];
  kit: BrandKit;
  progress: number[];
  ms: number;
}

function context(values: Record<string, unknown>, opts: { allowPrivate?: boolean; files?: InputFile[]; signal?: AbortSignal; progress?: number[] } = {}): RunContext {
  const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'toolrun-bk-test-'));
  workDirs.push(workDir);
  return {
    runId: '00000000-0000-4000-8000-000000000001',
    teamId: '00000000-0000-4000-8000-000000000002',
    values,
    files: opts.files ? { files: opts.files } : {},
    workDir,
    signal: opts.signal ?? new AbortController().signal,
    progress: (f) => opts.progress?.push(f),
    media: resolveMediaBinaries(),
    logger: pino({ level: 'silent' }),
    outbound: { allowPrivate: opts.allowPrivate ?? true },
    limits: { ffmpegThreads: 2, maxOutputBytes: 4 * 1024 ** 3 },
  };
}

/** The runner called directly, as the worker calls it. */
async function runDirect(values: Record<string, unknown>, opts: Parameters<typeof context>[1] & { limits?: Parameters<typeof createBrandKitRunner>[0] } = {}): Promise<Direct> {
  const progress: number[] = [];
  const started = Date.now();
  const outputs = await createBrandKitRunner(opts.limits)(context(values, { ...opts, progress }));
  const ms = Date.now() - started;
  const json = outputs[0];
  assert.ok(json);
  assert.equal(json.fileName, 'brand-kit.json');
  assert.equal(json.mimeType, 'application/json');
  // The file and the data handed to onSucceeded are the same kit.
  assert.deepEqual(JSON.parse(fs.readFileSync(json.path, 'utf8')), json.data);
  assertValidKit(json.data);
  return { outputs, kit: json.data, progress, ms };
}

async function rejectsWith(p: Promise<unknown>, pattern: RegExp): Promise<void> {
  await assert.rejects(p, (err: unknown) => {
    assert.ok(err instanceof ToolError, `expected a ToolError, got ${String(err)}`);
    assert.match(err.message, pattern);
    return true;
  });
}

describe('brand_kit_extract: the runner on a local test site', () => {
  test('name, description, colours with roles and weights, fonts with roles and sources, logos fetched as real images', async () => {
    site.requests.length = 0;
    const { outputs, kit, progress } = await runDirect({ url: `${site.url}/` });
    assertSiteKit(kit, site.url);
    assert.equal(kit.source.url, `${site.url}/`);
    assert.equal(kit.source.final_url, `${site.url}/`);
    // Only the page, its stylesheets and the logo candidates were fetched: not the plain photo,
    // nor the font files, nor the Google Fonts stylesheet (its families are in its URL).
    assert.deepEqual(
      [...site.requests].sort(),
      ['/', '/apple-touch-icon.png', '/css/extra.css', '/css/main.css', '/favicon.ico', '/img/logo.png', '/og.jpg'],
    );
    assert.deepEqual(
      outputs.map((o) => [o.fileName, o.mimeType]),
      [
        ['brand-kit.json', 'application/json'],
        ['logo-1.png', 'image/png'],
        ['logo-2.png', 'image/png'],
        ['logo-3.png', 'image/png'],
        ['logo-4.jpg', 'image/jpeg'],
      ],
    );
    const formats = await Promise.all(outputs.slice(1).map(async (o) => (await sharp(o.path).metadata()).format));
    assert.deepEqual(formats, ['png', 'png', 'png', 'jpeg']);
    // logo-1 is the header's SVG rendered: its rectangle and circle in their colours.
    assert.equal(await pixel(outputs[1]!.path, 400, 85), '#1a73e8');
    assert.equal(await pixel(outputs[1]!.path, 85, 85), '#ff5722');
    assert.equal(await pixel(outputs[3]!.path, 90, 90), '#ff5722');
    assert.ok(progress.length >= 4 && progress.at(-1)! >= 0.9, `progress reported: ${progress.join(', ')}`);
    assert.deepEqual(progress, [...progress].sort((a, b) => a - b), 'progress only moves forward');
  });

  test('images only: the dominant colours of a two-colour PNG, heaviest first', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'toolrun-bk-img-'));
    workDirs.push(dir);
    const file = path.join(dir, 'two.png');
    fs.writeFileSync(file, await twoColourPng(200, 100, '#d32f2f', '#1976d2'));
    const input: InputFile = { fileId: '00000000-0000-4000-8000-0000000000aa', path: file, fileName: 'two.png', mime: 'image/png', info: { kind: 'image', width: 200, height: 100, durationSeconds: null } };
    const { outputs, kit } = await runDirect({ save: false }, { files: [input] });
    assert.equal(outputs.length, 1, 'no page, so no logos');
    assert.equal(kit.images.length, 1);
    const [first, second, ...rest] = kit.images[0]!.palette;
    assert.deepEqual(rest, []);
    assert.equal(first?.hex, '#d32f2f');
    assert.equal(second?.hex, '#1976d2');
    assert.ok(Math.abs(first!.weight - 0.75) < 0.03 && Math.abs(second!.weight - 0.25) < 0.03, JSON.stringify(kit.images[0]!.palette));
    assert.deepEqual(kit.roles, { primary: '#d32f2f', secondary: '#1976d2', accent: null, background: null, text: null });
    assert.deepEqual(kit.colors.map((c) => [c.hex, c.sources]), [['#d32f2f', ['image']], ['#1976d2', ['image']]]);
    assert.ok(kit.colors[0]!.weight > kit.colors[1]!.weight);
    assert.equal(kit.name, null);
    assert.deepEqual(kit.source, { url: null, final_url: null, stylesheets: [], files: [input.fileId] });
  });

  test('with private networks not allowed, loopback URLs are refused as not public', async () => {
    site.requests.length = 0;
    await rejectsWith(createBrandKitRunner()(context({ url: `${site.url}/` }, { allowPrivate: false })), /url is not public/);
    await rejectsWith(createBrandKitRunner()(context({ url: `http://localhost:${site.port}/` }, { allowPrivate: false })), /url is not public/);
    assert.deepEqual(site.requests, [], 'nothing was sent');
  });

  test('bounds on the page: over 2 MB, a redirect loop, not HTML, an error status', async () => {
    const run = (p: string) => createBrandKitRunner()(context({ url: `${site.url}${p}` }));
    await rejectsWith(run('/big'), /larger than the 2 MB limit/);
    await rejectsWith(run('/loop'), /redirects more than 3 times/);
    await rejectsWith(run('/data.json'), /not point at a web page: it answered with application\/json/);
    await rejectsWith(run('/missing'), /answered HTTP 404/);
  });

  test('a page nested 300,000 elements deep is read up to the depth cap, quickly', async () => {
    const { kit, outputs, ms } = await runDirect({ url: `${site.url}/deep` });
    assert.ok(ms < 10_000, `took ${ms} ms`);
    assert.equal(kit.name, 'Deep Co');
    // The name comes from the <title> alone (the cut page shows no wordmark), and the kit says so.
    assert.deepEqual(kit.warnings, ['the name "Deep Co" rests on one signal (the <title>)', 'the page nests elements more than 256 deep: it was read up to that point']);
    assert.deepEqual(outputs.map((o) => o.fileName), ['brand-kit.json', 'logo-1.png']);
    assert.equal(kit.logos[0]?.url, `${site.url}/img/logo.png`);
  });

  test('a stylesheet that never answers is cut off by the per-request timeout; the kit still comes out', async () => {
    const { kit, ms } = await runDirect({ url: `${site.url}/stuck` }, { limits: { requestTimeoutMs: 400 } });
    assert.ok(ms < 5000, `took ${ms} ms`);
    assert.equal(kit.name, 'Stuck');
    assert.equal(kit.roles.primary, '#1a73e8', 'the other stylesheet was read');
    assert.ok(kit.warnings.some((w) => w.startsWith(`stylesheet ${site.url}/never.css: no complete answer within 0.4 s`)), kit.warnings.join('\n'));
  });

  test('the fetch phase as a whole is bounded, whatever the per-request timeout', async () => {
    const { kit, outputs, ms } = await runDirect({ url: `${site.url}/stuck` }, { limits: { requestTimeoutMs: 60_000, phaseMs: 700 } });
    assert.ok(ms < 5000, `took ${ms} ms`);
    assert.ok(kit.warnings.some((w) => w.includes('never.css') && w.includes('budget for fetching was spent')), kit.warnings.join('\n'));
    // The inline SVG needs no fetch: it is still a logo.
    assert.deepEqual(outputs.map((o) => o.fileName), ['brand-kit.json', 'logo-1.png']);
    assert.equal(kit.logos[0]?.kind, 'inline_svg');
  });

  test('a cancel stops a fetch in flight at once', async () => {
    site.requests.length = 0;
    const abort = new AbortController();
    const started = Date.now();
    const p = createBrandKitRunner()(context({ url: `${site.url}/stuck` }, { signal: abort.signal }));
    await waitFor('the hanging stylesheet to be requested', async () => (site.requests.includes('/never.css') ? true : undefined));
    abort.abort('canceled');
    await assert.rejects(p);
    assert.ok(Date.now() - started < 5000);
  });

  test('validate(): neither url nor files is a 422 entry on the url slot', () => {
    assert.deepEqual(brandKitExtract.validate?.({ values: { save: false }, media: {}, durationHint: null }), [
      { loc: ['body', 'inputs', 'url'], message: 'a url or files (at least one image) is needed', code: 'missing_source' },
    ]);
    assert.deepEqual(brandKitExtract.validate?.({ values: { save: false }, media: { files: [] }, durationHint: null }).length, 1);
    assert.deepEqual(brandKitExtract.validate?.({ values: { url: 'https://example.com' }, media: {}, durationHint: null }), []);
  });
});
