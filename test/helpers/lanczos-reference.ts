// A textbook centred Lanczos3 resample, written here from the definition so that the tool's
// resampler is checked against something it does not share: output pixel X of an n-times larger
// image samples the input at u = (X + 0.5) / n - 0.5, weights L3(j - u) for the input pixels j
// within 3 of u (edge pixels repeated), normalised to sum 1; separable, in floating point, rounded
// and clamped once at the end.
import type { Raster } from './images.js';

function l3(x: number): number {
  if (x === 0) return 1;
  if (Math.abs(x) >= 3) return 0;
  const p = Math.PI * x;
  return (3 * Math.sin(p) * Math.sin(p / 3)) / (p * p);
}

/** Per output position: the input indices and weights. */
function taps(inSize: number, scale: number): { index: number[]; weight: number[] }[] {
  return Array.from({ length: inSize * scale }, (_, X) => {
    const u = (X + 0.5) / scale - 0.5;
    const index: number[] = [];
    const weight: number[] = [];
    for (let j = Math.floor(u) - 3; j <= Math.ceil(u) + 3; j++) {
      const w = l3(j - u);
      if (w === 0) continue;
      index.push(Math.min(inSize - 1, Math.max(0, j)));
      weight.push(w);
    }
    const sum = weight.reduce((a, b) => a + b, 0);
    return { index, weight: weight.map((w) => w / sum) };
  });
}

/** The input enlarged `scale` times each side (8-bit samples, any channel count). */
export function centredLanczos3(src: Raster, scale: number): Raster {
  const { width: w, height: h, channels: ch } = src;
  const W = w * scale;
  const H = h * scale;
  const across = taps(w, scale);
  const down = taps(h, scale);
  const rows = new Float64Array(W * h * ch);
  for (let y = 0; y < h; y++) {
    for (let X = 0; X < W; X++) {
      const t = across[X]!;
      for (let c = 0; c < ch; c++) {
        let s = 0;
        for (let k = 0; k < t.index.length; k++) s += t.weight[k]! * src.data[(y * w + t.index[k]!) * ch + c]!;
        rows[(y * W + X) * ch + c] = s;
      }
    }
  }
  const data = Buffer.alloc(W * H * ch);
  for (let Y = 0; Y < H; Y++) {
    const t = down[Y]!;
    for (let X = 0; X < W; X++) {
      for (let c = 0; c < ch; c++) {
        let s = 0;
        for (let k = 0; k < t.index.length; k++) s += t.weight[k]! * rows[(t.index[k]! * W + X) * ch + c]!;
        data[(Y * W + X) * ch + c] = Math.min(255, Math.max(0, Math.round(s)));
      }
    }
  }
  return { data, width: W, height: H, channels: ch };
}

/** PSNR in dB of two rasters of one shape over every sample, `border` pixels at each edge left out. */
export function psnr(a: Raster, b: Raster, border = 0): number {
  let se = 0;
  let n = 0;
  for (let y = border; y < a.height - border; y++) {
    for (let x = border; x < a.width - border; x++) {
      for (let c = 0; c < a.channels; c++) {
        const i = (y * a.width + x) * a.channels + c;
        const d = a.data[i]! - b.data[i]!;
        se += d * d;
        n++;
      }
    }
  }
  return se === 0 ? Infinity : 10 * Math.log10((255 * 255 * n) / se);
}
