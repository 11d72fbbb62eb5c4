// The checks the x2 and x4 networks share: ONNX Runtime against the stored PyTorch output, and
// how far the int8 model the service runs strays from the trained network it was quantised from.
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import sharp from 'sharp';
import { lumaPlane, type LumaNet, type LumaOutput } from '../../src/tools/upscaler/luma-net.js';
import { int8Initializers } from './onnx-weights.js';

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

/**
 * A net's whole output for a plane, strip by strip as the service receives it, and how many strips
 * came (tile and stripRows: the tiling under test).
 */
export async function runWhole(
  net: LumaNet,
  input: { plane: Float32Array; width: number; height: number },
  output: LumaOutput = 'correction',
  opts: { tile?: number; stripRows?: number } = {},
): Promise<{ out: Float32Array; strips: number }> {
  const { plane, width, height } = input;
  const out = new Float32Array(net.scale * net.scale * width * height);
  let strips = 0;
  await net.run(plane, width, height, output, (y0, rows) => {
    out.set(rows, y0 * net.scale * width);
    strips++;
  }, opts);
  return { out, strips };
}

/**
 * The corrections of both nets: their worst and RMS difference, and the largest correction of `b`.
 * A net that gives only its full output (the video network: luma2x) is compared on that, its
 * correction being its difference from `zero` (the same graph with no correction).
 */
export async function compareNets(
  a: LumaNet,
  b: LumaNet,
  input: { plane: Float32Array; width: number; height: number },
  full?: { output: LumaOutput; zero: LumaNet },
): Promise<{ worst: number; rms: number; largest: number }> {
  // Compared sample by sample: every net must make the same factor's output.
  const collect = async (net: LumaNet) => {
    assert.equal(net.scale, a.scale);
    return (await runWhole(net, input, full?.output ?? 'correction')).out;
  };
  const [x, y] = [await collect(a), await collect(b)];
  const base = full ? await collect(full.zero) : null;
  let worst = 0;
  let sq = 0;
  let largest = 0;
  for (let i = 0; i < x.length; i++) {
    const d = Math.abs(x[i]! - y[i]!);
    worst = Math.max(worst, d);
    sq += d * d;
    largest = Math.max(largest, Math.abs(y[i]! - (base ? base[i]! : 0)));
  }
  return { worst, rms: Math.sqrt(sq / x.length), largest };
}

/** The quantised net against the trained one on a photograph: its worst and RMS difference in grey levels, within bounds. */
export async function assertCloseToTrained(
  shipped: LumaNet,
  trained: LumaNet,
  bounds: { worstLevels: number; rmsLevels: number },
  full?: { output: LumaOutput; zero: LumaNet },
): Promise<void> {
  const { worst, rms, largest } = await compareNets(shipped, trained, await photoLuma(), full);
  assert.ok(worst <= bounds.worstLevels / 255, `worst difference ${(worst * 255).toFixed(2)} grey levels`);
  assert.ok(rms <= bounds.rmsLevels / 255, `RMS ${(rms * 255).toFixed(3)} grey levels`);
  assert.ok(largest >= 10 / 255, `the trained correction reaches ${(largest * 255).toFixed(1)} grey levels: the comparison has something to compare`);
}

/**
 * The int8 model's weights stay within +-63. Without VNNI, ONNX Runtime's x86 kernels (AVX2,
 * AVX-512 before VNNI) multiply uint8 activations by int8 weights with VPMADDUBSW, which adds
 * each pair of products into a saturating int16: 2 x 255 x 63 = 32130 fits, 2 x 255 x 127 does
 * not, and such a machine then computes another network (measured on an AMD EPYC without VNNI:
 * BSD100 x2 gain 1.118 dB against the fp32 model's 1.212). Every CPU gets the same output.
 */
export async function assertWeightsNeverSaturate(modelPath: string, convolutions: number): Promise<void> {
  const weights = (await int8Initializers(modelPath)).filter((t) => t.name.endsWith('weight_quantized'));
  assert.equal(weights.length, convolutions, `quantised weight tensors: ${weights.map((t) => t.name).join(', ')}`);
  for (const { name, values } of weights) {
    const largest = values.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
    assert.ok(largest <= 63, `${name} reaches ${largest}: a pair of products can pass 32767 on an AVX2 machine`);
    assert.equal(largest, 63, `${name} uses its range (largest ${largest})`);
  }
}

/**
 * The trained net's full output (`luma2x` / `luma4x`) on export.py's fixed input against the
 * PyTorch output stored beside it: at most 1 grey level apart, and not a net that does nothing
 * (over 5% of the pixels at least 2 levels from the zero-correction model's).
 */
export async function assertMatchesReference(trained: LumaNet, zero: LumaNet, referenceFile: string): Promise<void> {
  const n = trained.scale;
  const output: LumaOutput = n === 4 ? 'luma4x' : 'luma2x';
  const ref = JSON.parse(await fs.readFile(referenceFile, 'utf8')) as { width: number; height: number; luma255: number[] } & Record<string, number[]>;
  const expected = ref[`${output}255`]!;
  const plane = lumaPlane(ref.width, ref.height);
  ref.luma255.forEach((v, i) => (plane[i] = v / 255));
  const got: number[] = [];
  await trained.run(plane, ref.width, ref.height, output, (_y0, rows) => {
    for (const v of rows) got.push(Math.round(Math.min(1, Math.max(0, v)) * 255));
  });
  assert.equal(got.length, n * n * ref.width * ref.height);
  assert.equal(got.length, expected.length);
  const worst = Math.max(...got.map((v, i) => Math.abs(v - expected[i]!)));
  assert.ok(worst <= 1, `worst difference ${worst} grey levels`);
  const plain = new Float32Array(got.length);
  await zero.run(plane, ref.width, ref.height, output, (y0, rows) => plain.set(rows, y0 * n * ref.width));
  const moved = got.filter((v, i) => Math.abs(v - Math.round(plain[i]! * 255)) >= 2).length;
  assert.ok(moved > got.length / 20, `${moved} of ${got.length} pixels moved by the correction`);
}
