/**
 * Natural photographs for the image-quality measurements (bench/quality.ts, bench/neural): six
 * 256x256 crops from pictures shipped in npm dev dependencies (ij-test's cat, @jimp/test-utils'
 * cops, car park and a street panorama, three crops of it), never fetched at run time; and the
 * score, luma (BT.601) PSNR with a 4 px border left out.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import sharp, { type Sharp } from 'sharp';
import type { Raster } from '../../test/helpers/images.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const SIDE = 256;
const BORDER = 4;

export interface Crop {
  name: string;
  file: string;
  /** Where the crop's centre sits, as a fraction of the width (the height: the middle). */
  at: number;
}

export const CROPS: Crop[] = [
  { name: 'cat', file: 'node_modules/ij-test/img/cat.jpg', at: 0.5 },
  { name: 'cops', file: 'node_modules/@jimp/test-utils/images/cops.jpg', at: 0.5 },
  { name: 'car park', file: 'node_modules/@jimp/test-utils/images/fillbytes.jpg', at: 0.5 },
  { name: 'street (left)', file: 'node_modules/@jimp/test-utils/images/panoramic.jpg', at: 0.25 },
  { name: 'street (middle)', file: 'node_modules/@jimp/test-utils/images/panoramic.jpg', at: 0.5 },
  { name: 'street (right)', file: 'node_modules/@jimp/test-utils/images/panoramic.jpg', at: 0.75 },
];

export async function raw(img: Sharp): Promise<Raster> {
  const { data, info } = await img.removeAlpha().raw().toBuffer({ resolveWithObject: true });
  return { data, width: info.width, height: info.height, channels: info.channels };
}

export const sharpOf = (r: Raster) => sharp(r.data, { raw: { width: r.width, height: r.height, channels: 3 } });

/** The crop (the truth) and it reduced 2x with a cubic filter (a centred reduce): the input to enlarge. */
export async function cropAndReduce(crop: Crop): Promise<{ truth: Raster; small: Raster }> {
  const file = path.join(ROOT, crop.file);
  const meta = await sharp(file).metadata();
  const left = Math.round(Math.min(meta.width - SIDE, Math.max(0, meta.width * crop.at - SIDE / 2)));
  const top = Math.round((meta.height - SIDE) / 2);
  const truth = await raw(sharp(file).extract({ left, top, width: SIDE, height: SIDE }));
  const small = await raw(sharp(await sharpOf(truth).png().toBuffer()).resize(SIDE / 2, SIDE / 2, { kernel: 'cubic' }));
  return { truth, small };
}

/** Luma PSNR of a against b, leaving `border` pixels out on every side (4 unless said). */
export function lumaPsnr(a: Raster, b: Raster, border = BORDER): number {
  const y = (r: Raster, i: number) => 0.299 * r.data[i]! + 0.587 * r.data[i + 1]! + 0.114 * r.data[i + 2]!;
  let se = 0;
  let n = 0;
  for (let row = border; row < a.height - border; row++) {
    for (let col = border; col < a.width - border; col++) {
      const i = (row * a.width + col) * a.channels;
      const d = y(a, i) - y(b, i);
      se += d * d;
      n++;
    }
  }
  return 10 * Math.log10((255 * 255 * n) / se);
}
