import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Ajv2020 } from 'ajv/dist/2020.js';
import pino from 'pino';
import sharp from 'sharp';
import { resolveMediaBinaries } from '../src/media/binaries.js';
import type { RunWorker } from '../src/runs/worker.js';
import { ledgerDrift } from '../src/sparks/ledger.js';
import { createBrandKitRunner } from '../src/tools/brand-kit/run.js';
import { BrandKitSchema, type BrandKit } from '../src/tools/brand-kit/schema.js';
import { brandKitExtract } from '../src/tools/catalog/brand-kit-extract.js';
import { ToolError, type InputFile, type RunContext, type ToolOutput } from '../src/tools/manifest.js';
import { createToolRegistry } from '../src/tools/registry.js';
import { BrandSite, GOOGLE_FONTS } from './helpers/brand-site.js';
import { bearer, makeTeam, type TeamFixture } from './helpers/fixtures.js';
import { cleanupDataDir, cliEnv, killLiveChildren, makeDataDir, runCli } from './helpers/process.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { startTestWorker, waitFor } from './helpers/worker.js';

const validateKit = new Ajv2020({ strict: true, allErrors: true }).compile(BrandKitSchema);

function assertValidKit(data: unknown): asserts data is BrandKit {
  assert.ok(validateKit(data), `brand-kit.json does not match its schema: ${JSON.stringify(validateKit.errors)}`);
}

let site: BrandSite;
const workDirs: string[] = [];

before(async () => {
  site = await new BrandSite().start();
});
after(async () => {
  killLiveChildren();
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

/** A PNG whose left three quarters are one colour and the right quarter another. */
async function twoColourPng(width: number, height: number, left: string, right: string): Promise<Buffer> {
  const rightWidth = width / 4;
  const patch = await sharp({ create: { width: rightWidth, height, channels: 3, background: right } }).png().toBuffer();
  return sharp({ create: { width, height, channels: 3, background: left } })
    .composite([{ input: patch, left: width - rightWidth, top: 0 }])
    .png()
    .toBuffer();
}

async function pixel(file: string | Buffer, x: number, y: number): Promise<string> {
  const { data, info } = await sharp(file).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  const i = (y * info.width + x) * info.channels;
  return `#${[data[i]!, data[i + 1]!, data[i + 2]!].map((v) => v.toString(16).padStart(2, '0')).join('')}`;
}

const EXPECTED_ROLES = { primary: '#1a73e8', secondary: '#ff5722', accent: '#00bd7e', background: '#fffdf7', text: '#2f4f4f' };

/** What the test site must give, wherever the kit was made. */
function assertSiteKit(kit: BrandKit, siteUrl: string): void {
  assert.equal(kit.name, 'Acme Rockets');
  assert.equal(kit.description, 'Acme Rockets builds reusable rockets for small satellites.');
  assert.deepEqual(kit.roles, EXPECTED_ROLES);
  assert.deepEqual(kit.source.stylesheets, [`${siteUrl}/css/main.css`, `${siteUrl}/css/extra.css`]);
  const hexes = kit.colors.map((c) => c.hex);
  // Every colour of the default look, none from the dark-scheme or print rules, none from a 20%-alpha overlay.
  assert.deepEqual([...hexes].sort(), ['#00bd7e', '#1557b0', '#1a73e8', '#2f4f4f', '#e0e0e0', '#ff5722', '#fffdf7', '#ffffff']);
  for (const role of Object.keys(EXPECTED_ROLES) as (keyof typeof EXPECTED_ROLES)[]) {
    const holder = kit.colors.find((c) => c.roles.includes(role));
    assert.equal(holder?.hex, EXPECTED_ROLES[role], `role ${role}`);
  }
  assert.equal(kit.colors[0]!.hex, '#1a73e8', 'the primary colour is the most used');
  assert.deepEqual(kit.colors[0]!.variables, ['--brand-primary']);
  assert.deepEqual(kit.colors[0]!.sources, ['css', 'css_variable', 'theme_color']);
  assert.deepEqual(kit.colors.find((c) => c.hex === '#00bd7e')?.variables, ['--brand-accent']);
  const weights = kit.colors.map((c) => c.weight);
  assert.deepEqual(weights, [...weights].sort((a, b) => b - a), 'heaviest first');
  assert.ok(Math.abs(weights.reduce((a, b) => a + b, 0) - 1) < 0.001);
  assert.ok(kit.colors.find((c) => c.hex === '#e0e0e0')!.weight < kit.colors.find((c) => c.hex === '#2f4f4f')!.weight);

  assert.deepEqual(kit.fonts, [
    { family: 'Playfair Display', roles: ['heading'], fallbacks: ['Georgia', 'serif'], sources: [{ kind: 'google_fonts', url: GOOGLE_FONTS, format: null }] },
    {
      family: 'Acme Sans',
      roles: ['body'],
      fallbacks: ['Inter', 'system-ui', 'sans-serif'],
      sources: [
        { kind: 'font_face', url: `${siteUrl}/fonts/acme-sans.woff2`, format: 'woff2' },
        { kind: 'font_face', url: `${siteUrl}/fonts/acme-sans.woff`, format: 'woff' },
      ],
    },
    { family: 'Inter', roles: [], fallbacks: [], sources: [{ kind: 'google_fonts', url: GOOGLE_FONTS, format: null }] },
  ]);
  assert.deepEqual(kit.font_services, [{ provider: 'google_fonts', url: GOOGLE_FONTS, families: ['Playfair Display', 'Inter'] }]);

  assert.deepEqual(
    kit.logos.map((l) => [l.kind, l.url, l.file, l.mime_type, l.width, l.height, l.source_format]),
    [
      ['inline_svg', null, 'logo-1.png', 'image/png', 512, 171, 'svg'],
      ['img', `${siteUrl}/img/logo.png`, 'logo-2.png', 'image/png', 200, 60, 'png'],
      ['apple_touch_icon', `${siteUrl}/apple-touch-icon.png`, 'logo-3.png', 'image/png', 180, 180, 'png'],
      ['icon', `${siteUrl}/favicon.ico`, null, null, null, null, null],
      ['og_image', `${siteUrl}/og.jpg`, 'logo-4.jpg', 'image/jpeg', 300, 157, 'jpeg'],
    ],
  );
  assert.match(kit.logos[0]!.svg ?? '', /^<svg xmlns="http:\/\/www.w3.org\/2000\/svg" width="120"/);
  assert.equal(kit.logos[0]!.alt, 'Acme Rockets');
  assert.equal(kit.logos[1]!.alt, 'Acme Rockets');
  assert.deepEqual(kit.warnings, [`logo ${siteUrl}/favicon.ico: not a decodable image`]);
  assert.deepEqual(kit.images, []);
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
    assert.deepEqual(kit.warnings, ['the page nests elements more than 256 deep: it was read up to that point']);
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

interface RunBody {
  id: string;
  status: string;
  cost_sparks: number;
  error: string | null;
  outputs: { asset_id: string; file_name: string; mime_type: string; width: number | null; height: number | null; size_bytes: number }[];
}

/** One API server with its own database and an in-process worker. */
class Api {
  s!: TestServer;
  worker!: RunWorker;
  team!: TeamFixture;

  async start(env: Record<string, string>): Promise<this> {
    const tools = createToolRegistry();
    this.s = await startTestServer({ tools, env: { TOOLRUN_WORKER_POLL_MS: '100', ...env } });
    this.worker = await startTestWorker(this.s, tools, { concurrency: 1 });
    this.team = await makeTeam(this.s.database.db, { sparks: 100, plan: 'pro' });
    return this;
  }

  async stop(): Promise<void> {
    await this.worker?.stop(1000);
    await this.s?.close();
  }

  call(method: string, url: string, body?: unknown): Promise<Response> {
    return fetch(`${this.s.url}${url}`, {
      method,
      headers: { ...bearer(this.team.key), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  }

  async sparks(): Promise<number> {
    return ((await (await this.call('GET', '/v1/me')).json()) as { sparks_available: number }).sparks_available;
  }

  async runToEnd(inputs: Record<string, unknown>): Promise<RunBody> {
    const start = await this.call('POST', '/v1/tools/brand_kit_extract/runs', { inputs });
    assert.equal(start.status, 202, await start.clone().text());
    const run = (await start.json()) as RunBody;
    return waitFor(`run ${run.id} to finish`, async () => {
      const r = (await (await this.call('GET', `/v1/runs/${run.id}`)).json()) as RunBody;
      return ['succeeded', 'failed', 'canceled'].includes(r.status) ? r : undefined;
    });
  }

  async download(runId: string, assetId: string): Promise<Buffer> {
    const url = await waitFor('output check', async () => {
      const r = await this.call('GET', `/v1/runs/${runId}/outputs/${assetId}/url`);
      if (r.status === 409) return undefined;
      assert.equal(r.status, 200);
      return ((await r.json()) as { url: string }).url;
    });
    const res = await fetch(url);
    assert.equal(res.status, 200);
    return Buffer.from(await res.arrayBuffer());
  }

  async upload(name: string, bytes: Buffer): Promise<string> {
    const res = await this.call('POST', '/v1/files/upload-url', { file_name: name, mime_type: 'image/png', size_bytes: bytes.length });
    const up = (await res.json()) as { file_id: string; upload_id: string; parts: { part_number: number; url: string }[]; part_size_bytes: number };
    const parts = [];
    for (const p of up.parts) {
      const chunk = bytes.subarray((p.part_number - 1) * up.part_size_bytes, p.part_number * up.part_size_bytes);
      const r = await fetch(p.url, { method: 'PUT', body: Uint8Array.from(chunk) });
      parts.push({ part_number: p.part_number, etag: r.headers.get('etag') ?? '' });
    }
    const done = await this.call('POST', `/v1/files/${up.file_id}/complete`, { upload_id: up.upload_id, parts });
    assert.equal(((await done.json()) as { status: string }).status, 'ready');
    return up.file_id;
  }
}

describe('brand_kit_extract through the API and a real worker', () => {
  const open = new Api();
  const closed = new Api();
  let dataDir: string;

  before(async () => {
    dataDir = makeDataDir('brand-kits');
    await Promise.all([open.start({ TOOLRUN_ALLOW_PRIVATE_NETWORK: '1' }), closed.start({})]);
  });
  after(async () => {
    await Promise.all([open.stop(), closed.stop()]);
    await cleanupDataDir(dataDir);
  });

  test('neither url nor files: 422 on body.inputs.url, nothing held', async () => {
    const before = await open.sparks();
    for (const inputs of [{}, { save: true, files: [] }]) {
      const res = await open.call('POST', '/v1/tools/brand_kit_extract/runs', { inputs });
      assert.equal(res.status, 422);
      const body = (await res.json()) as { error: { code: string; errors: { loc: unknown[]; code: string; message: string }[] } };
      assert.equal(body.error.code, 'invalid_request');
      assert.deepEqual(body.error.errors, [{ loc: ['body', 'inputs', 'url'], message: 'a url or files (at least one image) is needed', code: 'missing_source' }]);
    }
    assert.equal(await open.sparks(), before);
  });

  test('the test site end to end: outputs stored, kit valid, save: true keeps it and the CLI lists it', async () => {
    const run = await open.runToEnd({ url: `${site.url}/`, save: true });
    assert.equal(run.status, 'succeeded', run.error ?? '');
    assert.equal(run.cost_sparks, 5);
    assert.deepEqual(
      run.outputs.map((o) => [o.file_name, o.mime_type, o.width, o.height]),
      [
        ['brand-kit.json', 'application/json', null, null],
        ['logo-1.png', 'image/png', 512, 171],
        ['logo-2.png', 'image/png', 200, 60],
        ['logo-3.png', 'image/png', 180, 180],
        ['logo-4.jpg', 'image/jpeg', 300, 157],
      ],
    );
    const kit: unknown = JSON.parse((await open.download(run.id, run.outputs[0]!.asset_id)).toString('utf8'));
    assertValidKit(kit);
    assertSiteKit(kit, site.url);
    const logo = await open.download(run.id, run.outputs[2]!.asset_id);
    assert.equal((await sharp(logo).metadata()).format, 'png');
    assert.equal(await pixel(logo, 10, 10), '#1a73e8');

    const { rows } = await open.s.database.db.pool.query<{ team_id: string; name: string; kit: BrandKit }>(
      'SELECT team_id, name, kit FROM brand_kits WHERE run_id = $1::uuid',
      [run.id],
    );
    assert.equal(rows.length, 1);
    assert.equal(rows[0]!.team_id, open.team.teamId);
    assert.equal(rows[0]!.name, 'Acme Rockets');
    assert.deepEqual(rows[0]!.kit, kit);

    const cli = await runCli(['admin', 'brand-kits', 'list', '--team', open.team.teamId], cliEnv({ DATABASE_URL: open.s.database.url, TOOLRUN_DATA_DIR: dataDir }));
    assert.equal(cli.code, 0, cli.stderr);
    const listed = JSON.parse(cli.stdout) as { object: string; data: { object: string; id: string; team_id: string; run_id: string; name: string; created_at: string; kit: unknown }[] };
    assert.equal(listed.object, 'list');
    assert.equal(listed.data.length, 1);
    const [item] = listed.data;
    assert.deepEqual({ ...item, id: '', created_at: '' }, { object: 'brand_kit', id: '', team_id: open.team.teamId, run_id: run.id, name: 'Acme Rockets', created_at: '', kit });
    assert.ok(!Number.isNaN(Date.parse(item!.created_at)));
  });

  test('images only through the API, save: false keeps nothing', async () => {
    const fileId = await open.upload('two.png', await twoColourPng(120, 80, '#2e7d32', '#fbc02d'));
    const run = await open.runToEnd({ files: [fileId] });
    assert.equal(run.status, 'succeeded', run.error ?? '');
    assert.equal(run.cost_sparks, 1);
    assert.deepEqual(run.outputs.map((o) => o.file_name), ['brand-kit.json']);
    const kit: unknown = JSON.parse((await open.download(run.id, run.outputs[0]!.asset_id)).toString('utf8'));
    assertValidKit(kit);
    assert.deepEqual(kit.images[0]!.palette.map((p) => p.hex), ['#2e7d32', '#fbc02d']);
    assert.deepEqual(kit.images[0]!.file_id, fileId);
    const { rows } = await open.s.database.db.pool.query('SELECT 1 FROM brand_kits WHERE run_id = $1::uuid', [run.id]);
    assert.equal(rows.length, 0);
  });

  test('private networks not allowed: a loopback url fails the run clearly and releases the hold', async () => {
    const before = await closed.sparks();
    // A name that does not resolve reads exactly like one that resolves inside; the log says which.
    const hosts = ['127.0.0.1', 'localhost', 'does-not-exist.invalid'];
    const refused = () => closed.s.logs.lines.map((l) => JSON.parse(l) as { msg: string; cause?: string }).filter((l) => l.msg === 'outbound host refused');
    const seen = refused().length;
    for (const host of hosts) {
      const run = await closed.runToEnd({ url: `http://${host}:${site.port}/`, save: true });
      assert.equal(run.status, 'failed');
      assert.equal(run.error, `The url is not public: the host ${host} does not resolve to a public address. Only pages on the public internet can be read.`);
      assert.equal(run.cost_sparks, 0);
      assert.deepEqual(run.outputs, []);
    }
    assert.deepEqual(
      refused().slice(seen).map((l) => l.cause),
      [
        'the host 127.0.0.1 resolves to 127.0.0.1: private, loopback or reserved',
        'the host localhost resolves to 127.0.0.1, ::1: private, loopback or reserved',
        'the host does-not-exist.invalid does not resolve (A: ENOTFOUND, AAAA: ENOTFOUND)',
      ],
    );
    assert.equal(await closed.sparks(), before);
    assert.deepEqual(await ledgerDrift(closed.s.database.db.pool), []);
    const { rows } = await closed.s.database.db.pool.query('SELECT 1 FROM brand_kits');
    assert.equal(rows.length, 0);
  });
});
