/**
 * `npm run bench:quality`: how faithful image_upscale is (issue 17), not how fast. Six 256x256
 * crops of natural photographs shipped in npm packages (ij-test's cat, @jimp/test-utils' cops,
 * car park and a street panorama, three crops of it; nothing is fetched at run time) are the
 * truth. Each is reduced 2x with a cubic filter and enlarged back by: the tool (its runner on a
 * PNG), a textbook centred Lanczos3 written from the definition (the reference), sharp's affine
 * with a bicubic interpolator centred by half a pixel, and what the tool did before issue 17
 * (libvips resize, which upsizes half a pixel off centre, plus a light sharpen). The score is the
 * luma PSNR against the truth with a 4 px border left out. Target: the tool within 0.1 dB of the
 * reference on the mean.
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { upscaleImage } from '../src/tools/image/upscale.js';
import type { Raster } from '../test/helpers/images.js';
import { centredLanczos3 } from '../test/helpers/lanczos-reference.js';
import { CROPS, cropAndReduce, lumaPsnr, raw, SIDE, sharpOf } from './lib/photos.js';
import { figure, finish, loadNote, resultHeader, table, type BenchResult, runBench } from './lib/report.js';

const TARGET_DB = 0.1;

const METHODS = ['tool', 'reference', 'bicubic', 'before'] as const;
type Method = (typeof METHODS)[number];
const LABELS: Record<Method, string> = {
  tool: 'image_upscale',
  reference: 'centred Lanczos3 (reference)',
  bicubic: 'sharp affine, bicubic, centred',
  before: 'before issue 17 (libvips resize + sharpen)',
};

const png = (r: Raster) => sharpOf(r).png().toBuffer();

async function upscaled(method: Method, small: Raster, work: string): Promise<Raster> {
  const input = () => sharp(small.data, { raw: { width: small.width, height: small.height, channels: 3 } });
  switch (method) {
    case 'tool': {
      const file = path.join(work, 'small.png');
      await fs.writeFile(file, await png(small));
      // The Lanczos3 method: this benchmark checks it against its reference (bench/quality-learned.ts measures 'learned').
      const out = await upscaleImage({ input: file, inputName: 'small.png', outDir: work, signal: new AbortController().signal, progress: () => undefined, timeoutSeconds: 60, method: 'lanczos' });
      return raw(sharp(out.path));
    }
    case 'reference':
      return centredLanczos3(small, 2);
    case 'bicubic':
      // Output offset half a pixel: the interpolated grid centred on the input's (checked on an impulse).
      return raw(input().affine([[2, 0], [0, 2]], { odx: 0.5, ody: 0.5, interpolator: sharp.interpolators.bicubic }));
    case 'before':
      return raw(input().resize(small.width * 2, small.height * 2, { kernel: 'lanczos3', fit: 'fill' }).sharpen({ sigma: 0.6, m1: 0.5, m2: 1.5 }));
  }
}

async function main(): Promise<void> {
  const before = loadNote();
  const work = await fs.mkdtemp(path.join(os.tmpdir(), 'toolrun-bench-quality-'));
  const scores: Record<Method, number[]> = { tool: [], reference: [], bicubic: [], before: [] };
  try {
    for (const crop of CROPS) {
      const { truth, small } = await cropAndReduce(crop);
      for (const m of METHODS) scores[m].push(lumaPsnr(await upscaled(m, small, work), truth));
    }
  } finally {
    await fs.rm(work, { recursive: true, force: true });
  }
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const rows = CROPS.map((c, i) => [c.name, ...METHODS.map((m) => scores[m][i]!.toFixed(2))]);
  rows.push(['mean', ...METHODS.map((m) => mean(scores[m]).toFixed(2))]);
  const psnrTable = table(['crop (256x256)', ...METHODS.map((m) => LABELS[m])], rows);
  process.stdout.write(`${psnrTable}\n`);
  const difference = mean(scores.tool) - mean(scores.reference);
  const result: BenchResult = {
    ...resultHeader('quality', 'image_upscale against a textbook centred Lanczos3 on natural photographs (luma PSNR)',
      { before, after: loadNote() }, { server: 'none (no database involved)', version: null }, { crops: CROPS.map((c) => `${c.name}: ${c.file} at ${c.at}`), side: SIDE, border: 4 }),
    figures: [
      figure({
        name: 'tool_minus_reference',
        figure: 'image_upscale mean PSNR minus the reference mean PSNR',
        unit: 'dB',
        value: difference,
        target: { on: 'value', op: '>=', limit: -TARGET_DB },
      }),
      ...METHODS.map((m) =>
        figure({
          name: `${m}_mean_psnr`,
          figure: `${LABELS[m]}: mean luma PSNR of the six crops`,
          unit: 'dB',
          value: mean(scores[m]),
          baseline: m === 'reference' ? null : { label: LABELS.reference, value: mean(scores.reference) },
        }),
      ),
    ],
    charts: [],
    notes: [
      'Truth: 256x256 crops of natural photographs from npm packages (ij-test, @jimp/test-utils; dev dependencies, nothing fetched). Each is reduced 2x with sharp\'s cubic (a centred reduce) and enlarged back 2x; luma (BT.601) PSNR against the truth with a 4 px border left out.',
      'Ratios here are of PSNRs in dB and mean little; the target is on the difference in dB.',
      `Per crop, in dB:\n\n${'```'}text\n${psnrTable}\n${'```'}`,
    ],
    details: { scores },
  };
  finish(result);
}

runBench('quality', main);
