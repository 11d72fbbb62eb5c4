import type { Logger } from 'pino';
import type { Plan } from '../auth/repository.js';
import type { Queryable } from '../db/pool.js';
import type { FieldError } from '../core/errors.js';
import type { MediaBinaries } from '../media/binaries.js';

export type SlotKind = 'image' | 'video' | 'audio' | 'text' | 'element' | 'enum' | 'number' | 'bool';
export const MEDIA_KINDS: SlotKind[] = ['image', 'video', 'audio'];

export interface ToolSlot {
  name: string;
  kind: SlotKind;
  required: boolean;
  min: number;
  max: number;
  constraints?: Record<string, unknown>;
  choices?: string[] | null;
  default?: unknown;
}

/**
 * What a media file contributes to a price, from its probe. The fields a price follows besides
 * size and length may be absent or null (not known: a row probed before they were recorded);
 * prices then take the dearest value the upload limits allow.
 */
export interface MediaInfo {
  kind: 'image' | 'video' | 'audio' | 'other';
  width: number | null;
  height: number | null;
  durationSeconds: number | null;
  /** A video's rate as a run's ffmpeg works it (workingFrameRate). */
  frameRate?: number | null;
  /** A video's frames as the upload counted them (its packets). */
  frames?: number | null;
  /** An image's bands and bits per sample as decoded. */
  channels?: number | null;
  bitsPerSample?: number | null;
}

/** Inputs as the pricing function sees them: plain values with defaults applied, media resolved. */
export interface PricingInput {
  values: Record<string, unknown>;
  media: Record<string, MediaInfo[]>;
  /** The body's duration_seconds hint, for metered video tools before a file is known. */
  durationHint: number | null;
}

export interface ToolManifest {
  id: string;
  name: string;
  description: string;
  family: string;
  outputKind: 'image' | 'video' | 'audio' | 'json';
  consent: 'none' | 'voice' | 'face';
  productId: string;
  inputs: ToolSlot[];
  /** Plans whose teams may run the tool. */
  plans: Plan[];
  /** Multi-step pipelines are not listed and cannot be started over the API. */
  pipeline: boolean;
  /** Sparks for these inputs; an integer >= 1. */
  price(input: PricingInput): number;
  /**
   * The cheapest and the dearest inputs the tool accepts (its slots' bounds, media within the
   * upload limits, and its validate()): estimate_hint prices them with price(), so the hint
   * contains what any run costs. A test prices many random valid inputs against the two.
   */
  priceRange: { cheapest: PricingInput; dearest: PricingInput };
  /** Checks across slots or against probed media (422 entries), after the per-slot checks. */
  validate?(input: PricingInput): FieldError[];
  /** The work itself; a tool without one is listed but fails its runs. */
  run?: ToolRunner;
  /** The longest a run may take before it is stopped and failed. */
  timeoutSeconds?: number;
  /** Runs in the transaction that marks the run succeeded (e.g. saving a brand kit on the team). */
  onSucceeded?(tx: Queryable, run: { id: string; teamId: string; values: Record<string, unknown> }, outputs: ToolOutput[]): Promise<void>;
}

/** One input file as a runner sees it: a local copy of its bytes plus what the probe found. */
export interface InputFile {
  fileId: string;
  path: string;
  fileName: string;
  mime: string | null;
  info: MediaInfo;
}

export interface RunContext {
  runId: string;
  teamId: string;
  /** Plain slot values with defaults applied (media slots hold file ids). */
  values: Record<string, unknown>;
  /** Media slots' files, local copies, in the order given. */
  files: Record<string, InputFile[]>;
  /** A fresh directory for outputs, deleted after the run. */
  workDir: string;
  signal: AbortSignal;
  /** Reports progress from 0 to 1; calls may be frequent, they are throttled. */
  progress(fraction: number): void;
  media: MediaBinaries;
  logger: Logger;
  /** Rules for outbound requests (the shared module in src/net/outbound.ts). */
  outbound: { allowPrivate: boolean };
  /** Chromium for tools that render pages (TOOLRUN_BROWSER_PATH); null or absent: they read pages without a browser. */
  browserPath?: string | null;
  /** The most memory one render's processes may use together, in MB (TOOLRUN_BROWSER_MEMORY_MB); absent: the default. */
  browserMemoryMb?: number;
  /** Bounds from the configuration: ffmpeg threads and the largest output a tool may write. */
  limits: { ffmpegThreads: number; maxOutputBytes: number };
}

/** A file the runner made in workDir, to become one of the run's outputs. */
export interface ToolOutput {
  path: string;
  fileName: string;
  mimeType: string;
  /** The parsed content of a JSON output, for onSucceeded. */
  data?: unknown;
  /**
   * What the encoder reported for an image it encoded in memory and the runner then wrote whole:
   * the engine checks the file against it (its length, type and header size) instead of decoding
   * it a second time, and takes the checksum from here (docs/decisions.md, "Outputs the encoder
   * vouches for").
   */
  encoded?: EncodedImage;
  /**
   * What a video tool's own ffmpeg wrote, once it had exited 0: the engine checks the file's header
   * against it (one ffprobe, nothing decoded) instead of decoding a frame and scanning its packets
   * (docs/decisions.md, "Video outputs the encoder vouches for"). Separate from `encoded`: an image
   * vouch carries the encoder's checksum, a video one cannot (ffmpeg wrote the file, not us).
   */
  encodedVideo?: EncodedVideo;
}

export interface EncodedImage {
  bytes: number;
  /** Hex SHA-256 of the encoder's bytes. */
  sha256: string;
  width: number;
  height: number;
}

export interface EncodedVideo {
  /** The file's length once the encoder had exited 0. */
  bytes: number;
  /** The frame size and codec (ffprobe's codec_name) the tool asked the encoder for. */
  width: number;
  height: number;
  codec: string;
  /**
   * The video's length in seconds the encoder was asked for: one value (min = max) when the tool
   * fixes the frames, a range when the input's own timing passes through.
   */
  seconds: { min: number; max: number };
  /** Frames written, when the tool knows the exact count; null when the input's timing passes through. */
  frames: number | null;
}

export type ToolRunner = (ctx: RunContext) => Promise<ToolOutput[]>;

// Defined on the ground floor so media (ffmpeg) can raise it without importing tools.
export { ToolError } from '../core/errors.js';

export function image(width: number, height: number): MediaInfo {
  return { kind: 'image', width, height, durationSeconds: null };
}

/** A probed video; durationSeconds null when the probe could not tell the length. */
export function video(width: number, height: number, durationSeconds: number | null): MediaInfo {
  return { kind: 'video', width, height, durationSeconds };
}

export function megapixels(m: MediaInfo | undefined): number {
  return m && m.width && m.height ? (m.width * m.height) / 1_000_000 : 0;
}

export function numberValue(input: PricingInput, slot: string, fallback: number): number {
  const v = input.values[slot];
  return typeof v === 'number' ? v : fallback;
}

export function stringValue(input: PricingInput, slot: string, fallback: string): string {
  const v = input.values[slot];
  return typeof v === 'string' ? v : fallback;
}
