import type { Sharp } from 'sharp';
import type { LumaNet } from '../upscaler/luma-net.js';
import { lumaPlane } from '../upscaler/luma-net.js';
import type { RawImage } from './png-writer.js';

// image_upscale's learned method: the network's luma correction (src/tools/upscaler/) added to
// the Lanczos3 result. A luma change added equally to R, G and B changes luma by that amount and
// leaves the colour difference signals alone, so colour stays exactly what Lanczos3 made of it;
// alpha is never touched. The work is cut in strips (the network's) and, for the additions on
// this thread, in slices of rows with a turn of the event loop between them.

/** Output rows added between two turns of the event loop (~10 ms on 8192-pixel rows). */
const ROWS_PER_TURN = 64;

function bandsOf(channels: number): { colour: number; alpha: boolean } {
  if (channels === 2 || channels === 4) return { colour: channels - 1, alpha: true };
  return { colour: channels, alpha: false };
}

/** The luma (BT.601 weights on the stored values, 0..1) of a raw image, in a plane the network's thread reads. */
export function lumaOf(image: RawImage): Float32Array {
  const { width, height, channels } = image;
  const plane = lumaPlane(width, height);
  const samples = image.depth === 16 ? new Uint16Array(image.data.buffer, image.data.byteOffset, image.data.length / 2) : image.data;
  const max = image.depth === 16 ? 65535 : 255;
  const { colour } = bandsOf(channels);
  for (let i = 0, p = 0; i < width * height; i++, p += channels) {
    const v = colour >= 3 ? 0.299 * samples[p]! + 0.587 * samples[p + 1]! + 0.114 * samples[p + 2]! : samples[p]!;
    plane[i] = v / max;
  }
  return plane;
}

/** Adds correction rows (0..1 units, the output's width each) to the colour bands of `out` from row y0 on. */
export async function addCorrection(out: RawImage, y0: number, rows: Float32Array): Promise<void> {
  const { width, channels } = out;
  const samples = out.depth === 16 ? new Uint16Array(out.data.buffer, out.data.byteOffset, out.data.length / 2) : out.data;
  const max = out.depth === 16 ? 65535 : 255;
  const { colour } = bandsOf(channels);
  const count = rows.length / width;
  for (let r0 = 0; r0 < count; r0 += ROWS_PER_TURN) {
    if (r0 > 0) await new Promise<void>((resolve) => setImmediate(resolve));
    const r1 = Math.min(count, r0 + ROWS_PER_TURN);
    for (let r = r0; r < r1; r++) {
      let p = (y0 + r) * width * channels;
      for (let x = 0; x < width; x++, p += channels) {
        const d = rows[r * width + x]! * max;
        for (let b = 0; b < colour; b++) {
          const v = Math.round(samples[p + b]! + d);
          samples[p + b] = v < 0 ? 0 : v > max ? max : v;
        }
      }
    }
  }
}

/** Raw samples of a sharp pipeline, 8 or 16 bits as `depth` says. */
export async function rawOf(img: Sharp, depth: 'uchar' | 'ushort'): Promise<RawImage> {
  const { data, info } = await img.raw({ depth }).toBuffer({ resolveWithObject: true });
  const channels = info.channels as 1 | 2 | 3 | 4;
  return { data, width: info.width, height: info.height, channels, depth: depth === 'ushort' ? 16 : 8 };
}

/** The samples as sharp's raw input takes them: 16-bit samples as a Uint16Array. */
export function rawInput(image: RawImage): Buffer | Uint16Array {
  return image.depth === 16 ? new Uint16Array(image.data.buffer, image.data.byteOffset, image.data.length / 2) : image.data;
}

/** Adds the network's correction for `low` (the oriented input) to `upscaled` (its Lanczos3 at the net's factor), in place. */
export async function applyLearned(net: LumaNet, low: RawImage, upscaled: RawImage, signal: AbortSignal, progress: (f: number) => void): Promise<void> {
  if (upscaled.width !== low.width * net.scale || upscaled.height !== low.height * net.scale) {
    throw new Error(`the x${net.scale} network cannot correct a ${low.width}x${low.height} -> ${upscaled.width}x${upscaled.height} upscale`);
  }
  const plane = lumaOf(low);
  await net.run(
    plane,
    low.width,
    low.height,
    'correction',
    async (y0, rows) => {
      await addCorrection(upscaled, y0, rows);
      progress((y0 + rows.length / upscaled.width) / upscaled.height);
    },
    { signal },
  );
}
