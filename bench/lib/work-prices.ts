/**
 * bench:tools' "CPU per Spark" part (issue 34 items 6 and 7): what a Spark of each price buys in
 * CPU seconds, for the clips the review named and for the inputs image_upscale's price follows.
 * Runs in the `direct` child (the tool's runner, no engine around it); CPU seconds are that
 * process's threads (the network's included) plus its reaped children (ffmpeg).
 *
 * Video: each clip is made twice, n and 2n frames (a 960x540 to 8192x2158 window panning across
 * the panorama in node_modules, H.264 CRF 18, no audio), and run by each method; the difference is
 * the CPU a frame costs, the rest the run's fixed cost. The clip the review named (1 s, or 9.9 s
 * at 240 fps) is priced by the tool's own price() and its CPU extrapolated from those two runs:
 * fixed + frames x CPU a frame. Kept short on purpose: a learned 8192x2158 frame takes ~15 CPU s
 * here. Two reference clips, 10 s of 30 fps 16:9 priced at the old per-10 s prices (2 to 1080p,
 * 6 to 4K), give the CPU seconds a Spark buys on the Lanczos path's prices: the basis.
 *
 * Images: 4000x4000 (16 MP, the largest image_upscale takes) as an 8-bit RGB JPEG and as a 16-bit
 * RGBA PNG with a Display P3 profile (8 decoded bytes a pixel, the most it takes), each method
 * once: CPU, and peak RSS as the kernel's high-water mark of the direct process (VmHWM after
 * writing 5 to clear_refs), for sizing workers.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';
import { resolveMediaBinaries } from '../../src/media/binaries.js';
import type { MediaInfo } from '../../src/tools/manifest.js';
import { builtinTools } from '../../src/tools/registry.js';
import { CPU_SECONDS_PER_SPARK } from '../../src/tools/video/upscale-work.js';
import { cpuWithChildren, sampleTree, type AppChild } from './app-children.js';
import type { DirectFile } from './bench-tools.js';
import { figure, fmt, MIB, table, type Figure } from './report.js';

/** A clip's CPU a Spark may pass its target's reference by this much: the spread of CPU seconds on a shared 2-core machine. */
export const REFERENCE_TOLERANCE = 1.2;
const PANORAMA = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../node_modules/@jimp/test-utils/images/panoramic.jpg');

type Method = 'lanczos' | 'learned';

interface Clip {
  id: string;
  label: string;
  width: number;
  height: number;
  fps: number;
  /** The length priced and extrapolated to. */
  seconds: number;
  target: '1080p' | '4k';
  /** Frames of the shorter of the two runs per method (the longer has twice as many). */
  frames: Partial<Record<Method, number>>;
  /** The price before issue 34, per started 10 s (learned 35 times lanczos). */
  oldPrice: Record<Method, number>;
}

const old = (per10: number, seconds: number) => ({ lanczos: per10 * Math.max(1, Math.ceil(seconds / 10)), learned: 35 * per10 * Math.max(1, Math.ceil(seconds / 10)) });
const CLIPS: Clip[] = [
  { id: 'ref_720p30', label: '1280x720 30 fps, 10 s -> 1080p (the 2-Spark reference)', width: 1280, height: 720, fps: 30, seconds: 10, target: '1080p', frames: { lanczos: 60 }, oldPrice: old(2, 10) },
  { id: 'ref_1080p30', label: '1920x1080 30 fps, 10 s -> 4K (the 6-Spark reference)', width: 1920, height: 1080, fps: 30, seconds: 10, target: '4k', frames: { lanczos: 30 }, oldPrice: old(6, 10) },
  { id: 'c540p25', label: '960x540 25 fps, 1 s -> 1080p', width: 960, height: 540, fps: 25, seconds: 1, target: '1080p', frames: { lanczos: 25, learned: 8 }, oldPrice: old(2, 1) },
  { id: 'c1076p240', label: '1916x1076 240 fps, 1 s -> 1080p', width: 1916, height: 1076, fps: 240, seconds: 1, target: '1080p', frames: { lanczos: 48, learned: 4 }, oldPrice: old(2, 1) },
  { id: 'c2158p240', label: '8192x2158 240 fps, 9.9 s -> 4K', width: 8192, height: 2158, fps: 240, seconds: 9.9, target: '4k', frames: { lanczos: 16, learned: 1 }, oldPrice: old(6, 9.9) },
];

function ffmpeg(args: string[]): Promise<void> {
  const { ffmpeg: bin } = resolveMediaBinaries();
  return new Promise((resolve, reject) =>
    execFile(bin, ['-v', 'error', '-nostdin', '-y', ...args], { maxBuffer: 1 << 24 }, (err, _o, stderr) => (err ? reject(new Error(`ffmpeg: ${stderr}`)) : resolve())),
  );
}

async function makeClip(dir: string, c: Clip, frames: number): Promise<DirectFile> {
  const file = path.join(dir, `${c.id}-${frames}.mp4`);
  const vf = `scale=-2:${c.height}:flags=bicubic,crop=${c.width}:${c.height}:'n*4':0,format=yuv420p`;
  await ffmpeg(['-loop', '1', '-framerate', String(c.fps), '-i', PANORAMA, '-vf', vf, '-frames:v', String(frames), '-c:v', 'libx264', '-preset', 'veryfast', '-crf', '18', '-movflags', '+faststart', file]);
  const info: MediaInfo = { kind: 'video', width: c.width, height: c.height, durationSeconds: frames / c.fps, frameRate: c.fps, frames };
  return { slot: 'video', path: file, fileName: path.basename(file), mime: 'video/mp4', info };
}

/** `frames` frames of the 1080p reference (1280x720 at 30 fps, panning), for a bench that sets its own CPU per Spark against it. */
export function referenceClip1080p(dir: string, frames: number): Promise<DirectFile> {
  return makeClip(dir, CLIPS[0]!, frames);
}

/** A clip's CPU split into a frame's and the run's fixed part, from runs of n and 2n frames. */
export function splitCpu(n: number, cpuN: number, cpu2N: number): { perFrameS: number; fixedS: number } {
  const perFrameS = Math.max(0, (cpu2N - cpuN) / n);
  return { perFrameS, fixedS: Math.max(0, cpuN - n * perFrameS) };
}

function priceOf(tool: string, values: Record<string, unknown>, slot: string, info: MediaInfo): { sparks: number; refused: string | null } {
  const manifest = builtinTools().find((t) => t.id === tool)!;
  const input = { values, media: { [slot]: [info] }, durationHint: null };
  const errors = manifest.validate?.(input) ?? [];
  return { sparks: manifest.price(input), refused: errors.length ? errors.map((e) => e.message).join('; ') : null };
}

interface Cpu {
  cpuS: number;
  peakBytes: number;
  idleBytes: number;
}

async function cpuOf(direct: AppChild, tool: string, values: Record<string, unknown>, files: DirectFile[]): Promise<Cpu> {
  const rss = sampleTree(direct.pid);
  const c0 = cpuWithChildren(direct.pid);
  await direct.direct({ tool, values, files });
  const { before, peak } = rss.stop();
  return { cpuS: cpuWithChildren(direct.pid) - c0, peakBytes: peak, idleBytes: before };
}

export interface ClipResult {
  clip: Clip;
  method: Method;
  frames: [number, number];
  cpu: [number, number];
  perFrameS: number;
  fixedS: number;
  fullFrames: number;
  extrapolatedS: number;
  sparks: number;
  refused: string | null;
  /** For a refused clip: the longest accepted at its rate and size, its frames, CPU and price. */
  longest: { frames: number; cpuS: number; sparks: number } | null;
  peakMib: number;
}

async function benchClip(direct: AppChild, dir: string, c: Clip, method: Method, n: number): Promise<ClipResult> {
  const values = { target: c.target, method };
  const runs: Cpu[] = [];
  for (const frames of [n, 2 * n]) runs.push(await cpuOf(direct, 'video_upscale', values, [await makeClip(dir, c, frames)]));
  const [a, b] = runs as [Cpu, Cpu];
  const { perFrameS, fixedS } = splitCpu(n, a.cpuS, b.cpuS);
  const fullFrames = Math.round(c.seconds * c.fps);
  const info = (frames: number): MediaInfo => ({ kind: 'video', width: c.width, height: c.height, durationSeconds: frames / c.fps, frameRate: c.fps, frames });
  const priced = priceOf('video_upscale', values, 'video', info(fullFrames));
  let longest: ClipResult['longest'] = null;
  if (priced.refused) {
    let lo = 1;
    let hi = fullFrames;
    while (lo < hi) {
      const mid = Math.ceil((lo + hi) / 2);
      if (priceOf('video_upscale', values, 'video', info(mid)).refused) hi = mid - 1;
      else lo = mid;
    }
    longest = { frames: lo, cpuS: fixedS + lo * perFrameS, sparks: priceOf('video_upscale', values, 'video', info(lo)).sparks };
  }
  const peakMib = (Math.max(a.peakBytes, b.peakBytes) - Math.min(a.idleBytes, b.idleBytes)) / MIB;
  return { clip: c, method, frames: [n, 2 * n], cpu: [a.cpuS, b.cpuS], perFrameS, fixedS, fullFrames, extrapolatedS: fixedS + fullFrames * perFrameS, sparks: priced.sparks, refused: priced.refused, longest, peakMib };
}

export interface ImageResult {
  label: string;
  method: Method;
  cpuS: number;
  sparks: number;
  /** VmHWM after the reset, minus the RSS just before the run (the direct process alone). */
  peakMib: number;
  beforeMib: number;
}

function procKb(pid: number, field: string): number {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) : Number.NaN;
}

async function makeImages(dir: string): Promise<{ label: string; file: DirectFile }[]> {
  const side = 4000;
  const { data, info } = await sharp(PANORAMA).resize(side, side, { fit: 'cover' }).raw().toBuffer({ resolveWithObject: true });
  // Mild noise, so the PNG does not compress to nothing (a photo's sensor noise).
  let seed = 1;
  for (let i = 0; i < data.length; i++) {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    data[i] = Math.max(0, Math.min(255, data[i]! + ((seed >> 16) % 7) - 3));
  }
  const raw = () => sharp(data, { raw: info });
  const jpeg = path.join(dir, 'photo-16mp.jpg');
  const png = path.join(dir, 'photo-16mp-rgba16-p3.png');
  await raw().jpeg({ quality: 90 }).toFile(jpeg);
  await raw().ensureAlpha(0.8).toColourspace('rgb16').withIccProfile('p3').png({ compressionLevel: 6 }).toFile(png);
  const image = (file: string, mime: string, channels: number, bitsPerSample: number): DirectFile => ({
    slot: 'image', path: file, fileName: path.basename(file), mime, info: { kind: 'image', width: side, height: side, durationSeconds: null, channels, bitsPerSample },
  });
  return [
    { label: '16 MP 8-bit RGB JPEG', file: image(jpeg, 'image/jpeg', 3, 8) },
    { label: '16 MP 16-bit RGBA PNG (P3)', file: image(png, 'image/png', 4, 16) },
  ];
}

async function benchImage(direct: AppChild, label: string, file: DirectFile, method: Method): Promise<ImageResult> {
  fs.writeFileSync(`/proc/${direct.pid}/clear_refs`, '5');
  const beforeKb = procKb(direct.pid, 'VmRSS');
  const { cpuS } = await cpuOf(direct, 'image_upscale', { method }, [file]);
  const peakKb = procKb(direct.pid, 'VmHWM');
  return { label, method, cpuS, sparks: priceOf('image_upscale', { method }, 'image', file.info).sparks, peakMib: (peakKb - beforeKb) / 1024, beforeMib: beforeKb / 1024 };
}

export interface WorkPrices {
  clips: ClipResult[];
  images: ImageResult[];
  figures: Figure[];
  lines: string[];
  notes: string[];
}

/** `quick`: the 720p reference and the 540p clip only, and no images (a check that it runs). */
export async function benchWorkPrices(direct: AppChild, dir: string, quick = false): Promise<WorkPrices> {
  const work = path.join(dir, 'work-prices');
  fs.mkdirSync(work, { recursive: true });
  const clips: ClipResult[] = [];
  for (const c of quick ? CLIPS.filter((x) => x.id === 'ref_720p30' || x.id === 'c540p25') : CLIPS) {
    for (const method of ['lanczos', 'learned'] as const) {
      const n = c.frames[method];
      if (!n) continue;
      process.stdout.write(`    ${c.label}, ${method}...\n`);
      clips.push(await benchClip(direct, work, c, method, n));
    }
  }
  const images: ImageResult[] = [];
  for (const { label, file } of quick ? [] : await makeImages(work)) {
    for (const method of ['lanczos', 'learned'] as const) {
      process.stdout.write(`    ${label}, ${method}...\n`);
      images.push(await benchImage(direct, label, file, method));
    }
  }
  fs.rmSync(work, { recursive: true, force: true });

  const perSpark = (r: ClipResult) => (r.longest ? r.longest.cpuS / r.longest.sparks : r.extrapolatedS / r.sparks);
  // What a Spark buys on the old per-10 s price of the same target, measured in this run.
  const reference = (target: string) => clips.find((r) => r.clip.id === (target === '1080p' ? 'ref_720p30' : 'ref_1080p30'));
  const figures: Figure[] = [
    ...clips.map((r) =>
      figure({
        name: `video_upscale_${r.clip.id}_${r.method}_cpu_per_spark`,
        figure: `video_upscale ${r.method}, ${r.clip.label}: CPU seconds per Spark${r.longest ? ` (refused at ${r.clip.seconds} s; the longest accepted, ${r.longest.frames} frames)` : ''}`,
        unit: 's',
        value: perSpark(r),
        baseline: reference(r.clip.target) ? { label: `the ${r.clip.target} reference`, value: perSpark(reference(r.clip.target)!) } : null,
        target: reference(r.clip.target) ? { on: 'ratio', op: '<=', limit: REFERENCE_TOLERANCE } : null,
        note: `${r.longest ? r.longest.sparks : r.sparks} Sparks (before issue 34: ${r.clip.oldPrice[r.method]} for the ${r.clip.seconds} s clip, ` +
          `${fmt(r.extrapolatedS / r.clip.oldPrice[r.method], 1)} CPU s a Spark); ${fmt(r.perFrameS, 3)} CPU s a frame + ${fmt(r.fixedS, 2)} s a run, from ${r.frames.join(' and ')} frames`,
      }),
    ),
    ...images.map((r) =>
      figure({
        name: `image_upscale_${r.label.split(' ').slice(1, 3).join('_').toLowerCase()}_${r.method}_cpu_per_spark`,
        figure: `image_upscale ${r.method}, ${r.label}: CPU seconds per Spark`,
        unit: 's',
        value: r.cpuS / r.sparks,
        note: `${r.sparks} Sparks, ${fmt(r.cpuS, 1)} CPU s, peak RSS +${fmt(r.peakMib, 0)} MiB over ${fmt(r.beforeMib, 0)}`,
      }),
    ),
  ];
  const clipRows = clips.map((r) => [
    r.clip.label, r.method, r.frames.join('/'), r.cpu.map((x) => fmt(x, 2)).join('/'), fmt(r.perFrameS, 3), fmt(r.fixedS, 2), String(r.fullFrames),
    fmt(r.extrapolatedS, 0), r.refused ? `refused (${r.longest?.frames ?? 0} frames: ${r.longest?.sparks ?? 0})` : String(r.sparks), fmt(perSpark(r), 2),
    String(r.clip.oldPrice[r.method]), fmt(r.extrapolatedS / r.clip.oldPrice[r.method], 1), fmt(r.peakMib, 0),
  ]);
  const imageRows = images.map((r) => [r.label, r.method, fmt(r.cpuS, 1), String(r.sparks), fmt(r.cpuS / r.sparks, 2), fmt(r.beforeMib, 0), fmt(r.peakMib, 0)]);
  const lines = [
    'CPU per Spark (issue 34): runners called directly, CPU seconds of the process and its reaped children',
    table(['clip', 'method', 'frames run', 'CPU s', 'CPU s/frame', 'fixed s', 'frames priced', 'CPU s (extrapolated)', 'Sparks', 'CPU s/Spark', 'Sparks before', 'CPU s/Spark before', 'peak MiB +'], clipRows),
    table(['image', 'method', 'CPU s', 'Sparks', 'CPU s/Spark', 'RSS before MiB', 'peak (VmHWM) MiB +'], imageRows),
  ];
  const notes = [
    `CPU per Spark (issue 34): each clip run at two lengths per method (frames run), the CPU a frame is their difference, the rest a run's fixed cost; the clip named (frames priced) ` +
      `is priced by video_upscale's price() and its CPU extrapolated as fixed + frames x CPU a frame. Target: at most ${REFERENCE_TOLERANCE} times the CPU a Spark buys on the ` +
      `reference clip of its target (10 s of 1280x720 or 1920x1080 at 30 fps, at the per-10 s prices of 2 and 6 Sparks), in the same run; the price's own basis is ` +
      `${CPU_SECONDS_PER_SPARK} CPU s a Spark. Clips: a window panning 4 px a frame across a photograph, H.264 CRF 18.`,
    'A clip the price refuses (learned work past its time limit) is figured at the longest length accepted at its rate and size. "before": the price before issue 34 (per started 10 s; learned 35x).',
    'Images: 4000x4000 (16 MP, the most image_upscale takes), once per method; peak = VmHWM of the direct process after writing 5 to /proc/<pid>/clear_refs, minus its RSS before the run.',
  ];
  return { clips, images, figures, lines, notes };
}
