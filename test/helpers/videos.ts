import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';
import { resolveMediaBinaries } from '../../src/media/binaries.js';
import { createLogger } from '../../src/logger.js';
import type { InputFile, RunContext } from '../../src/tools/manifest.js';

/** Small generated videos and what ffprobe / a decoded frame says about an output (tests only). */

const bins = resolveMediaBinaries();

function exec(cmd: string, args: string[]): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    execFile(cmd, args, { encoding: 'buffer', maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${path.basename(cmd)} failed: ${stderr.toString().slice(-2000)}`));
      else resolve(stdout);
    });
  });
}

export interface ClipSpec {
  /** An ffmpeg colour name: the whole picture is this colour, so frames can be told apart. */
  color: string;
  width: number;
  height: number;
  seconds: number;
  fps: number;
  /** Sine tone frequency, or null for a clip without an audio stream. */
  tone: number | null;
}

/** A one-colour H.264 (+ AAC tone) MP4 with +faststart, written to dir; returns its path. */
export async function makeClip(dir: string, name: string, spec: ClipSpec): Promise<string> {
  const out = path.join(dir, name);
  const args = ['-v', 'error', '-nostdin', '-f', 'lavfi', '-i', `color=c=${spec.color}:s=${spec.width}x${spec.height}:r=${spec.fps}`];
  if (spec.tone !== null) args.push('-f', 'lavfi', '-i', `sine=frequency=${spec.tone}:sample_rate=44100`);
  args.push('-t', String(spec.seconds), '-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p');
  if (spec.tone !== null) args.push('-c:a', 'aac', '-shortest');
  args.push('-movflags', '+faststart', '-y', out);
  await exec(bins.ffmpeg, args);
  return out;
}

/** testsrc (moving pattern) clip, for encodes that must take a while. */
export async function makePatternClip(dir: string, name: string, opts: { width: number; height: number; seconds: number; fps: number }): Promise<string> {
  const out = path.join(dir, name);
  await exec(bins.ffmpeg, [
    '-v', 'error', '-nostdin', '-f', 'lavfi', '-i', `testsrc=size=${opts.width}x${opts.height}:rate=${opts.fps}`,
    '-t', String(opts.seconds), '-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', '-movflags', '+faststart', '-y', out,
  ]);
  return out;
}

export interface StreamInfo {
  codec: string;
  duration: number;
  width?: number;
  height?: number;
  fps?: number;
}

export interface MediaProbe {
  duration: number;
  video: StreamInfo | null;
  audio: StreamInfo | null;
}

interface RawStream {
  codec_type?: string;
  codec_name?: string;
  width?: number;
  height?: number;
  avg_frame_rate?: string;
  duration?: string;
}

function rate(r: string | undefined): number | undefined {
  const [n, d] = (r ?? '').split('/').map(Number);
  return n && d ? n / d : undefined;
}

export async function probe(file: string): Promise<MediaProbe> {
  const out = await exec(bins.ffprobe, ['-v', 'error', '-print_format', 'json', '-show_format', '-show_streams', file]);
  const info = JSON.parse(out.toString('utf8')) as { streams: RawStream[]; format: { duration: string } };
  const pick = (type: string): StreamInfo | null => {
    const s = info.streams.find((x) => x.codec_type === type);
    if (!s) return null;
    return { codec: s.codec_name ?? '', duration: Number(s.duration), width: s.width, height: s.height, fps: rate(s.avg_frame_rate) };
  };
  return { duration: Number(info.format.duration), video: pick('video'), audio: pick('audio') };
}

/** MD5 of a stream's packets as they are (stream copy to the md5 muxer): equal means copied untouched. */
export async function packetsMd5(file: string, stream: 'a' | 'v'): Promise<string> {
  const out = await exec(bins.ffmpeg, ['-v', 'error', '-nostdin', '-i', file, '-map', `0:${stream}:0`, '-c', 'copy', '-f', 'md5', '-']);
  return out.toString('utf8').trim();
}

export interface Rgb {
  r: number;
  g: number;
  b: number;
}

export interface FrameColours {
  all: Rgb;
  /** Left and right quarters of the picture, and its central half (by width). */
  left: Rgb;
  right: Rgb;
  centre: Rgb;
  width: number;
  height: number;
}

async function mean(png: Buffer, region?: { left: number; width: number; height: number }): Promise<Rgb> {
  const img = region ? await sharp(png).extract({ left: region.left, top: 0, width: region.width, height: region.height }).toBuffer() : png;
  const st = await sharp(img).stats();
  const [r, g, b] = st.channels;
  return { r: r?.mean ?? NaN, g: g?.mean ?? NaN, b: b?.mean ?? NaN };
}

/** The frame at `seconds` (ffmpeg -ss T -frames:v 1 to PNG), summarised as mean colours. */
export async function frameAt(file: string, seconds: number): Promise<FrameColours> {
  const png = await exec(bins.ffmpeg, ['-v', 'error', '-nostdin', '-ss', seconds.toFixed(3), '-i', file, '-frames:v', '1', '-f', 'image2pipe', '-vcodec', 'png', '-']);
  const meta = await sharp(png).metadata();
  const width = meta.width ?? 0;
  const height = meta.height ?? 0;
  const q = Math.floor(width / 4);
  return {
    all: await mean(png),
    left: await mean(png, { left: 0, width: q, height }),
    right: await mean(png, { left: width - q, width: q, height }),
    centre: await mean(png, { left: q, width: width - 2 * q, height }),
    width,
    height,
  };
}

/** Child processes of this process whose command is ffmpeg, by pid (Linux /proc). */
export function ffmpegChildren(): number[] {
  const pids: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      // pid (comm) state ppid ...: comm may hold spaces, so split after the last ')'.
      const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === process.pid && comm.startsWith('ffmpeg')) pids.push(Number(entry));
    } catch {
      // the process ended while listing
    }
  }
  return pids;
}

/** Whether a pid still names a process (a zombie counts: it has not been reaped). */
export function processExists(pid: number): boolean {
  return fs.existsSync(`/proc/${pid}`);
}

export interface DirectRun {
  ctx: RunContext;
  progress: number[];
  abort: AbortController;
}

/**
 * A RunContext as the executor builds it for video tools: each file copied into a fresh work
 * directory under `dir`, its probe as the file's info, a real signal, progress recorded.
 */
export async function videoRunContext(dir: string, slot: string, files: string[], values: Record<string, unknown>): Promise<DirectRun> {
  const workDir = await fs.promises.mkdtemp(path.join(dir, 'work-'));
  const inputs: InputFile[] = [];
  for (const [i, f] of files.entries()) {
    const copy = path.join(workDir, `input-${i}`);
    await fs.promises.copyFile(f, copy);
    const p = await probe(f);
    inputs.push({
      fileId: randomUUID(),
      path: copy,
      fileName: path.basename(f),
      mime: 'video/mp4',
      info: { kind: 'video', width: p.video?.width ?? null, height: p.video?.height ?? null, durationSeconds: p.duration },
    });
  }
  const abort = new AbortController();
  const progress: number[] = [];
  const ctx: RunContext = {
    runId: randomUUID(),
    teamId: randomUUID(),
    values,
    files: { [slot]: inputs },
    workDir,
    signal: abort.signal,
    progress: (f) => progress.push(f),
    media: resolveMediaBinaries(),
    logger: createLogger('silent'),
    outbound: { allowPrivate: false },
    limits: { ffmpegThreads: 2, maxOutputBytes: 4 * 1024 ** 3 },
  };
  return { ctx, progress, abort };
}
