// Two upscaler networks compared on the same luma: how far the int8 model the service runs
// strays from the trained network it was quantised from.
import path from 'node:path';
import sharp from 'sharp';
import { lumaPlane, type LumaNet } from '../../src/tools/upscaler/luma-net.js';

/** The luma (BT.601, 0..1) of a photograph: a 160x112 crop of the cat in ij-test (a dev dependency). */
export async function photoLuma(): Promise<{ plane: Float32Array; width: number; height: number }> {
  const file = path.join(import.meta.dirname, '../../node_modules/ij-test/img/cat.jpg');
  const width = 160;
  const height = 112;
  const { data } = await sharp(file).extract({ left: 200, top: 140, width, height }).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  const plane = lumaPlane(width, height);
  for (let i = 0; i < width * height; i++) plane[i] = (0.299 * data[3 * i]! + 0.587 * data[3 * i + 1]! + 0.114 * data[3 * i + 2]!) / 255;
  return { plane, width, height };
}

/** The corrections of both nets: their worst and RMS difference, and the largest correction of `b`. */
export async function compareNets(
  a: LumaNet,
  b: LumaNet,
  input: { plane: Float32Array; width: number; height: number },
  scale: number,
): Promise<{ worst: number; rms: number; largest: number }> {
  const collect = async (net: LumaNet) => {
    const out = new Float32Array(scale * scale * input.width * input.height);
    await net.run(input.plane, input.width, input.height, 'correction', (y0, rows) => out.set(rows, y0 * scale * input.width));
    return out;
  };
  const [x, y] = [await collect(a), await collect(b)];
  let worst = 0;
  let sq = 0;
  let largest = 0;
  for (let i = 0; i < x.length; i++) {
    const d = Math.abs(x[i]! - y[i]!);
    worst = Math.max(worst, d);
    sq += d * d;
    largest = Math.max(largest, Math.abs(y[i]!));
  }
  return { worst, rms: Math.sqrt(sq / x.length), largest };
}
