// Random valid inputs of a tool, as pricing sees them: slot values within their constraints and
// media within the upload limits (the probe's picture bounds and longest length), for checking
// that estimate_hint contains what any run costs.
import { randomUUID } from 'node:crypto';
import { prng } from '../../scripts/topology/load.js';
import { DEFAULT_PROBE_LIMITS, MAX_FRAME_RATE, MAX_MEDIA_SECONDS, MAX_VIDEO_PIXELS } from '../../src/media/probe.js';
import { MEDIA_KINDS, type MediaInfo, type PricingInput, type ToolManifest, type ToolSlot } from '../../src/tools/manifest.js';

/** A seeded generator, so a failing sample can be replayed from its seed. */
export const seeded = prng;

type Rnd = () => number;

/** Often a bound itself, otherwise spread evenly on a log scale (small and large sizes alike). */
function logBetween(rnd: Rnd, lo: number, hi: number): number {
  const r = rnd();
  if (r < 0.1) return lo;
  if (r < 0.2) return hi;
  return Math.exp(Math.log(lo) + rnd() * (Math.log(hi) - Math.log(lo)));
}

function imageInfo(rnd: Rnd): MediaInfo {
  // The probe refuses images past maxImagePixels (16383 x 16383).
  const side = Math.floor(Math.sqrt(DEFAULT_PROBE_LIMITS.maxImagePixels));
  const info: MediaInfo = { kind: 'image', width: Math.round(logBetween(rnd, 1, side)), height: Math.round(logBetween(rnd, 1, side)), durationSeconds: null };
  // Sometimes not known (a row probed before they were recorded); otherwise 1 to 5 bands of 8 to 64 bits.
  if (rnd() < 0.2) return info;
  return { ...info, channels: 1 + Math.floor(rnd() * 5), bitsPerSample: [8, 16, 32, 64][Math.floor(rnd() * 4)]! };
}

function videoInfo(rnd: Rnd): MediaInfo {
  let width = 0;
  let height = 0;
  do {
    width = 2 * Math.round(logBetween(rnd, 1, 4096));
    height = 2 * Math.round(logBetween(rnd, 1, 4096));
  } while (width * height > MAX_VIDEO_PIXELS);
  // The probe may not tell a length; otherwise uploads are at most MAX_MEDIA_SECONDS long.
  const durationSeconds = rnd() < 0.1 ? null : logBetween(rnd, 0.01, MAX_MEDIA_SECONDS);
  const info: MediaInfo = { kind: 'video', width, height, durationSeconds };
  // Rate and frame count: sometimes not known (rows probed before they were recorded); the probe
  // takes at most MAX_FRAME_RATE frames a second of length (240 in any file under a second).
  if (rnd() < 0.2) return info;
  const frames = Math.max(1, Math.round(logBetween(rnd, 1, MAX_FRAME_RATE * Math.max(1, durationSeconds ?? 1))));
  return { ...info, frameRate: rnd() < 0.1 ? null : logBetween(rnd, 0.5, MAX_FRAME_RATE), frames };
}

function audioInfo(rnd: Rnd): MediaInfo {
  return { kind: 'audio', width: null, height: null, durationSeconds: rnd() < 0.1 ? null : logBetween(rnd, 0.01, MAX_MEDIA_SECONDS) };
}

function scalar(slot: ToolSlot, rnd: Rnd): unknown {
  const c = slot.constraints ?? {};
  switch (slot.kind) {
    case 'number': {
      const min = typeof c.minimum === 'number' ? c.minimum : -1e6;
      const max = typeof c.maximum === 'number' ? c.maximum : 1e6;
      const r = rnd();
      return r < 0.1 ? min : r < 0.2 ? max : min + rnd() * (max - min);
    }
    case 'enum': {
      const choices = slot.choices ?? [];
      return choices[Math.floor(rnd() * choices.length)];
    }
    case 'bool':
      return rnd() < 0.5;
    default:
      return Array.isArray(c.schemes) ? `https://example.com/${Math.floor(rnd() * 1000)}` : 'some text';
  }
}

/**
 * Pricing input of one random set of inputs, with defaults applied as resolveInputs applies them.
 * Sometimes (as an estimate may) a video slot is left out for a duration_seconds hint of up to
 * the longest upload. Whether the tool accepts it is for its validate() to say.
 */
export function sampleInput(tool: ToolManifest, rnd: Rnd): PricingInput {
  const values: Record<string, unknown> = {};
  const media: Record<string, MediaInfo[]> = {};
  let durationHint: number | null = null;
  for (const slot of tool.inputs) {
    if (slot.kind === 'video' && rnd() < 0.15) {
      durationHint = logBetween(rnd, 0.01, MAX_MEDIA_SECONDS);
      continue;
    }
    if (!slot.required && rnd() < 0.4) {
      if (slot.default !== undefined) values[slot.name] = slot.default;
      continue;
    }
    if (MEDIA_KINDS.includes(slot.kind) || slot.kind === 'element') {
      const n = slot.min + Math.floor(rnd() * (slot.max - slot.min + 1));
      values[slot.name] = Array.from({ length: n }, () => randomUUID());
      const make = slot.kind === 'image' ? imageInfo : slot.kind === 'video' ? videoInfo : audioInfo;
      if (slot.kind !== 'element') media[slot.name] = Array.from({ length: n }, () => make(rnd));
      continue;
    }
    values[slot.name] = scalar(slot, rnd);
  }
  return { values, media, durationHint };
}
