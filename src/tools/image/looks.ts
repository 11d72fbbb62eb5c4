import { contrastCurve, linearToSrgb, shoulder, tabulate, temperatureGains } from './color.js';

/**
 * The colour grade's presets ("looks") and how a look plus the sliders become one plan of
 * per-pixel operations. Order of operations, per pixel:
 *   1. decode sRGB to linear light;
 *   2. linear gains: white balance (temperature) x exposure (2^stops) x vignette;
 *   3. saturation in linear light around Rec. 709 luminance (0 = monochrome);
 *   4. a highlight shoulder when gains can push values past 1 (instead of a hard clip);
 *   5. per channel tone curve on display values: sRGB encode, contrast S curve around mid-grey,
 *      split toning, then black and white points (a matte look lifts the black point);
 *   6. luminance grain (the same noise on all channels, strongest in the midtones);
 *   7. quantise.
 */

export const PRESETS = ['natural', 'warm_film', 'cool_matte', 'bw_16mm', 'none'] as const;
export type PresetName = (typeof PRESETS)[number];

export type Rgb = [number, number, number];

export interface Look {
  /** Added to the temperature slider (same units). */
  temperature: number;
  /** Stops, added to the exposure slider. */
  exposure: number;
  /** Slope of the tone curve at mid-grey (1 = unchanged); the contrast slider multiplies it. */
  contrast: number;
  /** Saturation multiplier (1 = unchanged); the saturation slider multiplies it. */
  saturation: number;
  /** Monochrome whatever the saturation slider says. */
  mono: boolean;
  /** Display value black is mapped to, per channel (matte looks lift it). */
  black: Rgb;
  /** Display value white is mapped to, per channel. */
  white: Rgb;
  /** Display offsets added mostly in the shadows / mostly in the highlights (split toning). */
  shadowTint: Rgb;
  highlightTint: Rgb;
  /** Grain like the slider's 0..100, added to it. */
  grain: number;
  /** How much the corners are darkened in linear light (0..1). */
  vignette: number;
}

const NEUTRAL: Look = {
  temperature: 0,
  exposure: 0,
  contrast: 1,
  saturation: 1,
  mono: false,
  black: [0, 0, 0],
  white: [1, 1, 1],
  shadowTint: [0, 0, 0],
  highlightTint: [0, 0, 0],
  grain: 0,
  vignette: 0,
};

export const LOOKS: Record<PresetName, Look> = {
  none: NEUTRAL,
  // A clean, slightly richer rendering: a gentle S curve, a little more saturation, a hint of warmth.
  natural: { ...NEUTRAL, temperature: 4, contrast: 1.08, saturation: 1.05, white: [0.99, 0.99, 0.99] },
  // Colour negative film printed warm: warm balance, softer saturation, film's curve with lifted
  // warm blacks and creamy (rolled-off, slightly yellow) highlights, light grain and vignette.
  warm_film: {
    ...NEUTRAL,
    temperature: 25,
    contrast: 1.15,
    saturation: 0.92,
    black: [0.04, 0.035, 0.03],
    white: [0.98, 0.965, 0.93],
    highlightTint: [0.02, 0.006, -0.02],
    grain: 10,
    vignette: 0.15,
  },
  // Cool balance, low contrast and saturation, blacks lifted well off zero with a blue cast.
  cool_matte: {
    ...NEUTRAL,
    temperature: -30,
    contrast: 0.88,
    saturation: 0.78,
    black: [0.075, 0.085, 0.105],
    white: [0.93, 0.945, 0.96],
    shadowTint: [-0.005, 0, 0.01],
  },
  // Black-and-white 16 mm reversal stock: monochrome, punchy curve, a little base density in the
  // blacks, strong grain and a soft vignette from the small gauge's lenses.
  bw_16mm: {
    ...NEUTRAL,
    contrast: 1.3,
    saturation: 0,
    mono: true,
    black: [0.035, 0.035, 0.035],
    white: [0.97, 0.97, 0.97],
    grain: 35,
    vignette: 0.45,
  },
};

export interface GradeSettings {
  temperature: number;
  contrast: number;
  saturation: number;
  exposure: number;
  grain: number;
  preset: PresetName;
}

export const DEFAULT_SETTINGS: GradeSettings = { temperature: 0, contrast: 0, saturation: 0, exposure: 0, grain: 0, preset: 'none' };

/** Everything the pixel loop needs, precomputed. */
export interface GradePlan {
  /** Linear gains per channel: white balance x exposure. */
  gains: Rgb;
  /** Saturation factor in linear light (1 = unchanged, 0 = monochrome). */
  saturation: number;
  /** Highlight shoulder for linear values past 1, or null when a clamp is exact. */
  shoulder: ((x: number) => number) | null;
  /** Per channel: linear 0..1 (after the shoulder) to display 0..1. */
  curves: [Float32Array, Float32Array, Float32Array];
  /** Grain standard deviation at the midtones, in display units (0 = none). */
  grain: number;
  /** Vignette strength (0 = none). */
  vignette: number;
}

/** Grain standard deviation at grain 100, in display units (about 23 of 255 levels). */
const GRAIN_AT_100 = 0.09;
/** Slider 100 on contrast doubles the mid-grey slope; -100 halves it. */
const CONTRAST_OCTAVES = 1;

export function planGrade(s: GradeSettings): GradePlan {
  const look = LOOKS[s.preset];
  const wb = temperatureGains(look.temperature + s.temperature);
  const exposure = Math.pow(2, look.exposure + s.exposure);
  const gains: Rgb = [wb[0] * exposure, wb[1] * exposure, wb[2] * exposure];
  const saturation = look.mono ? 0 : look.saturation * (1 + s.saturation / 100);
  const gamma = look.contrast * Math.pow(2, (CONTRAST_OCTAVES * s.contrast) / 100);
  const curve = (c: 0 | 1 | 2) =>
    tabulate((x) => {
      let v = contrastCurve(linearToSrgb(x), gamma);
      v += look.shadowTint[c] * (1 - v) * (1 - v) + look.highlightTint[c] * v * v;
      v = look.black[c] + (look.white[c] - look.black[c]) * v;
      return v < 0 ? 0 : v > 1 ? 1 : v;
    });
  const grain = (GRAIN_AT_100 * Math.min(100, look.grain + s.grain)) / 100;
  return {
    gains,
    saturation,
    shoulder: shoulder(Math.max(...gains)),
    curves: [curve(0), curve(1), curve(2)],
    grain,
    vignette: look.vignette,
  };
}

/** Settings from a run's values (defaults applied by the engine; filled here too when absent). */
export function settingsFrom(values: Record<string, unknown>): GradeSettings {
  const num = (k: Exclude<keyof GradeSettings, 'preset'>): number => {
    const v = values[k];
    return typeof v === 'number' && Number.isFinite(v) ? v : DEFAULT_SETTINGS[k];
  };
  const p = values.preset;
  const preset = typeof p === 'string' && (PRESETS as readonly string[]).includes(p) ? (p as PresetName) : 'none';
  return { temperature: num('temperature'), contrast: num('contrast'), saturation: num('saturation'), exposure: num('exposure'), grain: num('grain'), preset };
}
