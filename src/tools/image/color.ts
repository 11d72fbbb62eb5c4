import { createHash } from 'node:crypto';

/**
 * Colour maths for the grade: sRGB transfer functions, look-up tables, the tone curve pieces,
 * the white balance gains and a seeded noise source. Values are floats, 0..1 for display
 * (sRGB-encoded) values and 0..(>1) for linear light.
 */

/** Rec. 709 / sRGB luminance weights, for linear RGB. */
export const LUMA_R = 0.2126;
export const LUMA_G = 0.7152;
export const LUMA_B = 0.0722;

/** The sRGB decoding function (IEC 61966-2-1): display value 0..1 to linear light. */
export function srgbToLinear(v: number): number {
  return v <= 0.04045 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4);
}

/** The sRGB encoding function: linear light to display value, for 0..1. */
export function linearToSrgb(x: number): number {
  if (x <= 0) return 0;
  return x <= 0.0031308 ? x * 12.92 : 1.055 * Math.pow(x, 1 / 2.4) - 0.055;
}

/** Linear light of every code value of a sample depth: the decoder's table (256 or 65536 entries). */
export function decodeTable(maxCode: number): Float32Array {
  const t = new Float32Array(maxCode + 1);
  for (let i = 0; i <= maxCode; i++) t[i] = srgbToLinear(i / maxCode);
  return t;
}

/** Entries of a table over 0..1 read with linear interpolation. */
export const TABLE_SIZE = 4096;

/** Tabulates fn over 0..1 (TABLE_SIZE + 1 points, so 1 is an entry). */
export function tabulate(fn: (x: number) => number): Float32Array {
  const t = new Float32Array(TABLE_SIZE + 1);
  for (let i = 0; i <= TABLE_SIZE; i++) t[i] = fn(i / TABLE_SIZE);
  return t;
}

/** Reads a tabulate() table at x (clamped to 0..1) with linear interpolation. */
export function lookup(table: Float32Array, x: number): number {
  const p = (x <= 0 ? 0 : x >= 1 ? 1 : x) * TABLE_SIZE;
  const i = p | 0;
  if (i >= TABLE_SIZE) return table[TABLE_SIZE]!;
  const a = table[i]!;
  return a + (table[i + 1]! - a) * (p - i);
}

/** The display value of linear mid-grey (18 %): the pivot of the contrast curve. */
export const MID_GREY = linearToSrgb(0.18);

/**
 * A contrast curve on display values that keeps 0, 1 and the pivot fixed: power curves either
 * side of the pivot, with slope `gamma` at the pivot. gamma > 1 steepens the midtones (an S
 * curve: shadows down, highlights up); gamma < 1 flattens them.
 */
export function contrastCurve(v: number, gamma: number, pivot = MID_GREY): number {
  if (gamma === 1) return v;
  if (v <= 0) return 0;
  if (v >= 1) return 1;
  return v < pivot ? pivot * Math.pow(v / pivot, gamma) : 1 - (1 - pivot) * Math.pow((1 - v) / (1 - pivot), gamma);
}

/** smoothstep(0, 1, t) for t clamped to 0..1. */
export function smooth01(t: number): number {
  const c = t <= 0 ? 0 : t >= 1 ? 1 : t;
  return c * c * (3 - 2 * c);
}

/**
 * Linear-light white balance gains for a temperature shift (-100 cool .. +100 warm, and beyond
 * when a preset adds to the slider): red and blue move in opposite directions by up to half a
 * stop each at 100, then all three are scaled so that a neutral grey keeps its luminance.
 */
export function temperatureGains(temperature: number): [number, number, number] {
  const stops = (0.5 * temperature) / 100;
  const r = Math.pow(2, stops);
  const g = Math.pow(2, -0.06 * stops);
  const b = Math.pow(2, -stops);
  const y = LUMA_R * r + LUMA_G * g + LUMA_B * b;
  return [r / y, g / y, b / y];
}

/**
 * A highlight shoulder for linear values that gains may push past 1: identity up to `knee`, then
 * a rational (Reinhard-like) curve, continuous in value and slope, that reaches 1 at `max`.
 * Returns null when max <= 1 (nothing can exceed 1, so a plain clamp is exact).
 */
export function shoulder(max: number, knee = 0.8): ((x: number) => number) | null {
  if (max <= 1) return null;
  const range = 1 - knee;
  const k = 1 / range - 1 / (max - knee);
  return (x) => {
    if (x <= knee) return x;
    const d = x - knee;
    const y = knee + d / (1 + d * k);
    return y > 1 ? 1 : y;
  };
}

/**
 * A small fast PRNG (sfc32, 128-bit state) seeded from a string through SHA-256, so the grain of
 * a run is the same every time the run's id is the same.
 */
export class SeededNoise {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  constructor(seed: string) {
    const h = createHash('sha256').update(seed).digest();
    this.a = h.readUInt32LE(0);
    this.b = h.readUInt32LE(4);
    this.c = h.readUInt32LE(8);
    this.d = h.readUInt32LE(12) | 1;
    for (let i = 0; i < 12; i++) this.next();
  }

  /** Uniform in [0, 1). */
  next(): number {
    const t = (((this.a + this.b) | 0) + this.d) | 0;
    this.d = (this.d + 1) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.c = (this.c + t) | 0;
    return (t >>> 0) / 4294967296;
  }

  /** Roughly normal, mean 0 and standard deviation 1 (a sum of three uniforms, bounded at +-3). */
  gauss(): number {
    return (this.next() + this.next() + this.next() - 1.5) * 2;
  }
}
