import { spawn } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import fs from 'node:fs/promises';
import { ToolError } from '../core/errors.js';
import type { MediaBinaries } from './binaries.js';
import { LENGTH_TOLERANCE_SECONDS, measureLength } from './measure.js';
import { MAX_VIDEO_PIXELS, workingFrameRate } from './limits.js';
import type { FfprobeStream } from './probe.js';

/**
 * Running ffmpeg and ffprobe for tools: one child process per job, never a shell; local files
 * only (`-protocol_whitelist file`, and a demuxer whitelist so a crafted playlist cannot pull in
 * other files); a bounded thread count; `-progress` parsed into a fraction; killed with SIGKILL
 * the moment the run's signal fires or the hard time limit passes; output size capped with `-fs`
 * and checked afterwards; stderr turned into one short message without the server's paths.
 */

/** Demuxers for the containers an upload can be sniffed as (no playlists, concat lists or images). */
export const INPUT_FORMATS = 'mov,mp4,matroska,webm,avi,mpegts,flv,mpeg,ogg,asf,mxf';
export const DEFAULT_THREADS = 2;
const MAX_THREADS = 16;
const STDERR_KEEP = 64 * 1024;

/** An input file and how messages should name it ("clip 2"): its path is never shown. */
export interface NamedInput {
  path: string;
  label: string;
  /**
   * The length the run was priced for. ffmpeg reads no more of the input than this plus
   * LENGTH_TOLERANCE_SECONDS (`-t` before `-i`), whatever the file holds: a row probed
   * before lengths were measured from the streams may carry a header's shorter claim.
   */
  pricedSeconds?: number;
}

function readBound(input: NamedInput): number | null {
  return input.pricedSeconds === undefined ? null : input.pricedSeconds + LENGTH_TOLERANCE_SECONDS;
}

export interface SpawnLimits {
  signal: AbortSignal;
  /** Killed and failed after this long. */
  timeLimitMs: number;
}

interface Finished {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The error a stopped job rejects with; the engine reports the stop reason itself. */
export function abortError(): Error {
  const err = new Error('ffmpeg was stopped: the run was aborted');
  err.name = 'AbortError';
  return err;
}

/**
 * Spawns a binary and collects its output; stdout lines go to onLine as they come (and are not
 * kept when onLine is given). Resolves only after the process has exited and been reaped.
 */
export function spawnBounded(cmd: string, args: string[], limits: SpawnLimits, onLine?: (line: string) => void): Promise<Finished> {
  return new Promise((resolve, reject) => {
    if (limits.signal.aborted) {
      reject(abortError());
      return;
    }
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let partial = '';
    let stop: Error | null = null;
    const kill = (why: Error) => {
      if (stop) return;
      stop = why;
      // SIGKILL at once: a cancel must free the CPU now, and a half-written output is discarded anyway.
      child.kill('SIGKILL');
    };
    const onAbort = () => kill(abortError());
    limits.signal.addEventListener('abort', onAbort, { once: true });
    const timer = setTimeout(
      () => kill(new ToolError(`The video processing took longer than its ${Number((limits.timeLimitMs / 1000).toFixed(1))} s limit and was stopped.`)),
      limits.timeLimitMs,
    );
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      if (!onLine) {
        stdout += chunk;
        return;
      }
      const lines = (partial + chunk).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) onLine(line.trim());
    });
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => {
      stderr = (stderr + chunk).slice(-STDERR_KEEP);
    });
    const settle = (err: Error | null, code: number | null) => {
      clearTimeout(timer);
      limits.signal.removeEventListener('abort', onAbort);
      if (stop) reject(stop);
      else if (err) reject(new ToolError('The video tools are not available on this server (ffmpeg could not be started).'));
      else resolve({ code, stdout, stderr });
    };
    child.once('error', (err) => settle(err, null));
    child.once('close', (code) => settle(null, code));
  });
}

/**
 * The command line for a job: through setpriv with a parent-death signal when it is available.
 * A worker that dies (kill -9, the OOM killer) cannot kill its ffmpeg, and ffmpeg ignores
 * SIGPIPE, so losing its progress pipe does not stop it: orphaned, it would encode on to the end
 * while another worker runs the same job again. PR_SET_PDEATHSIG has the kernel kill it instead.
 */
export function jobCommand(bins: MediaBinaries, cmd: string, args: string[]): [string, string[]] {
  // A binary that cannot run is started directly, so spawn reports it as it always did.
  return bins.setpriv && runnable(cmd) ? [bins.setpriv, ['--pdeathsig', 'KILL', '--', cmd, ...args]] : [cmd, args];
}

function runnable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The last line of stderr that says something, with every path replaced by its label. */
export function ffmpegErrorLine(stderr: string, inputs: NamedInput[], output?: string): string {
  const noise = /^(Conversion failed!|Exiting normally|Error while processing the decoded data|Finishing stream|\s*$)/;
  const lines = stderr.split(/\r?\n/).filter((l) => !noise.test(l));
  let line = lines.length ? lines[lines.length - 1]! : 'ffmpeg failed without a message';
  for (const input of inputs) line = line.split(input.path).join(input.label);
  if (output) line = line.split(output).join('the output');
  return line
    .replace(/\[[\w,]+ @ 0x[0-9a-f]+\]\s*/g, '')
    .replace(/(?:\/[\w.@%+=-]+)+\/?/g, '<file>')
    .trim()
    .slice(0, 300);
}

export function boundedThreads(threads: number | undefined): number {
  const t = Math.floor(threads ?? DEFAULT_THREADS);
  return Number.isFinite(t) ? Math.min(MAX_THREADS, Math.max(1, t)) : DEFAULT_THREADS;
}

/** "HH:MM:SS.micro" from -progress, in seconds; null for the negative or N/A values of the start. */
export function progressSeconds(value: string): number | null {
  const m = /^(\d+):(\d{2}):(\d{2}(?:\.\d+)?)$/.exec(value);
  return m ? Number(m[1]) * 3600 + Number(m[2]) * 60 + Number(m[3]) : null;
}

export interface FfmpegJob {
  bins: MediaBinaries;
  inputs: NamedInput[];
  /** Everything between the inputs and the output: filter graph, maps, codecs. */
  args: string[];
  output: string;
  /** The output's expected length, for the progress fraction. */
  expectedSeconds: number;
  signal: AbortSignal;
  timeLimitMs: number;
  maxOutputBytes: number;
  threads?: number;
  onProgress?: (fraction: number) => void;
}

/** Runs one ffmpeg job to a finished output file, or rejects (ToolError for the run's `error`). */
export async function runFfmpeg(job: FfmpegJob): Promise<void> {
  const threads = String(boundedThreads(job.threads));
  const args = ['-hide_banner', '-nostdin', '-nostats', '-v', 'error', '-xerror', '-progress', 'pipe:1', '-y'];
  for (const input of job.inputs) {
    const bound = readBound(input);
    if (bound !== null) args.push('-t', bound.toFixed(3));
    // -max_pixels: a frame larger than uploads may have is refused by the decoder, unallocated.
    args.push('-protocol_whitelist', 'file', '-format_whitelist', INPUT_FORMATS, '-max_pixels', String(MAX_VIDEO_PIXELS), '-threads', threads, '-i', input.path);
  }
  args.push('-filter_threads', threads, '-filter_complex_threads', threads, ...job.args, '-threads', threads, '-fs', String(job.maxOutputBytes), job.output);
  let last = 0;
  const onLine = (line: string) => {
    const eq = line.indexOf('=');
    if (eq < 0 || !job.onProgress) return;
    const key = line.slice(0, eq);
    const value = line.slice(eq + 1);
    const seconds = key === 'out_time' ? progressSeconds(value) : null;
    const fraction = key === 'progress' && value === 'end' ? 1 : seconds !== null && job.expectedSeconds > 0 ? Math.min(1, seconds / job.expectedSeconds) : null;
    if (fraction !== null && fraction > last) {
      last = fraction;
      job.onProgress(fraction);
    }
  };
  let done: Finished;
  try {
    done = await spawnBounded(...jobCommand(job.bins, job.bins.ffmpeg, args), { signal: job.signal, timeLimitMs: job.timeLimitMs }, onLine);
  } catch (err) {
    await fs.rm(job.output, { force: true });
    throw err;
  }
  if (done.code !== 0) {
    await fs.rm(job.output, { force: true });
    throw new ToolError(`The video could not be processed: ${ffmpegErrorLine(done.stderr, job.inputs, job.output)}`);
  }
  const size = (await fs.stat(job.output)).size;
  if (size >= job.maxOutputBytes) {
    await fs.rm(job.output, { force: true });
    throw new ToolError(`The output would be larger than the ${sizeText(job.maxOutputBytes)} limit.`);
  }
}

/** A byte count as people read it: 4 GiB, 1.5 MiB, 200 KiB, 1000 bytes. */
export function sizeText(bytes: number): string {
  const units: [number, string][] = [[1024 ** 3, 'GiB'], [1024 ** 2, 'MiB'], [1024, 'KiB']];
  for (const [size, unit] of units) if (bytes >= size) return `${Math.round((bytes / size) * 10) / 10} ${unit}`;
  return bytes === 1 ? '1 byte' : `${bytes} bytes`;
}

/** What a run needs to know about a video file, read by ffprobe when the run starts. */
export interface VideoFacts {
  width: number;
  height: number;
  /** Frame rate as a fraction, for exact frame arithmetic. */
  fps: { num: number; den: number };
  durationSeconds: number;
  videoCodec: string;
  hasAudio: boolean;
  audioCodec: string | null;
}

type ProbeStream = FfprobeStream;

function unreadable(input: NamedInput, why: string): ToolError {
  const name = input.label.charAt(0).toUpperCase() + input.label.slice(1);
  return new ToolError(`${name} is not a readable video (${why}).`);
}

/**
 * ffprobe of a local file; a file that does not read as a video is a ToolError naming its label.
 * The length is the video stream's, measured from its packets (never the header's claim), read no
 * further than the input's priced length allows and capped at that length: what a plan built on
 * it asks of ffmpeg stays within what `-t` lets ffmpeg read.
 */
export async function probeVideo(bins: MediaBinaries, input: NamedInput, limits: SpawnLimits): Promise<VideoFacts> {
  const inputArgs = ['-protocol_whitelist', 'file', '-format_whitelist', INPUT_FORMATS];
  const args = ['-v', 'error', ...inputArgs, '-max_pixels', String(MAX_VIDEO_PIXELS), '-print_format', 'json', '-show_format', '-show_streams', input.path];
  const done = await spawnBounded(...jobCommand(bins, bins.ffprobe, args), limits);
  let info: { streams?: ProbeStream[]; format?: { duration?: string } } = {};
  try {
    if (done.code === 0) info = JSON.parse(done.stdout) as typeof info;
  } catch {
    info = {};
  }
  const streams = info.streams ?? [];
  const v = streams.find((s) => s.codec_type === 'video' && !s.disposition?.attached_pic);
  const a = streams.find((s) => s.codec_type === 'audio');
  const fps = workingFrameRate(v?.avg_frame_rate, v?.r_frame_rate);
  if (!v || v.index === undefined || !v.width || !v.height || !fps) {
    const line = ffmpegErrorLine(done.stderr, [input]);
    throw unreadable(input, done.code === 0 ? 'it has no usable video stream' : line.startsWith(`${input.label}: `) ? line.slice(input.label.length + 2) : line);
  }
  const bound = readBound(input);
  const measured = await measureLength({
    command: (scan) => jobCommand(bins, bins.ffprobe, scan),
    inputArgs,
    source: input.path,
    streams: [{ index: v.index, frameRate: fps.num / fps.den }],
    timeoutMs: limits.timeLimitMs,
    stopAfterSeconds: bound,
    signal: limits.signal,
  });
  if (measured.kind === 'aborted') throw abortError();
  if (measured.kind === 'timeout') throw new ToolError(`The length of ${input.label} could not be measured within ${Number((limits.timeLimitMs / 1000).toFixed(1))} s.`);
  const length = measured.kind === 'failed' ? null : measured.seconds;
  if (length === null || !(length > 0)) throw unreadable(input, 'its video stream has no timed packets');
  const rotation = Math.abs(Number(v.side_data_list?.find((s) => s.rotation !== undefined)?.rotation ?? v.tags?.rotate ?? 0)) % 180;
  return {
    width: rotation === 90 ? v.height : v.width,
    height: rotation === 90 ? v.width : v.height,
    fps,
    durationSeconds: input.pricedSeconds === undefined ? length : Math.min(length, input.pricedSeconds),
    videoCodec: v.codec_name ?? 'unknown',
    hasAudio: Boolean(a),
    audioCodec: a?.codec_name ?? null,
  };
}
