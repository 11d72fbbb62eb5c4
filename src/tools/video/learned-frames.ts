import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs/promises';
import type { Readable, Writable } from 'node:stream';
import type { MediaBinaries } from '../../media/binaries.js';
import { abortError, boundedThreads, ffmpegErrorLine, INPUT_FORMATS, jobCommand, sizeText, type NamedInput, type VideoFacts } from '../../media/ffmpeg.js';
import { MAX_VIDEO_PIXELS } from '../../media/limits.js';
import { LENGTH_TOLERANCE_SECONDS } from '../../media/measure.js';
import { ToolError } from '../manifest.js';
import { lumaPlane, type LumaNet } from '../upscaler/luma-net.js';

// video_upscale's learned path (issue 28; docs/decisions.md "video_upscale: the learned path"):
// two ffmpeg processes with this process between them, one frame at a time.
//
//   decoder: the input (read no further than its priced length) -> constant rate at the probed
//            rate -> yuv444p at the source size -> raw frames on stdout
//   here:    Y -> floats / 255 -> the video network's 2x luma -> 8 bits; U and V, W x H, are
//            exactly the chroma planes of a 2W x 2H yuv420p frame, so they pass as they are
//   encoder: raw 2W x 2H yuv420p frames on stdin (+ the input's first audio stream) -> Lanczos to
//            the target height when 2H is not it -> the Lanczos path's H.264 / MP4 settings
//
// yuv444p makes odd sizes need nothing: a W x H source gives a 2W x 2H frame, even both ways,
// whose 4:2:0 chroma is the source's full chroma. Memory holds one decoded frame, one frame in the
// network and at most two enlarged frames (one being written); the pipes carry the backpressure.
// Both processes are started through jobCommand (a parent-death signal) and killed with SIGKILL
// on cancel, on the time limit and on any failure, and the run settles only after both exited.

const STDERR_KEEP = 64 * 1024;

export interface LearnedJob {
  bins: MediaBinaries;
  input: NamedInput;
  facts: VideoFacts;
  targetHeight: number;
  /** The encoder's codec and muxer arguments (H.264, audio, MP4), as the Lanczos path gives them. */
  encodeArgs: string[];
  output: string;
  signal: AbortSignal;
  timeLimitMs: number;
  maxOutputBytes: number;
  threads?: number;
  net: LumaNet;
  /** The frames the run was priced for (upscale-work.ts): the decoder gives no more. */
  maxFrames?: number;
  /** Frames done / frames expected (from the length and the rate), only ever increasing; 1 at the end. */
  onProgress(fraction: number): void;
}

/** Frames the decoder should give: the length at the probed rate (at least one). */
export function expectedFrames(facts: VideoFacts): number {
  return Math.max(1, Math.round((facts.durationSeconds * facts.fps.num) / facts.fps.den));
}

/** The decoder's command line: constant rate (the encoder's input has no timestamps), yuv444p, source size, at most `maxFrames`. */
export function decoderArgs(input: NamedInput, facts: VideoFacts, threads: string, maxFrames?: number): string[] {
  const args = ['-hide_banner', '-nostdin', '-nostats', '-v', 'error', '-xerror'];
  if (input.pricedSeconds !== undefined) args.push('-t', (input.pricedSeconds + LENGTH_TOLERANCE_SECONDS).toFixed(3));
  args.push('-protocol_whitelist', 'file', '-format_whitelist', INPUT_FORMATS, '-max_pixels', String(MAX_VIDEO_PIXELS), '-threads', threads, '-i', input.path);
  const rate = `${facts.fps.num}/${facts.fps.den}`;
  // The scale to the probed size keeps every frame the size this side cuts the pipe by, even if
  // the stream changes size part-way (the probe's size is after rotation, as the decoder's frames are).
  const filter = `scale=${facts.width}:${facts.height}:flags=lanczos,format=yuv444p`;
  args.push('-filter_threads', threads, '-map', '0:v:0', '-an', '-sn', '-dn', '-vf', filter, '-vsync', 'cfr', '-r', rate);
  if (maxFrames !== undefined) args.push('-frames:v', String(maxFrames));
  args.push('-f', 'rawvideo', '-pix_fmt', 'yuv444p', '-threads', threads, 'pipe:1');
  return args;
}

/** The encoder's command line: the enlarged frames from stdin, the audio from the input file. */
export function encoderArgs(job: Pick<LearnedJob, 'input' | 'facts' | 'targetHeight' | 'encodeArgs' | 'output' | 'maxOutputBytes'>, threads: string): string[] {
  const { input, facts } = job;
  const args = ['-hide_banner', '-nostdin', '-nostats', '-v', 'error', '-xerror', '-y'];
  args.push('-f', 'rawvideo', '-pix_fmt', 'yuv420p', '-video_size', `${2 * facts.width}x${2 * facts.height}`, '-framerate', `${facts.fps.num}/${facts.fps.den}`, '-i', 'pipe:0');
  if (input.pricedSeconds !== undefined) args.push('-t', (input.pricedSeconds + LENGTH_TOLERANCE_SECONDS).toFixed(3));
  args.push('-protocol_whitelist', 'file', '-format_whitelist', INPUT_FORMATS, '-max_pixels', String(MAX_VIDEO_PIXELS), '-threads', threads, '-i', input.path);
  args.push('-filter_threads', threads, '-map', '0:v:0', '-map', '1:a:0?');
  // Exactly 2x needs no resample; otherwise the same Lanczos as the other path, width even.
  if (2 * facts.height !== job.targetHeight) args.push('-vf', `scale=-2:${job.targetHeight}:flags=lanczos`);
  args.push('-vsync', 'passthrough', ...job.encodeArgs, '-threads', threads, '-fs', String(job.maxOutputBytes), job.output);
  return args;
}

interface Child {
  proc: ChildProcess;
  /** Resolves with the exit code (null when killed) once the process has exited and been reaped. */
  exited: Promise<number | null>;
  stderr(): string;
}

function start(bins: MediaBinaries, args: string[], stdio: ['ignore' | 'pipe', 'ignore' | 'pipe', 'pipe']): Child {
  const [cmd, argv] = jobCommand(bins, bins.ffmpeg, args);
  const proc = spawn(cmd, argv, { stdio });
  let stderr = '';
  proc.stderr?.setEncoding('utf8');
  proc.stderr?.on('data', (chunk: string) => {
    stderr = (stderr + chunk).slice(-STDERR_KEEP);
  });
  const exited = new Promise<number | null>((resolve) => {
    proc.once('error', () => resolve(null));
    proc.once('close', (code) => resolve(code));
  });
  return { proc, exited, stderr: () => stderr };
}

/** The decoder's output ended inside a frame; its exit code usually says why. */
class PartialFrame extends Error {}

/**
 * Yields the stream cut into `size`-byte frames, each in the same buffer (the consumer is done
 * with one before asking for the next). Pulling on demand is the backpressure: the decoder blocks
 * on a full pipe while a frame is in the network.
 */
async function* frames(stream: Readable, size: number): AsyncGenerator<Buffer> {
  const frame = Buffer.allocUnsafe(size);
  let filled = 0;
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    let at = 0;
    while (at < chunk.length) {
      const n = Math.min(size - filled, chunk.length - at);
      chunk.copy(frame, filled, at, at + n);
      filled += n;
      at += n;
      if (filled === size) {
        yield frame;
        filled = 0;
      }
    }
  }
  if (filled) throw new PartialFrame('the decoder stopped part-way through a frame');
}

/** The encoder closed its input early (it failed, or -fs stopped it): its own exit says why. */
class EncoderGone extends Error {}

/** Resolves when `stream` may take more (at once when its buffer is below the mark); rejects with EncoderGone when it breaks. */
function writable(stream: Writable): Promise<void> {
  if (!stream.writableNeedDrain) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const settle = (gone: boolean) => {
      stream.off('drain', ok);
      stream.off('close', broken);
      stream.off('error', broken);
      if (gone) reject(new EncoderGone());
      else resolve();
    };
    const ok = () => settle(false);
    const broken = () => settle(true);
    stream.on('drain', ok);
    stream.on('close', broken);
    stream.on('error', broken);
  });
}

/** The frame's luma (w x h bytes) into the network's plane (pw x ph floats, 0..1), the last column and row repeated where the plane is wider or taller. */
function toPlane(frame: Uint8Array, w: number, h: number, plane: Float32Array, pw: number, ph: number): void {
  if (pw === w) {
    for (let i = 0; i < w * h; i++) plane[i] = frame[i]! / 255;
  } else {
    for (let y = 0; y < h; y++) {
      const from = y * w;
      const to = y * pw;
      for (let x = 0; x < w; x++) plane[to + x] = frame[from + x]! / 255;
      for (let x = w; x < pw; x++) plane[to + x] = plane[to + w - 1]!;
    }
  }
  for (let y = h; y < ph; y++) plane.copyWithin(y * pw, (h - 1) * pw, h * pw);
}

/** Output rows from output row y0 (rows.length / rowWidth of them, rowWidth wide) into the frame's luma (ow x oh bytes), the columns and rows past it left out. */
function fromRows(rows: Float32Array, y0: number, luma: Uint8ClampedArray, ow: number, oh: number, rowWidth: number): void {
  // Uint8ClampedArray rounds (half to even) and clamps to 0..255.
  const n = Math.min(rows.length / rowWidth, oh - y0);
  if (rowWidth === ow) {
    const at = y0 * ow;
    for (let i = 0; i < n * ow; i++) luma[at + i] = rows[i]! * 255;
    return;
  }
  for (let r = 0; r < n; r++) {
    const at = (y0 + r) * ow;
    const from = r * rowWidth;
    for (let x = 0; x < ow; x++) luma[at + x] = rows[from + x]! * 255;
  }
}

/**
 * Runs the learned upscale to a finished output file and resolves with the frames the encoder was
 * given (and, exiting 0, wrote: -vsync passthrough), or rejects (ToolError for the run's `error`,
 * AbortError on cancel).
 */
export async function runLearned(job: LearnedJob): Promise<number> {
  if (job.signal.aborted) throw abortError();
  const { facts } = job;
  const threads = String(boundedThreads(job.threads));
  const w = facts.width;
  const h = facts.height;
  const decoder = start(job.bins, decoderArgs(job.input, facts, threads, job.maxFrames), ['ignore', 'pipe', 'pipe']);
  const encoder = start(job.bins, encoderArgs(job, threads), ['pipe', 'ignore', 'pipe']);
  let stop: Error | null = null;
  const kill = (why: Error) => {
    stop ??= why;
    // SIGKILL at once, both: a cancel frees the CPU now, and a half-written output is discarded anyway.
    decoder.proc.kill('SIGKILL');
    encoder.proc.kill('SIGKILL');
  };
  const decoderFailed = () => new ToolError(`The video could not be processed: ${ffmpegErrorLine(decoder.stderr(), [job.input])}`);
  const onAbort = () => kill(abortError());
  job.signal.addEventListener('abort', onAbort, { once: true });
  // The limit covers everything up to both exits, the encoder's flush after the last frame too.
  const timer = setTimeout(
    () => kill(new ToolError(`The video processing took longer than its ${Number((job.timeLimitMs / 1000).toFixed(1))} s limit and was stopped.`)),
    job.timeLimitMs,
  );
  const stdin = encoder.proc.stdin!;
  // EPIPE when the encoder is gone: its exit code tells the story, not the write.
  let encoderGone = false;
  stdin.on('error', () => {
    encoderGone = true;
  });
  const expected = Math.min(expectedFrames(facts), job.maxFrames ?? Infinity);
  // A network on 2x2 blocks takes even sides: an odd last column or row is repeated, and its
  // output (two columns or rows) cut off again.
  const pw = w + (w % job.net.blocks);
  const ph = h + (h % job.net.blocks);
  const plane = lumaPlane(pw, ph);
  const ySize = w * h;
  const outY = 4 * ySize;
  let done = 0;
  try {
    try {
      for await (const frame of frames(decoder.proc.stdout!, 3 * ySize)) {
        if (stop) break;
        toPlane(frame, w, h, plane, pw, ph);
        // A fresh buffer per frame: the one before may still be queued on the pipe.
        const out = Buffer.allocUnsafe(6 * ySize);
        const luma = new Uint8ClampedArray(out.buffer, out.byteOffset, outY);
        const take = (y0: number, rows: Float32Array) => fromRows(rows, y0, luma, 2 * w, 2 * h, 2 * pw);
        await job.net.run(plane, pw, ph, 'luma2x', take, { signal: job.signal });
        frame.copy(out, outY, ySize, 3 * ySize);
        if (encoderGone) throw new EncoderGone();
        await writable(stdin);
        stdin.write(out);
        done++;
        if (done < expected) job.onProgress(done / expected);
      }
      if (!stop) {
        if ((await decoder.exited) !== 0) kill(decoderFailed());
        else if (done === 0) kill(new ToolError('The video could not be processed: it has no frame to upscale.'));
        else stdin.end();
      }
    } catch (err) {
      if (err instanceof EncoderGone) decoder.proc.kill('SIGKILL');
      else if (err instanceof PartialFrame) kill((await decoder.exited) !== 0 ? decoderFailed() : new ToolError(`The video could not be processed: ${err.message}.`));
      else kill(err instanceof Error ? err : new Error(String(err)));
    }
    const encoded = (await Promise.all([decoder.exited, encoder.exited]))[1];
    if (stop) throw stop;
    if (encoded !== 0) throw new ToolError(`The video could not be processed: ${ffmpegErrorLine(encoder.stderr(), [job.input], job.output)}`);
    const size = (await fs.stat(job.output)).size;
    if (size >= job.maxOutputBytes) throw new ToolError(`The output would be larger than the ${sizeText(job.maxOutputBytes)} limit.`);
    if (encoderGone) throw new ToolError('The video could not be processed: its encoder stopped before the last frame.');
  } catch (err) {
    await fs.rm(job.output, { force: true });
    throw err;
  } finally {
    clearTimeout(timer);
    job.signal.removeEventListener('abort', onAbort);
  }
  job.onProgress(1);
  return done;
}
