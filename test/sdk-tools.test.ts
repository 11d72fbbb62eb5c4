// The SDK's full flow (upload, estimate, start, wait, download) for each of the five real tools,
// against the real server over a socket with a real run worker, checking what comes back.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import sharp from 'sharp';
import { Toolrun } from '@toolrun/sdk';
import { resolveMediaBinaries } from '../src/media/binaries.js';
import { createToolRegistry } from '../src/tools/registry.js';
import type { RunWorker } from '../src/runs/worker.js';
import { BrandSite } from './helpers/brand-site.js';
import { makeTeam, type TeamFixture } from './helpers/fixtures.js';
import { makeMp4, makePng } from './helpers/media.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { startTestWorker } from './helpers/worker.js';

const tools = createToolRegistry();
let s: TestServer;
let worker: RunWorker;
let team: TeamFixture;
let site: BrandSite;
let tmp: string;

before(async () => {
  s = await startTestServer({ tools, env: { TOOLRUN_ALLOW_PRIVATE_NETWORK: '1' } });
  worker = await startTestWorker(s, tools);
  team = await makeTeam(s.database.db, { sparks: 1000, plan: 'pro' });
  site = await new BrandSite().start();
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'sdk-tools-'));
});
after(async () => {
  await worker.stop(1000);
  await site.close();
  await s.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

const sdk = () => new Toolrun({ apiKey: team.key, baseUrl: s.url, testing: { minPollIntervalMs: 100 } });

/** Estimate, start, wait, download; the run succeeds at exactly the estimate and its files arrive. */
async function flow(toolId: string, inputs: Record<string, unknown>): Promise<{ files: string[]; mimes: (string | null)[] }> {
  const client = sdk();
  const estimate = await client.tools.estimate(toolId, { inputs });
  const started = await client.runs.start(toolId, { inputs });
  assert.equal(started.status, 'queued');
  const done = await client.runs.wait(started);
  assert.equal(done.status, 'succeeded', done.error ?? '');
  assert.equal(done.cost_sparks, estimate.sparks);
  const dir = fs.mkdtempSync(path.join(tmp, `${toolId}-`));
  const downloaded = await client.runs.download(done, dir);
  assert.equal(downloaded.length, done.outputs.length);
  for (const d of downloaded) assert.equal(fs.statSync(d.path).size, d.size_bytes);
  return { files: downloaded.map((d) => d.path), mimes: downloaded.map((d) => d.mime_type) };
}

function probe(file: string): { width: number; height: number; duration: number } {
  const { ffprobe } = resolveMediaBinaries();
  const out = JSON.parse(
    execFileSync(ffprobe, ['-v', 'error', '-print_format', 'json', '-show_format', '-show_streams', '-select_streams', 'v:0', file]).toString(),
  ) as { streams: { width: number; height: number }[]; format: { duration: string } };
  return { width: out.streams[0]?.width ?? 0, height: out.streams[0]?.height ?? 0, duration: Number(out.format.duration) };
}

describe('the SDK runs every tool end to end', () => {
  test('image_upscale and image_color_grade', async () => {
    const image = await sdk().files.upload(await makePng(96, 64), { fileName: 'photo.png' });
    assert.equal(image.status, 'ready');
    const up = await flow('image_upscale', { image: [image.id] });
    const meta = await sharp(up.files[0] ?? '').metadata();
    assert.deepEqual([meta.format, meta.width, meta.height], ['png', 192, 128]);
    const graded = await flow('image_color_grade', { image: [image.id], preset: 'bw_16mm' });
    const stats = await sharp(graded.files[0] ?? '').stats();
    const [r, g, b] = stats.channels.map((c) => c.mean);
    assert.ok(Math.abs((r ?? 0) - (b ?? 0)) < 2 && Math.abs((g ?? 0) - (b ?? 0)) < 2, `monochrome: ${r} ${g} ${b}`);
  });

  test('video_transition and video_upscale', async () => {
    const a = await sdk().files.upload(await makeMp4({ seconds: 2, width: 160, height: 90 }), { fileName: 'a.mp4' });
    const b = await sdk().files.upload(await makeMp4({ seconds: 2, width: 160, height: 90 }), { fileName: 'b.mp4' });
    const joined = await flow('video_transition', { clips: [a.id, b.id], style: 'dissolve', duration_seconds: 0.5 });
    const j = probe(joined.files[0] ?? '');
    assert.deepEqual([j.width, j.height], [160, 90]);
    assert.ok(Math.abs(j.duration - 3.5) < 0.15, `duration ${j.duration}`);
    const up = await flow('video_upscale', { video: [a.id], target: '1080p' });
    const u = probe(up.files[0] ?? '');
    assert.deepEqual([u.width, u.height], [1920, 1080]);
  });

  test('brand_kit_extract from a local site', async () => {
    const kit = await flow('brand_kit_extract', { url: `${site.url}/` });
    const json = kit.files.find((f) => f.endsWith('.json'));
    assert.ok(json, `outputs: ${kit.files.join(', ')}`);
    const body = JSON.parse(fs.readFileSync(json, 'utf8')) as { name: string | null; roles: { primary: string | null } };
    assert.equal(body.name, 'Acme Rockets');
    assert.equal(body.roles.primary, '#1a73e8');
    assert.ok(kit.files.length > 1, 'logos were fetched too');
  });
});
