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
  const { colour } = bandsOf(channels);
  const count = rows.length / width;
  for (let r0 = 0; r0 < count; r0 += ROWS_PER_TURN) {
    if (r0 > 0) await new Promise<void>((resolve) => setImmediate(resolve));
    const r1 = Math.min(count, r0 + ROWS_PER_TURN);
    if (out.depth === 8) addRows8(out, colour, y0, rows, r0, r1);
    else addRows16(out, colour, y0, rows, r0, r1);
  }
}

/**
 * 8-bit samples through a Uint8ClampedArray view, which rounds and clamps on store in the engine
 * (half to even where Math.round goes half up: only exact ties differ): this loop visits every
 * output sample, three times a Lanczos3 pass's pixels, and was most of the learned path's time
 * outside the network (bench:upscale-speed, docs/decisions.md).
 */
function addRows8(out: RawImage, colour: number, y0: number, rows: Float32Array, r0: number, r1: number): void {
  const { width, channels } = out;
  const samples = new Uint8ClampedArray(out.data.buffer, out.data.byteOffset, out.data.length);
  let p = (y0 + r0) * width * channels;
  const end = (r1 - r0) * width;
  let i = r0 * width;
  if (colour === 3) {
    for (let k = 0; k < end; k++, i++, p += channels) {
      const d = rows[i]! * 255;
      samples[p] = samples[p]! + d;
      samples[p + 1] = samples[p + 1]! + d;
      samples[p + 2] = samples[p + 2]! + d;
    }
    return;
  }
  for (let k = 0; k < end; k++, i++, p += channels) {
    const d = rows[i]! * 255;
    for (let b = 0; b < colour; b++) samples[p + b] = samples[p + b]! + d;
  }
}

function addRows16(out: RawImage, colour: number, y0: number, rows: Float32Array, r0: number, r1: number): void {
  const { width, channels } = out;
  const samples = new Uint16Array(out.data.buffer, out.data.byteOffset, out.data.length / 2);
  for (let r = r0; r < r1; r++) {
    let p = (y0 + r) * width * channels;
    for (let x = 0; x < width; x++, p += channels) {
      const d = rows[r * width + x]! * 65535;
      for (let b = 0; b < colour; b++) {
        const v = Math.round(samples[p + b]! + d);
        samples[p + b] = v < 0 ? 0 : v > 65535 ? 65535 : v;
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

/**
 * Adds the network's correction for `low` (the oriented input) to its Lanczos3 at the net's
 * factor (upscaleImage refuses a net of another factor before any work), in place, and gives
 * that image back. `upscaled` may still be in the making: the network
 * starts on the luma at once and its first strips overlap libvips' second pass; each strip waits
 * for the image only when it is added (two strips in memory at most, as LumaNet.run holds them).
 */
export async function applyLearned(
  net: LumaNet,
  low: RawImage,
  upscaled: RawImage | Promise<RawImage>,
  signal: AbortSignal,
  progress: (f: number) => void,
): Promise<RawImage> {
  const image = Promise.resolve(upscaled);
  // Awaited by the first strip; if the network fails first, the image's own failure is not lost
  // as an unhandled rejection (the network's error is the one thrown).
  image.catch(() => undefined);
  const plane = lumaOf(low);
  await net.run(
    plane,
    low.width,
    low.height,
    'correction',
    async (y0, rows) => {
      const up = await image;
      await addCorrection(up, y0, rows);
      progress((y0 + rows.length / up.width) / up.height);
    },
    { signal },
  );
  return image;
}
