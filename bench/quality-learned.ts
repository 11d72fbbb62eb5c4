/**
 * `npm run bench:quality` (second part): how much image_upscale's learned method gains over its
 * Lanczos3 method (issue 28), in luma PSNR against the truth, on the standard x2 sets in
 * ../shared/datasets/sr/eval (never trained on). Each truth is reduced 2x three ways (sharp's
 * antialiased cubic, an exact 2x2 area mean, sharp's Lanczos3), and each reduction again with a
 * JPEG pass at quality 75; both methods run through the tool's runner on the same PNG (or JPEG)
 * input in the same run. Targets on BSD100: mean gain >= +1.2 dB (cubic), >= +0.8 dB (area); no
 * image worse than Lanczos3 by more than 0.25 dB in any variant of any set.
 *
 * BENCH_MODEL=<file.onnx> measures another model (training checkpoints); BENCH_SETS=BSD100,Set14.
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';
import { upscaleImage } from '../src/tools/image/upscale.js';
import { LumaNet } from '../src/tools/upscaler/luma-net.js';
import type { Raster } from '../test/helpers/images.js';
import { lumaPsnr, raw, sharpOf } from './lib/photos.js';
import { figure, finish, loadNote, resultHeader, table, type BenchResult, type Figure, runBench } from './lib/report.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const EVAL = path.resolve(ROOT, '..', 'shared', 'datasets', 'sr', 'eval');
const FLOOR_DB = -0.25;
const TARGETS: Record<string, number> = { cubic: 1.2, area: 0.8 };
const REDUCTIONS = ['cubic', 'area', 'lanczos3'] as const;
type Reduction = (typeof REDUCTIONS)[number];
const VARIANTS = [...REDUCTIONS, ...REDUCTIONS.map((r) => `${r}+jpeg75` as const)];

async function reduce(truth: Raster, how: Reduction): Promise<Raster> {
  const w = truth.width / 2;
  const h = truth.height / 2;
  if (how !== 'area') return raw(sharpOf(truth).resize(w, h, { kernel: how, fit: 'fill' }));
  const data = Buffer.alloc(w * h * 3);
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      for (let c = 0; c < 3; c++) {
        const at = (dx: number, dy: number) => truth.data[((2 * y + dy) * truth.width + 2 * x + dx) * 3 + c]!;
        data[(y * w + x) * 3 + c] = Math.round((at(0, 0) + at(1, 0) + at(0, 1) + at(1, 1)) / 4);
      }
    }
  }
  return { data, width: w, height: h, channels: 3 };
}

async function truthOf(file: string): Promise<Raster> {
  const meta = await sharp(file).metadata();
  const w = meta.width! - (meta.width! % 2);
  const h = meta.height! - (meta.height! % 2);
  return raw(sharp(file).removeAlpha().toColourspace('srgb').extract({ left: 0, top: 0, width: w, height: h }));
}

async function upscale(input: Buffer, name: string, method: 'learned' | 'lanczos', net: LumaNet, work: string): Promise<Raster> {
  const file = path.join(work, name);
  await fs.writeFile(file, input);
  const out = await upscaleImage({ input: file, inputName: name, outDir: work, signal: new AbortController().signal, progress: () => undefined, timeoutSeconds: 120, method, net });
  // The output is lossless for PNG inputs; for JPEG inputs it is a JPEG at quality 90, as users get it.
  const r = await raw(sharp(out.path));
  await fs.rm(out.path);
  return r;
}

interface Row {
  set: string;
  image: string;
  variant: string;
  lanczos: number;
  learned: number;
}

async function main(): Promise<void> {
  const before = loadNote();
  const sets = (process.env.BENCH_SETS ?? 'BSD100,Set14,Set5').split(',');
  const missing = await fs.access(EVAL).then(() => false, () => true);
  const modelPath = process.env.BENCH_MODEL;
  const net = new LumaNet(modelPath ? { modelPath } : {});
  const rows: Row[] = [];
  const work = await fs.mkdtemp(path.join(os.tmpdir(), 'toolrun-bench-learned-'));
  try {
    if (!missing) {
      for (const set of sets) {
        const dir = path.join(EVAL, set);
        for (const name of (await fs.readdir(dir)).filter((f) => f.endsWith('_HR.png')).sort()) {
          const truth = await truthOf(path.join(dir, name));
          for (const how of REDUCTIONS) {
            const small = await reduce(truth, how);
            const png = await sharpOf(small).png().toBuffer();
            const jpeg = await sharpOf(small).jpeg({ quality: 75 }).toBuffer();
            for (const [variant, bytes, file] of [[how, png, 'in.png'], [`${how}+jpeg75`, jpeg, 'in.jpg']] as const) {
              const score = async (m: 'learned' | 'lanczos') => lumaPsnr(await upscale(bytes, file, m, net, work), truth);
              rows.push({ set, image: name.replace('_SRF_2_HR.png', ''), variant, lanczos: await score('lanczos'), learned: await score('learned') });
            }
          }
        }
        process.stdout.write(`${set} done\n`);
      }
    }
  } finally {
    await net.close();
    await fs.rm(work, { recursive: true, force: true });
  }
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const summary: string[][] = [];
  const figures: Figure[] = [];
  for (const set of sets) {
    for (const variant of VARIANTS) {
      const rs = rows.filter((r) => r.set === set && r.variant === variant);
      if (!rs.length) continue;
      const gains = rs.map((r) => r.learned - r.lanczos);
      const worst = rs.reduce((a, b) => (b.learned - b.lanczos < a.learned - a.lanczos ? b : a));
      summary.push([set, variant, String(rs.length), mean(rs.map((r) => r.lanczos)).toFixed(2), mean(rs.map((r) => r.learned)).toFixed(2), mean(gains).toFixed(2), `${(worst.learned - worst.lanczos).toFixed(2)} (${worst.image})`]);
      const target = set === 'BSD100' ? TARGETS[variant] : undefined;
      figures.push(
        figure({
          name: `${set}_${variant}_mean_gain`,
          figure: `${set}, ${variant}: mean gain of learned over Lanczos3`,
          unit: 'dB',
          value: mean(gains),
          ...(target !== undefined ? { target: { on: 'value' as const, op: '>=' as const, limit: target } } : {}),
        }),
        figure({
          name: `${set}_${variant}_worst_gain`,
          figure: `${set}, ${variant}: the worst image's gain`,
          unit: 'dB',
          value: Math.min(...gains),
          target: { on: 'value', op: '>=', limit: FLOOR_DB },
        }),
      );
    }
  }
  const summaryTable = table(['set', 'input', 'images', 'Lanczos3 dB', 'learned dB', 'mean gain dB', 'worst gain dB (image)'], summary);
  process.stdout.write(`${summaryTable}\n`);
  const result: BenchResult = {
    ...resultHeader('quality-learned', 'image_upscale learned vs Lanczos3 on BSD100, Set14 and Set5 (luma PSNR gain)',
      { before, after: loadNote() }, { server: 'none (no database involved)', version: null }, { sets, variants: VARIANTS, model: modelPath ?? 'models/upscaler-x2.onnx', border: 4, floor_db: FLOOR_DB }),
    figures: missing
      ? [figure({ name: 'skipped', figure: 'learned vs Lanczos3', unit: 'dB', value: 0, notApplicable: `${EVAL} is absent (a clone without ../shared)` })]
      : figures,
    charts: [],
    notes: [
      'Truth: the *_HR.png of each set (sides trimmed to even). Inputs: the truth reduced 2x by sharp\'s cubic (antialiased), an exact 2x2 mean ("area") and sharp\'s Lanczos3; "+jpeg75": that reduction saved as JPEG at quality 75 (the output is then a JPEG at quality 90, as users get it). Luma: BT.601 weights on full-range RGB; 4 px border left out. Both methods run through the tool\'s runner in this run.',
      'Full-range luma: published tables use 16-235 luma, which reads about 1.3 dB higher for the same images.',
      `Per set and input:\n\n${'```'}text\n${summaryTable}\n${'```'}`,
    ],
    details: { rows },
  };
  finish(result);
}

runBench('quality-learned', main);
