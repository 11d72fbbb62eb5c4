/**
 * Issue 17, part 2: do the ESRGAN models that install offline (UpscalerJS' esrgan-slim, -medium
 * and -thick, MIT, weights inside the packages, run on TensorFlow.js' WASM backend: no native
 * library, nothing downloaded) beat image_upscale's centred Lanczos3 by 0.5 dB or more where a
 * learned model should help: on degraded inputs? Not part of the project's install or of
 * `npm run bench`:
 *
 *   npm --prefix bench/neural ci && node --import tsx bench/neural/measure.ts
 *
 * The same six 256x256 crops of natural photographs as bench/quality.ts (bench/lib/photos.ts) are the truth; each is
 * reduced 2x (cubic), then degraded three ways (clean; saved as JPEG quality 40; mild Gaussian
 * noise, sigma 5), enlarged 2x by each method and scored by luma PSNR against the truth (4 px
 * border left out). Prints a Markdown table and the time per input megapixel of each model.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as tf from '@tensorflow/tfjs';
import { setWasmPaths } from '@tensorflow/tfjs-backend-wasm';
import sharp from 'sharp';
import { CROPS, cropAndReduce, lumaPsnr, raw, sharpOf } from '../lib/photos.js';
import { centredLanczos3 } from '../../test/helpers/lanczos-reference.js';
import type { Raster } from '../../test/helpers/images.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
type Degradation = 'clean' | 'jpeg q40' | 'noise σ5';
const DEGRADATIONS: Degradation[] = ['clean', 'jpeg q40', 'noise σ5'];

/** UpscalerJS' model packages: slim and medium are RDNs on 0-255; thick is an RRDN on 0-1 with two custom layers. */
const MODELS = [
  { name: 'esrgan-slim', dir: '@upscalerjs/esrgan-slim', range: 255 },
  { name: 'esrgan-medium', dir: '@upscalerjs/esrgan-medium', range: 255 },
  { name: 'esrgan-thick', dir: '@upscalerjs/esrgan-thick', range: 1 },
] as const;

function registerCustomLayers(): void {
  // As the packages' own setup defines them (dist/.../shared/src/esrgan/esrgan.js).
  class MultiplyBeta extends tf.layers.Layer {
    static className = 'MultiplyBeta';
    override call(inputs: tf.Tensor | tf.Tensor[]): tf.Tensor {
      return tf.mul(Array.isArray(inputs) ? inputs[0]! : inputs, 0.2);
    }
  }
  class PixelShuffle2x extends tf.layers.Layer {
    static className = 'PixelShuffle2x';
    override computeOutputShape(shape: tf.Shape | tf.Shape[]): tf.Shape {
      const s = (Array.isArray(shape[0]) ? shape[0] : shape) as tf.Shape;
      return [s[0] ?? null, s[1] ?? null, s[2] ?? null, 3];
    }
    override call(inputs: tf.Tensor | tf.Tensor[]): tf.Tensor {
      return tf.depthToSpace((Array.isArray(inputs) ? inputs[0]! : inputs) as tf.Tensor4D, 2, 'NHWC');
    }
  }
  tf.serialization.registerClass(MultiplyBeta);
  tf.serialization.registerClass(PixelShuffle2x);
}

/** Loads a package's x2 model from disk (TF.js in Node without tfjs-node has no file:// loader). */
async function loadModel(dir: string): Promise<tf.LayersModel> {
  const base = path.join(HERE, 'node_modules', dir, 'models', 'x2');
  const fs = await import('node:fs/promises');
  const json = JSON.parse(await fs.readFile(path.join(base, 'model.json'), 'utf8')) as {
    modelTopology: object;
    weightsManifest: { paths: string[]; weights: tf.io.WeightsManifestEntry[] }[];
  };
  const specs = json.weightsManifest.flatMap((g) => g.weights);
  const buffers = await Promise.all(json.weightsManifest.flatMap((g) => g.paths).map((p) => fs.readFile(path.join(base, p))));
  const all = Buffer.concat(buffers);
  const weightData = all.buffer.slice(all.byteOffset, all.byteOffset + all.byteLength);
  return tf.loadLayersModel(tf.io.fromMemory({ modelTopology: json.modelTopology, weightSpecs: specs, weightData }));
}

/** A deterministic Gaussian generator (Box-Muller on an LCG), so every run degrades alike. */
function gaussian(seed: number): () => number {
  let s = seed >>> 0;
  const u = () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return (s + 1) / 2 ** 32;
  };
  return () => Math.sqrt(-2 * Math.log(u())) * Math.cos(2 * Math.PI * u());
}

async function degrade(small: Raster, how: Degradation, seed: number): Promise<Raster> {
  if (how === 'clean') return small;
  if (how === 'jpeg q40') return raw(sharp(await sharpOf(small).jpeg({ quality: 40 }).toBuffer()));
  const g = gaussian(seed);
  const data = Buffer.from(small.data);
  for (let i = 0; i < data.length; i++) data[i] = Math.max(0, Math.min(255, Math.round(data[i]! + 5 * g())));
  return { ...small, data };
}

function runModel(model: tf.LayersModel, range: number, input: Raster): Raster {
  const out = tf.tidy(() => {
    const x = tf.tensor3d(Float32Array.from(input.data), [input.height, input.width, 3]).div(255 / range).expandDims(0);
    const y = model.predict(x) as tf.Tensor4D;
    return y.mul(255 / range).clipByValue(0, 255).round().squeeze([0]);
  });
  const data = Buffer.from(out.dataSync());
  out.dispose();
  return { data, width: input.width * 2, height: input.height * 2, channels: 3 };
}

async function main(): Promise<void> {
  setWasmPaths(path.join(HERE, 'node_modules', '@tensorflow', 'tfjs-backend-wasm', 'dist') + path.sep);
  await tf.setBackend('wasm');
  await tf.ready();
  registerCustomLayers();
  const models = await Promise.all(MODELS.map(async (m) => ({ ...m, model: await loadModel(m.dir) })));
  const methods = ['centred Lanczos3', ...MODELS.map((m) => m.name)];
  // scores[degradation][method] = PSNR per crop
  const scores = new Map<Degradation, Map<string, number[]>>(DEGRADATIONS.map((d) => [d, new Map(methods.map((m) => [m, []]))]));
  const seconds = new Map<string, number>(MODELS.map((m) => [m.name, 0]));
  let inputPixels = 0;
  for (const [i, crop] of CROPS.entries()) {
    const { truth, small } = await cropAndReduce(crop);
    for (const how of DEGRADATIONS) {
      const input = await degrade(small, how, i + 1);
      scores.get(how)!.get('centred Lanczos3')!.push(lumaPsnr(centredLanczos3(input, 2), truth));
      for (const m of models) {
        const t0 = performance.now();
        const up = runModel(m.model, m.range, input);
        seconds.set(m.name, seconds.get(m.name)! + (performance.now() - t0) / 1000);
        scores.get(how)!.get(m.name)!.push(lumaPsnr(up, truth));
      }
      inputPixels += input.width * input.height;
      process.stderr.write(`${crop.name} / ${how} done\n`);
    }
  }
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const lines = [`| input | ${methods.join(' | ')} |`, `|---|${methods.map(() => '---:').join('|')}|`];
  for (const how of DEGRADATIONS) {
    const base = mean(scores.get(how)!.get('centred Lanczos3')!);
    const cells = methods.map((m) => {
      const v = mean(scores.get(how)!.get(m)!);
      return m === 'centred Lanczos3' ? v.toFixed(2) : `${v.toFixed(2)} (${v - base >= 0 ? '+' : ''}${(v - base).toFixed(2)})`;
    });
    lines.push(`| ${how} | ${cells.join(' | ')} |`);
  }
  const perMp = MODELS.map((m) => `${m.name} ${(seconds.get(m.name)! / (inputPixels / DEGRADATIONS.length / 1e6) / DEGRADATIONS.length).toFixed(1)} s`);
  process.stdout.write(`Mean luma PSNR (dB) of ${CROPS.length} crops, 2x; in brackets the difference from the centred Lanczos3.\n\n${lines.join('\n')}\n\nTime per input megapixel (WASM backend, ${tf.getBackend()}): ${perMp.join(', ')}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
