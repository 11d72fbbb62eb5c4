/**
 * `node --import tsx bench/video-learned.ts` (and `npm run bench`): video_upscale's two methods
 * (issue 28). Not a test.
 *
 * Speed: a 960x540 clip panning across a photograph (node_modules' @jimp/test-utils panorama,
 * H.264 + AAC) upscaled to 1080p by the runner (src/tools/video/upscale.ts, called as the executor
 * calls it), `lanczos` and `learned` back to back, rounds alternating which goes first; medians.
 * Realtime factor = the clip's seconds / wall seconds. CPU seconds are this process's (its threads:
 * the network's) plus its reaped children's (both ffmpegs), which move far less than wall time
 * with the machine's load: per Spark of the run's price they are what `learned` is priced by
 * (CPU_SECONDS_PER_SPARK), and that figure fails when a run costs more. The wall-time ratio decides the default:
 * `learned` only if it is at most 4x (issue 28).
 *
 * Quality: clips made by panning slowly (2 px right and 1 px down a frame, whole pixels, so every
 * frame is an exact crop) across photos of ../shared/datasets/sr/eval (Set14, BSD100), encoded
 * losslessly (x264 -qp 0, 4:4:4): the original frames. Each is reduced 2x per frame by swscale
 * (antialiased bicubic, and area), encoded losslessly again, and enlarged back 2x by each method
 * with the tool's own encode (H.264 CRF 20): `learned` by the runner's frame path (runLearned)
 * with the target at exactly twice the height, `lanczos` by the runner's ffmpeg arguments with the
 * target height changed (the tool's targets, 1080 and 2160 lines, are taller than these photos).
 * Score: luma PSNR of every output frame against the original frame (Y planes, 4 px border left
 * out), mean over frames, then over clips. Skipped, with a note, when ../shared is not there.
 *
 * Environment: BENCH_ROUNDS (2), BENCH_SPEED_SECONDS (3), BENCH_QUALITY_FRAMES (24), BENCH_MAX_MINUTES (20).
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createLogger } from '../src/logger.js';
import { resolveMediaBinaries } from '../src/media/binaries.js';
import { probeVideo, runFfmpeg } from '../src/media/ffmpeg.js';
import type { RunContext } from '../src/tools/manifest.js';
import { lumaPlane, sharedLumaNet } from '../src/tools/upscaler/luma-net.js';
import { H264, MP4 } from '../src/tools/video/common.js';
import { runLearned } from '../src/tools/video/learned-frames.js';
import { runUpscale } from '../src/tools/video/upscale.js';
import { CPU_SECONDS_PER_SPARK, upscaleSparks, upscaleWork } from '../src/tools/video/upscale-work.js';
import { cpuWithChildren } from './lib/app-children.js';
import { envInt, envNum, figure, finish, loadNote, median, resultHeader, runBench, table, watchdog, type BenchResult, type Figure } from './lib/report.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const EVAL = path.resolve(ROOT, '..', 'shared', 'datasets', 'sr', 'eval');
const PANORAMA = path.join(ROOT, 'node_modules/@jimp/test-utils/images/panoramic.jpg');
const PHOTOS = ['Set14/img_002', 'Set14/img_011', 'Set14/img_014', 'BSD100/img_001', 'BSD100/img_002', 'BSD100/img_003'];
const REDUCTIONS = ['bicubic', 'area'] as const;
const BORDER = 4;
const FPS = 24;
/** Issue 28: `learned` is the default only if its wall time is at most this multiple of `lanczos`'s. */
const DEFAULT_IF_AT_MOST = 4;

const quick = process.env.BENCH_QUICK === '1';
const settings = {
  rounds: envInt('BENCH_ROUNDS', quick ? 1 : 2, 1),
  speedSeconds: envNum('BENCH_SPEED_SECONDS', quick ? 2 : 3, 0.5),
  qualityFrames: envInt('BENCH_QUALITY_FRAMES', quick ? 12 : 24, 2),
  threads: 2,
};
const media = resolveMediaBinaries();

function ffmpeg(args: string[]): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    execFile(media.ffmpeg, ['-v', 'error', '-nostdin', '-y', ...args], { encoding: 'buffer', maxBuffer: 1024 * 1024 * 1024 }, (err, out, stderr) =>
      err ? reject(new Error(`ffmpeg: ${stderr.toString().slice(-1500)}`)) : resolve(out),
    );
  });
}

const ownCpu = () => cpuWithChildren(process.pid);

interface Timed {
  wall: number;
  cpu: number;
}

async function timedRun(clip: string, seconds: number, method: 'lanczos' | 'learned', dir: string): Promise<Timed> {
  const workDir = fs.mkdtempSync(path.join(dir, `${method}-`));
  const ctx: RunContext = {
    runId: randomUUID(),
    teamId: randomUUID(),
    values: { target: '1080p', method },
    files: { video: [{ fileId: randomUUID(), path: clip, fileName: 'pan.mp4', mime: 'video/mp4', info: { kind: 'video', width: 960, height: 540, durationSeconds: seconds } }] },
    workDir,
    signal: new AbortController().signal,
    progress: () => undefined,
    media,
    logger: createLogger('silent'),
    outbound: { allowPrivate: false },
    limits: { ffmpegThreads: settings.threads, maxOutputBytes: 4 * 1024 ** 3 },
  };
  const c0 = ownCpu();
  const t0 = performance.now();
  await runUpscale(ctx, { threads: settings.threads });
  const wall = (performance.now() - t0) / 1000;
  const cpu = ownCpu() - c0;
  fs.rmSync(workDir, { recursive: true, force: true });
  return { wall, cpu };
}

async function speed(dir: string): Promise<{ figures: Figure[]; rows: string[][]; samples: Record<string, Timed[]> }> {
  const clip = path.join(dir, 'pan-540.mp4');
  const s = settings.speedSeconds;
  await ffmpeg([
    '-loop', '1', '-framerate', '25', '-i', PANORAMA, '-f', 'lavfi', '-i', 'sine=frequency=440:sample_rate=44100',
    '-filter_complex', "[0:v]crop=960:540:'200+n*4':120,format=yuv420p[v]", '-map', '[v]', '-map', '1:a',
    '-t', String(s), '-c:v', 'libx264', '-preset', 'veryfast', '-crf', '18', '-c:a', 'aac', '-shortest', '-movflags', '+faststart', clip,
  ]);
  // The network's session loads once per process, not per run: loaded before the clock starts.
  await sharedLumaNet().run(lumaPlane(16, 16), 16, 16, 'luma2x', () => undefined);
  const samples: Record<string, Timed[]> = { lanczos: [], learned: [] };
  for (let r = 0; r < settings.rounds; r++) {
    const order = r % 2 === 0 ? (['lanczos', 'learned'] as const) : (['learned', 'lanczos'] as const);
    for (const m of order) {
      const t = await timedRun(clip, s, m, dir);
      samples[m]!.push(t);
      process.stdout.write(`round ${r + 1} ${m}: ${t.wall.toFixed(2)} s wall, ${t.cpu.toFixed(2)} CPU s\n`);
    }
  }
  const wall = (m: string) => median(samples[m]!.map((t) => t.wall));
  const cpu = (m: string) => median(samples[m]!.map((t) => t.cpu));
  const lanczos = { label: 'lanczos', value: s / wall('lanczos') };
  const wallRatio = wall('learned') / wall('lanczos');
  const frames = Math.round(s * 25);
  const info = { kind: 'video' as const, width: 960, height: 540, durationSeconds: s, frameRate: 25, frames };
  const sparks = upscaleSparks(upscaleWork(info, 1080, 'learned')!, s, '1080p', 'learned');
  const figures = [
    figure({ name: 'lanczos_realtime', figure: 'video_upscale lanczos, 960x540 -> 1080p: realtime factor', unit: 'x', value: lanczos.value }),
    figure({ name: 'learned_realtime', figure: 'video_upscale learned, 960x540 -> 1080p: realtime factor', unit: 'x', value: s / wall('learned'), baseline: lanczos }),
    figure({
      name: 'learned_wall_ratio',
      figure: `learned wall time / lanczos wall time (learned is the default only at <= ${DEFAULT_IF_AT_MOST})`,
      unit: 'x',
      value: wallRatio,
      note: wallRatio <= DEFAULT_IF_AT_MOST ? 'learned could be the default' : 'default stays lanczos',
    }),
    figure({ name: 'learned_cpu_ratio', figure: 'diag: learned CPU seconds / lanczos CPU seconds', unit: 'x', value: cpu('learned') / cpu('lanczos') }),
    figure({
      name: 'learned_cpu_per_spark',
      figure: `learned: CPU seconds per Spark of its price (${sparks} Sparks for the clip; the prices buy ${CPU_SECONDS_PER_SPARK})`,
      unit: 's',
      value: cpu('learned') / sparks,
      target: { on: 'value', op: '<=', limit: CPU_SECONDS_PER_SPARK },
    }),
    figure({
      name: 'learned_seconds_per_mp',
      figure: 'learned: wall seconds per megapixel of input frame',
      unit: 's/MP',
      value: wall('learned') / (frames * 0.5184),
    }),
  ];
  const rows = (['lanczos', 'learned'] as const).map((m) => [m, wall(m).toFixed(2), cpu(m).toFixed(2), (s / wall(m)).toFixed(3)]);
  return { figures, rows, samples };
}

/** Y planes of every frame of a file, decoded at its size (yuv444p: no chroma in the way). */
async function lumaFrames(file: string, w: number, h: number): Promise<Buffer[]> {
  const raw = await ffmpeg(['-i', file, '-map', '0:v:0', '-f', 'rawvideo', '-pix_fmt', 'yuv444p', '-']);
  const size = 3 * w * h;
  const out: Buffer[] = [];
  for (let at = 0; at + size <= raw.length; at += size) out.push(raw.subarray(at, at + w * h));
  return out;
}

function lumaPsnr(a: Buffer, b: Buffer, w: number, h: number): number {
  let se = 0;
  let n = 0;
  for (let y = BORDER; y < h - BORDER; y++) {
    for (let x = BORDER; x < w - BORDER; x++) {
      const d = a[y * w + x]! - b[y * w + x]!;
      se += d * d;
      n++;
    }
  }
  return 10 * Math.log10((255 * 255 * n) / Math.max(se, 1e-9));
}

async function photoSize(file: string): Promise<{ width: number; height: number }> {
  const sharp = (await import('sharp')).default;
  const m = await sharp(file).metadata();
  return { width: m.width ?? 0, height: m.height ?? 0 };
}

type Scores = Record<(typeof REDUCTIONS)[number], { learned: number; lanczos: number }[]>;

async function quality(dir: string): Promise<{ scores: Scores; names: string[] }> {
  const scores: Scores = { bicubic: [], area: [] };
  const names: string[] = [];
  const f = settings.qualityFrames;
  for (const name of PHOTOS) {
    const photo = path.join(EVAL, `${name}_SRF_2_HR.png`);
    const size = await photoSize(photo);
    const w = Math.floor((size.width - 2 * f) / 4) * 4;
    const h = Math.floor((size.height - f) / 4) * 4;
    const truthFile = path.join(dir, `truth-${names.length}.mp4`);
    await ffmpeg(['-loop', '1', '-framerate', String(FPS), '-i', photo, '-vf', `crop=${w}:${h}:'2*n':'n',format=yuv444p`, '-frames:v', String(f), '-c:v', 'libx264', '-preset', 'ultrafast', '-qp', '0', truthFile]);
    const truth = await lumaFrames(truthFile, w, h);
    names.push(`${name} (${w}x${h})`);
    for (const reduction of REDUCTIONS) {
      const small = path.join(dir, `small-${names.length}-${reduction}.mp4`);
      await ffmpeg(['-i', truthFile, '-vf', `scale=${w / 2}:${h / 2}:flags=${reduction},format=yuv444p`, '-c:v', 'libx264', '-preset', 'ultrafast', '-qp', '0', small]);
      const input = { path: small, label: 'the video', pricedSeconds: f / FPS };
      const signal = new AbortController().signal;
      const facts = await probeVideo(media, input, { signal, timeLimitMs: 60_000 });
      const learnedOut = path.join(dir, `learned-${names.length}-${reduction}.mp4`);
      await runLearned({
        bins: media, input, facts, targetHeight: h, encodeArgs: [...H264, '-c:a', 'copy', ...MP4], output: learnedOut, signal,
        timeLimitMs: 600_000, maxOutputBytes: 1024 ** 3, threads: settings.threads, net: sharedLumaNet(), onProgress: () => undefined,
      });
      const lanczosOut = path.join(dir, `lanczos-${names.length}-${reduction}.mp4`);
      await runFfmpeg({
        bins: media, inputs: [input], output: lanczosOut, expectedSeconds: f / FPS, signal, timeLimitMs: 600_000, maxOutputBytes: 1024 ** 3, threads: settings.threads,
        args: ['-map', '0:v:0', '-map', '0:a:0?', '-vf', `scale=-2:${h}:flags=lanczos`, '-vsync', 'passthrough', ...H264, '-c:a', 'copy', ...MP4],
      });
      const mean = async (file: string) => {
        const frames = await lumaFrames(file, w, h);
        if (frames.length !== truth.length) throw new Error(`${file}: ${frames.length} frames, the original has ${truth.length}`);
        return frames.reduce((a, fr, i) => a + lumaPsnr(fr, truth[i]!, w, h), 0) / frames.length;
      };
      const s = { learned: await mean(learnedOut), lanczos: await mean(lanczosOut) };
      scores[reduction].push(s);
      process.stdout.write(`${name} ${reduction}: learned ${s.learned.toFixed(2)} dB, lanczos ${s.lanczos.toFixed(2)} dB\n`);
    }
  }
  return { scores, names };
}

async function main(): Promise<void> {
  const before = loadNote();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'toolrun-bench-video-learned-'));
  const cleanup = async () => {
    await sharedLumaNet().close();
    fs.rmSync(dir, { recursive: true, force: true });
  };
  watchdog('video-learned', cleanup);
  try {
    const sp = await speed(dir);
    const figures = [...sp.figures];
    const notes = [
      `Speed: a ${settings.speedSeconds} s 960x540 25 fps clip panning across a photograph, to 1080p through the runner, ${settings.rounds} round(s), medians; ffmpeg threads ${settings.threads}, the network's threads its default (the cores, at most 4). CPU seconds include reaped children (both ffmpegs).`,
      `Price: learned costs the lanczos price plus 1 Spark per started 3 input frame-megapixels (docs/prices.md), from the ${CPU_SECONDS_PER_SPARK} CPU s a Spark buys on the Lanczos path's prices; the CPU-per-Spark figure fails when a run costs more.`,
      `Medians, in seconds:\n\n${'```'}text\n${table(['method', 'wall s', 'CPU s', 'realtime x'], sp.rows)}\n${'```'}`,
    ];
    let details: unknown = { speed: sp.samples };
    if (fs.existsSync(EVAL)) {
      const q = await quality(dir);
      const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
      for (const r of REDUCTIONS) {
        const lz = mean(q.scores[r].map((s) => s.lanczos));
        const le = mean(q.scores[r].map((s) => s.learned));
        figures.push(
          figure({ name: `learned_psnr_${r}`, figure: `learned: mean luma PSNR, frames reduced 2x (${r})`, unit: 'dB', value: le, baseline: { label: 'lanczos', value: lz } }),
          figure({ name: `learned_gain_${r}`, figure: `learned minus lanczos, mean luma PSNR (${r})`, unit: 'dB', value: le - lz }),
        );
      }
      const rows = q.names.map((n, i) => [n, ...REDUCTIONS.flatMap((r) => [q.scores[r][i]!.lanczos.toFixed(2), q.scores[r][i]!.learned.toFixed(2)])]);
      notes.push(
        `Quality: ${settings.qualityFrames} frames at ${FPS} fps panning across each photo (whole pixels), lossless; reduced 2x per frame by swscale (bicubic: antialiased, area), enlarged back 2x by each method ending in the tool's H.264 CRF 20; luma PSNR against the original frames, ${BORDER} px border left out. Ratios of PSNRs mean little; the gain in dB is the figure.`,
        `Per clip, mean luma PSNR in dB:\n\n${'```'}text\n${table(['clip', 'bicubic lanczos', 'bicubic learned', 'area lanczos', 'area learned'], rows)}\n${'```'}`,
      );
      details = { speed: sp.samples, quality: q };
    } else {
      notes.push(`Quality: not measured, ${path.relative(ROOT, EVAL)} is not on this machine.`);
    }
    const result: BenchResult = {
      ...resultHeader('video-learned', 'video_upscale: learned vs lanczos, speed at 540p -> 1080p and luma PSNR on panned photos',
        { before, after: loadNote() }, { server: 'none (no database involved)', version: null }, { ...settings, photos: PHOTOS, reductions: REDUCTIONS }),
      figures,
      charts: [],
      notes,
      details,
    };
    finish(result);
  } finally {
    await cleanup();
  }
}

runBench('video-learned', main);
