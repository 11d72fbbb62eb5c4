// A centred Lanczos3 2x upscale built from libvips operations sharp exposes. libvips' own resize
// does not do this when upsizing: it switches to an affine transform with a bicubic interpolator
// whatever kernel is asked for, and samples half an output pixel off centre (issue 17).
//
// At 2x every output pixel sits a quarter of an input pixel from one input pixel: output X maps
// to input u = (X + 0.5) / 2 - 0.5, so even X take six Lanczos3 weights at offsets -2.75 ... 2.25
// and odd X the mirror image. On the input replicated 2x by nearest neighbour (each pixel copied
// into a 2x2 block, which libvips does exactly and centred), both phases are one position-
// invariant 13-tap kernel k with k[2d] + k[2d+1] = even weight d and k[2d-1] + k[2d] = odd weight
// d, so a plain convolution of the replicated image is the polyphase filter. Horizontal and
// vertical passes are separate (13 taps each, not 169), each on an image replicated in its own
// direction only.
//
// The first pass's result cannot be clamped to the pixel range without changing the answer at
// strong edges (Lanczos lobes overshoot), so it is stored scaled by FACTOR and shifted by OFFSET,
// which leaves room for values from about -48 to 292 (8 bits); the second pass undoes both. The
// shift and the rounding go through sharp's linear() (exact floats, truncated on output, hence the
// + 0.5), since its convolve takes only integer offsets.

const TAPS = 6;
const RADIUS = 3;

function lanczos3(x: number): number {
  if (x === 0) return 1;
  if (Math.abs(x) >= RADIUS) return 0;
  const px = Math.PI * x;
  return (RADIUS * Math.sin(px) * Math.sin(px / RADIUS)) / (px * px);
}

/** The six weights of an even output pixel, for input offsets -3 ... +2 (normalised to sum 1). */
export function evenPhaseWeights(): number[] {
  const w = Array.from({ length: TAPS }, (_, t) => lanczos3(t - RADIUS + 0.25));
  const sum = w.reduce((a, b) => a + b, 0);
  return w.map((x) => x / sum);
}

/** The 13-tap kernel of both phases on the 2x-replicated signal, as sharp's convolve takes it (true convolution). */
export function replicatedKernel(): number[] {
  const even = evenPhaseWeights();
  const odd = [...even].reverse();
  // c[m] for m = -6 ... 5: the sum of two neighbouring kernel taps.
  const c = (m: number): number => (m % 2 === 0 ? (even[m / 2 + RADIUS] ?? 0) : (odd[(m + 1) / 2 + 2] ?? 0));
  const k = new Map<number, number>([[-6, 0]]);
  for (let m = -6; m <= 5; m++) k.set(m + 1, c(m) - (k.get(m) ?? 0));
  // Symmetric, so flipping it for a true convolution changes nothing; done anyway for clarity.
  return Array.from({ length: 13 }, (_, t) => k.get(6 - t) ?? 0);
}

export interface Pass {
  /** For sharp's convolve: a true convolution, no scale, no offset. */
  kernel: { width: number; height: number; kernel: number[]; scale: 1; offset: 0 };
  /** For sharp's linear(), per band: out = in * 1 + add, then truncated (so add carries the rounding). */
  add: number;
}

/** Room for the overshoot: stored = value * FACTOR + OFFSET, within the sample range. */
const HEADROOM = { uchar: { factor: 0.75, offset: 36 }, ushort: { factor: 0.75, offset: 8192 } } as const;

/**
 * The horizontal then the vertical pass for images of this sample depth. An image with alpha
 * gets no headroom: sharp premultiplies colour by alpha around a convolution, so a scaled and
 * shifted alpha from the first pass would weigh the colours of the second wrongly; its first
 * pass is clamped to the sample range instead (a difference from the reference only next to
 * edges whose lobes overshoot).
 */
export function lanczos2xPasses(depth: 'uchar' | 'ushort', opts: { alpha: boolean }): { horizontal: Pass; vertical: Pass } {
  const k = replicatedKernel();
  const { factor, offset } = opts.alpha ? { factor: 1, offset: 0 } : HEADROOM[depth];
  const zeros = new Array<number>(13).fill(0);
  return {
    horizontal: {
      kernel: { width: 13, height: 3, kernel: [...zeros, ...k.map((v) => v * factor), ...zeros], scale: 1, offset: 0 },
      add: offset + 0.5,
    },
    vertical: {
      kernel: { width: 3, height: 13, kernel: k.flatMap((v) => [0, v / factor, 0]), scale: 1, offset: 0 },
      add: -offset / factor + 0.5,
    },
  };
}
