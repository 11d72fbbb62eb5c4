// A centred Lanczos3 upscale by 2 or 4 built from libvips operations sharp exposes. libvips' own
// resize does not do this when upsizing: it switches to an affine transform with a bicubic
// interpolator whatever kernel is asked for, and samples half an output pixel off centre (issue 17).
//
// At n times every output pixel X maps to input u = (X + 0.5) / n - 0.5, so each of the n phases
// takes its own six or seven Lanczos3 weights (at 2x, offsets -2.75 ... 2.25 for even X and the
// mirror image for odd X). On the input replicated n times by nearest neighbour (each pixel copied
// into an n x n block, which libvips does exactly and centred), all phases are one position-
// invariant kernel (11 taps at 2x, 21 at 4x; replicatedKernel), so a plain convolution of the
// replicated image is the polyphase filter. Horizontal and vertical passes are separate, each on an
// image replicated in its own direction only.
//
// The first pass's result cannot be clamped to the pixel range without changing the answer at
// strong edges (Lanczos lobes overshoot), so it is stored scaled by FACTOR and shifted by OFFSET,
// which leaves room for values from about -48 to 292 at 2x and -65 to 320 at 4x (8 bits); the
// second pass undoes both. The shift and the rounding go through sharp's linear() (exact floats,
// truncated on output, hence the + 0.5), since its convolve takes only integer offsets.

const RADIUS = 3;

function lanczos3(x: number): number {
  if (x === 0) return 1;
  if (Math.abs(x) >= RADIUS) return 0;
  const px = Math.PI * x;
  return (RADIUS * Math.sin(px) * Math.sin(px / RADIUS)) / (px * px);
}

/**
 * Per output phase p of an n-times upscale (output n*i + p samples the input at i + f, with
 * f = (p + 0.5) / n - 0.5), the normalised weights of input offsets -3 ... +3.
 */
export function phaseWeights(scale: number): number[][] {
  return Array.from({ length: scale }, (_, p) => {
    const f = (p + 0.5) / scale - 0.5;
    const w = Array.from({ length: 2 * RADIUS + 1 }, (_, t) => lanczos3(t - RADIUS - f));
    const sum = w.reduce((a, b) => a + b, 0);
    return w.map((x) => x / sum);
  });
}

/**
 * The kernel of every phase at once on the n-times replicated signal, as sharp's convolve takes it
 * (odd length, centred; symmetric, so convolution and correlation agree). On the replicated signal
 * output X = n*i + p gives input i + d the sum of the n taps k[p - n*d - n + 1 ... p - n*d]; so
 * the running sum g = k * box(n) has g[p - n*d] = phase p's weight of offset d, one value for
 * every integer, and k[m] = g[m] - g[m - 1] + k[m - n] recovers the taps. The recursion ends
 * (k is finite) because every phase's weights sum to 1.
 */
export function replicatedKernel(scale = 2): number[] {
  const phases = phaseWeights(scale);
  // g[n] for n = p - scale * d, d = -3 ... 3
  const g = (n: number): number => {
    const p = ((n % scale) + scale) % scale;
    const d = (p - n) / scale;
    return Math.abs(d) <= RADIUS ? phases[p]![d + RADIUS]! : 0;
  };
  const lo = -scale * RADIUS - scale;
  const hi = scale * RADIUS + scale;
  const k = new Map<number, number>();
  for (let m = lo; m <= hi; m++) k.set(m, g(m) - g(m - 1) + (k.get(m - scale) ?? 0));
  let reach = 0;
  for (const [m, v] of k) if (Math.abs(v) > 1e-12) reach = Math.max(reach, Math.abs(m));
  return Array.from({ length: 2 * reach + 1 }, (_, t) => k.get(t - reach) ?? 0);
}

export interface Pass {
  /** For sharp's convolve: a true convolution, no scale, no offset. */
  kernel: { width: number; height: number; kernel: number[]; scale: 1; offset: 0 };
  /** For sharp's linear(), per band: out = in * 1 + add, then truncated (so add carries the rounding). */
  add: number;
}

/** Room for the overshoot: stored = value * FACTOR + OFFSET, within the sample range. */
const HEADROOM = {
  2: { uchar: { factor: 0.75, offset: 36 }, ushort: { factor: 0.75, offset: 8192 } },
  // 4x overshoots further (a phase's negative weights sum to -0.254): -64.8 ... 319.8 at 8 bits.
  4: { uchar: { factor: 0.66, offset: 43 }, ushort: { factor: 0.66, offset: 11000 } },
} as const;

export type LanczosScale = keyof typeof HEADROOM;

/**
 * The horizontal then the vertical pass for images of this sample depth. An image with alpha
 * gets no headroom: sharp premultiplies colour by alpha around a convolution, so a scaled and
 * shifted alpha from the first pass would weigh the colours of the second wrongly; its first
 * pass is clamped to the sample range instead (a difference from the reference only next to
 * edges whose lobes overshoot).
 */
export function lanczosPasses(scale: LanczosScale, depth: 'uchar' | 'ushort', opts: { alpha: boolean }): { horizontal: Pass; vertical: Pass } {
  const k = replicatedKernel(scale);
  const { factor, offset } = opts.alpha ? { factor: 1, offset: 0 } : HEADROOM[scale][depth];
  const zeros = new Array<number>(k.length).fill(0);
  return {
    horizontal: {
      kernel: { width: k.length, height: 3, kernel: [...zeros, ...k.map((v) => v * factor), ...zeros], scale: 1, offset: 0 },
      add: offset + 0.5,
    },
    vertical: {
      kernel: { width: 3, height: k.length, kernel: k.flatMap((v) => [0, v / factor, 0]), scale: 1, offset: 0 },
      add: -offset / factor + 0.5,
    },
  };
}
