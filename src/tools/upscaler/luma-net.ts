import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { NetThread } from './net-thread.js';

// The learned x2 and x4 luma upscalers (training/upscaler/, docs/decisions.md "A learned
// upscaler"): small networks whose ONNX files ship in models/, run by onnxruntime-node's CPU build in a worker
// thread. The image is cut into strips of rows and each strip into tiles, every tile with a halo
// as wide as the network sees (8 layers of 3x3: 8 input pixels) so the tiled result is the
// untiled one; the caller takes each strip's rows as they come and memory holds one strip.

/** Input pixels the image networks see on each side of the one they compute (their receptive radius). */
export const HALO = 8;
/** Tile width and strip height, in input pixels: ~6% recomputed for the halos, ~40 MB of activations. */
export const TILE = 512;
export const STRIP_ROWS = 256;

/** What the network gives: the correction to add to the Lanczos3 result, or that sum (the x2 model's luma2x, the x4 model's luma4x). */
export type LumaOutput = 'correction' | 'luma2x' | 'luma4x';

/** The factors a model ships for. */
export type LumaScale = 2 | 4;

/**
 * The models that ship: each factor's trained network (fp32, what training/upscaler/export.py
 * writes) and its int8 quantisation (quantize.py), which the service runs: about half the CPU for
 * a gain within a few thousandths of a decibel (docs/decisions.md, "The upscaler runs in int8").
 */
export type LumaPrecision = 'int8' | 'fp32';

/**
 * What a model was trained for: `any` input (reductions with JPEG artefacts, sensor noise and film
 * grain mixed in, so that it does not sharpen them), or `lossless` files (trained without JPEG
 * artefacts, which such a file cannot hold: more gain on them; docs/decisions.md "A second x4 model
 * for lossless inputs", "A model for lossless inputs at 2x"). Each factor ships one of each.
 */
export type LumaInputs = 'any' | 'lossless';

/** The model that ships for this factor and input; resolved from the package root (models/ sits beside src/ and dist/). */
export function defaultModelPath(scale: LumaScale = 2, precision: LumaPrecision = 'int8', inputs: LumaInputs = 'any'): string {
  const kind = inputs === 'lossless' ? '-lossless' : '';
  return fileURLToPath(new URL(`../../../models/upscaler-x${scale}${kind}${precision === 'int8' ? '-int8' : ''}.onnx`, import.meta.url));
}

/**
 * video_upscale's x2 network (issue 38 item 3; docs/decisions.md "A network for video frames"):
 * its convolutions run on the luma's 2x2 blocks (a quarter of the positions, about a fifth of the
 * image model's work), so the sides it takes must be even, and its 6 layers at half resolution see
 * 12 input pixels each way. It gives luma2x only.
 */
export const VIDEO_NET = { blocks: 2, halo: 12 } as const;

export function videoModelPath(precision: LumaPrecision = 'int8'): string {
  return fileURLToPath(new URL(`../../../models/upscaler-video-x2${precision === 'int8' ? '-int8' : ''}.onnx`, import.meta.url));
}

/** A luma plane the thread reads without a copy: w * h floats, 0..1. */
export function lumaPlane(width: number, height: number): Float32Array {
  return new Float32Array(new SharedArrayBuffer(width * height * 4));
}

export interface LumaNetOptions {
  /** The model's factor (each side); default 2. It must be the factor the model at modelPath was made for. */
  scale?: LumaScale;
  modelPath?: string;
  /** ONNX Runtime's threads; default the machine's cores, at most 4. */
  threads?: number;
  /** The model's receptive radius in input pixels (default HALO): each tile is cut with this much context. */
  halo?: number;
  /** Input sides must be multiples of this (2 for a network on 2x2 blocks); default 1. */
  blocks?: 1 | 2;
  /** The thread to run in (the process's shared networks share one); default a thread of its own. */
  thread?: NetThread;
}

export class LumaNet {
  readonly modelPath: string;
  readonly scale: LumaScale;
  readonly halo: number;
  readonly blocks: 1 | 2;
  private readonly threads: number;
  private readonly thread: NetThread;
  private readonly ownThread: boolean;

  constructor(opts: LumaNetOptions = {}) {
    this.scale = opts.scale ?? 2;
    this.modelPath = path.resolve(opts.modelPath ?? defaultModelPath(this.scale));
    this.threads = opts.threads ?? Math.min(4, Math.max(1, os.availableParallelism()));
    this.blocks = opts.blocks ?? 1;
    this.halo = opts.halo ?? HALO;
    // Tiles start at multiples of the tile size less the halo: all three even keeps every tile on the blocks.
    if (this.blocks === 2 && this.halo % 2 !== 0) throw new Error('a network on 2x2 blocks needs an even halo');
    this.ownThread = !opts.thread;
    this.thread = opts.thread ?? new NetThread();
  }

  private strip(luma: Float32Array, width: number, height: number, y0: number, y1: number, output: LumaOutput, tile: number): Promise<Float32Array> {
    return this.thread.strip({
      modelPath: this.modelPath,
      threads: this.threads,
      luma: luma.buffer as SharedArrayBuffer,
      width,
      height,
      y0,
      y1,
      output,
      tile,
      halo: this.halo,
      scale: this.scale,
    });
  }

  /**
   * Runs the network over a luma plane (from lumaPlane()), strip by strip: `take` gets output rows
   * n*y0 ... n*y1 (n*width floats each, n the model's scale) before the next strip starts. Stops between strips once
   * `signal` is aborted.
   */
  async run(
    luma: Float32Array,
    width: number,
    height: number,
    output: LumaOutput,
    take: (y0: number, rows: Float32Array) => void | Promise<void>,
    opts: { signal?: AbortSignal; tile?: number; stripRows?: number } = {},
  ): Promise<void> {
    if (!(luma.buffer instanceof SharedArrayBuffer)) throw new Error('the luma plane must come from lumaPlane()');
    const rows = opts.stripRows ?? STRIP_ROWS;
    const tile = opts.tile ?? TILE;
    if (width % this.blocks || height % this.blocks || rows % this.blocks || tile % this.blocks) {
      throw new Error(`this network takes sides, tiles and strips in multiples of ${this.blocks}`);
    }
    const ask = (y0: number) => this.strip(luma, width, height, y0, Math.min(height, y0 + rows), output, tile);
    opts.signal?.throwIfAborted();
    let next: Promise<Float32Array> | null = ask(0);
    for (let y0 = 0; next; y0 += rows) {
      const data: Float32Array = await next;
      opts.signal?.throwIfAborted();
      // The thread computes the next strip while `take` handles this one: two strips in memory at most.
      next = y0 + rows < height ? ask(y0 + rows) : null;
      // A strip asked for and no longer wanted (take failed) must not become an unhandled rejection.
      next?.catch(() => undefined);
      await take(this.scale * y0, data);
    }
  }

  /** Stops its own thread, or frees its session in a shared one (tests; a process that ends needs nothing). */
  async close(): Promise<void> {
    if (this.ownThread) await this.thread.close();
    else await this.thread.unload(this.modelPath);
  }
}

const processNets = new Map<string, LumaNet>();
let processThread: NetThread | null = null;

/** The one thread the process's shared networks run in, started on first use. */
function sharedThread(): NetThread {
  processThread ??= new NetThread();
  return processThread;
}

/**
 * The process's network with the shipped model of this factor and input, made on the first learned
 * run that needs it (the issue asks for one session per process, loaded lazily: all of them share
 * one thread, which keeps one session loaded); nothing is loaded at import.
 */
export function sharedLumaNet(scale: LumaScale = 2, inputs: LumaInputs = 'any'): LumaNet {
  const modelPath = defaultModelPath(scale, 'int8', inputs);
  let net = processNets.get(modelPath);
  if (!net) {
    net = new LumaNet({ scale, modelPath, thread: sharedThread() });
    processNets.set(modelPath, net);
  }
  return net;
}

/** The process's video network (VIDEO_NET), made on the first learned video run. */
export function sharedVideoNet(): LumaNet {
  const modelPath = videoModelPath();
  let net = processNets.get(modelPath);
  if (!net) {
    net = new LumaNet({ modelPath, ...VIDEO_NET, thread: sharedThread() });
    processNets.set(modelPath, net);
  }
  return net;
}
