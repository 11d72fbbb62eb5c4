/**
 * `node --import tsx bench/video-learned.ts` (and `npm run bench`): video_upscale's two methods
 * (issue 28). Not a test.
 *
 * Speed: a 960x540 clip panning across a photograph (node_modules' @jimp/test-utils panorama,
 * H.264 + AAC) upscaled to 1080p by the runner (src/tools/video/upscale.ts, called as the executor
 * calls it), `lanczos` and `learned` back to back, rounds alternating which goes first; medians.
 * Realtime factor = the clip's seconds / wall seconds. CPU seconds are this process's (its threads:
 * the network's) plus its reaped children's (both ffmpegs), which move far less than wall time
 * with the machine's load: per Spark of the run's price they are what `learned` is priced by, set
 * against what a Spark buys on the 1080p reference run here (lanczos, 60 and 120 frames of
 * 1280x720, as bench:tools), and that figure fails past 1.2 times. The CPU ratio is the first
 * of issue 38's conditions for the default (below); issue 28's 4x wall bar was the one before it.
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
 * Flicker (issue 38 item 3, bench/lib/video-frames.ts): on those pans, how far the consecutive
 * output frames' difference departs from the original's (pan flicker); and on static scenes (the
 * same photos, not moving, reduced 2x by bicubic, then given fresh sensor-like noise every frame as
 * a camera gives a still shot), the mean absolute difference between consecutive output frames.
 *
 * Issue 38's bar for making `learned` the default: CPU at most 6x lanczos's, a gain of at least
 * 0.8 dB on both reductions, and flicker of both kinds within 10% of lanczos's. Each is a figure
 * with its target; the note on the CPU ratio says what the default stays.
 *
 * Environment: BENCH_ROUNDS (2), BENCH_SPEED_SECONDS (3), BENCH_QUALITY_FRAMES (24), BENCH_MAX_MINUTES (20);
 * BENCH_VIDEO_MODEL=<x2 .onnx> measures another model (a candidate) in place of the one video_upscale runs,
 * shaped as VIDEO_NET (2x2 blocks) unless BENCH_VIDEO_PLAIN=1 (the image models' plain shape: models/upscaler-x2-int8.onnx
 * gives the figures of the image network this video network replaced).
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
import { LumaNet, lumaPlane, sharedVideoNet, VIDEO_NET } from '../src/tools/upscaler/luma-net.js';
import { H264, MP4 } from '../src/tools/video/common.js';
import { runLearned } from '../src/tools/video/learned-frames.js';
import { runUpscale } from '../src/tools/video/upscale.js';
import { DEFAULT_UPSCALE_METHOD as DEFAULT_METHOD } from '../src/tools/video/upscale-rules.js';
import { CPU_SECONDS_PER_SPARK, LEARNED_FRAME_MP_PER_SPARK, PER_10_SECONDS, REFERENCE_FRAMES, upscaleSparks, upscaleWork } from '../src/tools/video/upscale-work.js';
import { cpuWithChildren } from './lib/app-children.js';
import { envInt, envNum, figure, finish, loadNote, median, resultHeader, runBench, table, watchdog, type BenchResult, type Figure } from './lib/report.js';
import { meanPsnr, panFlicker, staticFlicker } from './lib/video-frames.js';
import { referenceClip1080p, REFERENCE_TOLERANCE, splitCpu } from './lib/work-prices.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const EVAL = path.resolve(ROOT, '..', 'shared', 'datasets', 'sr', 'eval');
const PANORAMA = path.join(ROOT, 'node_modules/@jimp/test-utils/images/panoramic.jpg');
const PHOTOS = ['Set14/img_002', 'Set14/img_011', 'Set14/img_014', 'BSD100/img_001', 'BSD100/img_002', 'BSD100/img_003'];
const REDUCTIONS = ['bicubic', 'area'] as const;
const BORDER = 4;
const FPS = 24;
/** Issue 38 item 3: `learned` becomes the default only if all of these hold (one figure each). */
const BAR = { cpuRatio: 6, gainDb: 0.8, flickerRatio: 1.1 };
/** The 1080p reference clip's two lengths (frames), as bench:tools runs it. */
const REFERENCE_LENGTHS = [60, 120] as const;
/** The static scenes' frame-to-frame noise: ffmpeg's noise filter on luma, strength 10 (about +-10 grey levels before the encode, which smooths much of it). */
const STATIC_NOISE = 'noise=c0s=10:c0f=t';

const quick = process.env.BENCH_QUICK === '1';
const settings = {
  rounds: envInt('BENCH_ROUNDS', quick ? 1 : 2, 1),
  speedSeconds: envNum('BENCH_SPEED_SECONDS', quick ? 2 : 3, 0.5),
  qualityFrames: envInt('BENCH_QUALITY_FRAMES', quick ? 12 : 24, 2),
  threads: 2,
};
const media = resolveMediaBinaries();
const candidate = process.env.BENCH_VIDEO_MODEL;
/** The candidate is an image-shaped network (the image x2 model's plain layers) rather than a video one (VIDEO_NET's 2x2 blocks). */
const plainCandidate = process.env.BENCH_VIDEO_PLAIN === '1';
/** The network the learned runs use: the one video_upscale runs, or BENCH_VIDEO_MODEL's. */
const net = candidate ? new LumaNet({ modelPath: candidate, scale: 2, ...(plainCandidate ? {} : VIDEO_NET) }) : sharedVideoNet();

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

interface ClipFile {
  path: string;
  width: number;
  height: number;
  seconds: number;
}

async function timedRun(clip: ClipFile, method: 'lanczos' | 'learned', dir: string): Promise<Timed> {
  const workDir = fs.mkdtempSync(path.join(dir, `${method}-`));
  const ctx: RunContext = {
    runId: randomUUID(),
    teamId: randomUUID(),
    values: { target: '1080p', method },
    files: { video: [{ fileId: randomUUID(), path: clip.path, fileName: 'pan.mp4', mime: 'video/mp4', info: { kind: 'video', width: clip.width, height: clip.height, durationSeconds: clip.seconds } }] },
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
  await runUpscale(ctx, { threads: settings.threads, net });
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
  await net.run(lumaPlane(16, 16), 16, 16, 'luma2x', () => undefined);
  // The 1080p reference at two lengths, lanczos: its CPU a frame and fixed cost give the CPU its
  // 2 Sparks buy on this machine (bench:tools' basis), which learned's CPU per Spark is set against.
  const refs = await Promise.all(REFERENCE_LENGTHS.map(async (n) => ({ n, file: await referenceClip1080p(dir, n) })));
  const samples: Record<string, Timed[]> = { lanczos: [], learned: [], ...Object.fromEntries(REFERENCE_LENGTHS.map((n) => [`ref${n}`, []])) };
  const own = { path: clip, width: 960, height: 540, seconds: s };
  for (let r = 0; r < settings.rounds; r++) {
    const order = r % 2 === 0 ? (['lanczos', 'learned'] as const) : (['learned', 'lanczos'] as const);
    for (const m of order) {
      const t = await timedRun(own, m, dir);
      samples[m]!.push(t);
      process.stdout.write(`round ${r + 1} ${m}: ${t.wall.toFixed(2)} s wall, ${t.cpu.toFixed(2)} CPU s\n`);
    }
    for (const { n, file } of refs) {
      const t = await timedRun({ path: file.path, width: 1280, height: 720, seconds: n / 30 }, 'lanczos', dir);
      samples[`ref${n}`]!.push(t);
      process.stdout.write(`round ${r + 1} reference, ${n} frames: ${t.cpu.toFixed(2)} CPU s\n`);
    }
  }
  const wall = (m: string) => median(samples[m]!.map((t) => t.wall));
  const cpu = (m: string) => median(samples[m]!.map((t) => t.cpu));
  const lanczos = { label: 'lanczos', value: s / wall('lanczos') };
  const wallRatio = wall('learned') / wall('lanczos');
  const frames = Math.round(s * 25);
  const info = { kind: 'video' as const, width: 960, height: 540, durationSeconds: s, frameRate: 25, frames };
  const sparks = upscaleSparks(upscaleWork(info, 1080, 'learned')!, s, '1080p', 'learned');
  const [n, twice] = REFERENCE_LENGTHS;
  const { perFrameS, fixedS } = splitCpu(n, cpu(`ref${n}`), cpu(`ref${twice}`));
  // The 1080p price's 10 s: REFERENCE_FRAMES frames for PER_10_SECONDS['1080p'] Sparks.
  const reference = (fixedS + REFERENCE_FRAMES * perFrameS) / PER_10_SECONDS['1080p']!;
  const figures = [
    figure({ name: 'lanczos_realtime', figure: 'video_upscale lanczos, 960x540 -> 1080p: realtime factor', unit: 'x', value: lanczos.value }),
    figure({ name: 'learned_realtime', figure: 'video_upscale learned, 960x540 -> 1080p: realtime factor', unit: 'x', value: s / wall('learned'), baseline: lanczos }),
    figure({ name: 'learned_wall_ratio', figure: 'diag: learned wall time / lanczos wall time', unit: 'x', value: wallRatio }),
    figure({
      name: 'learned_cpu_ratio',
      figure: `learned CPU seconds / lanczos CPU seconds (the default's bar: <= ${BAR.cpuRatio})`,
      unit: 'x',
      value: cpu('learned') / cpu('lanczos'),
      target: { on: 'value', op: '<=', limit: BAR.cpuRatio },
      roundValues: samples.learned!.map((t, i) => t.cpu / samples.lanczos![i]!.cpu),
    }),
    figure({
      name: 'learned_cpu_per_spark',
      figure: `learned: CPU seconds per Spark of its price (${sparks} Sparks for the clip), against what a Spark buys on the 1080p reference here`,
      unit: 's',
      value: cpu('learned') / sparks,
      baseline: { label: 'the 1080p reference (10 s of 1280x720 at 30 fps, lanczos, 2 Sparks)', value: reference },
      target: { on: 'ratio', op: '<=', limit: REFERENCE_TOLERANCE },
      note: `reference ${perFrameS.toFixed(3)} CPU s a frame + ${fixedS.toFixed(2)} s a run, from ${REFERENCE_LENGTHS.join(' and ')} frames; the prices were set at ${CPU_SECONDS_PER_SPARK} CPU s a Spark on the benchmark machine`,
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

async function photoSize(file: string): Promise<{ width: number; height: number }> {
  const sharp = (await import('sharp')).default;
  const m = await sharp(file).metadata();
  return { width: m.width ?? 0, height: m.height ?? 0 };
}

/** Per clip and method: mean luma PSNR (dB) and pan flicker (grey levels). */
interface ClipScore {
  psnr: { learned: number; lanczos: number };
  flicker: { learned: number; lanczos: number };
}
type Scores = Record<(typeof REDUCTIONS)[number], ClipScore[]>;

/** `small` (w/2 x h/2) enlarged to w x h by both methods, each ending in the tool's H.264 encode; their luma frames. */
async function upscaleBoth(small: string, frames: number, w: number, h: number, out: string): Promise<{ learned: Buffer[]; lanczos: Buffer[] }> {
  const input = { path: small, label: 'the video', pricedSeconds: frames / FPS };
  const signal = new AbortController().signal;
  const facts = await probeVideo(media, input, { signal, timeLimitMs: 60_000 });
  const learnedOut = `${out}-learned.mp4`;
  await runLearned({
    bins: media, input, facts, targetHeight: h, encodeArgs: [...H264, '-c:a', 'copy', ...MP4], output: learnedOut, signal,
    timeLimitMs: 600_000, maxOutputBytes: 1024 ** 3, threads: settings.threads, net, onProgress: () => undefined,
  });
  const lanczosOut = `${out}-lanczos.mp4`;
  await runFfmpeg({
    bins: media, inputs: [input], output: lanczosOut, expectedSeconds: frames / FPS, signal, timeLimitMs: 600_000, maxOutputBytes: 1024 ** 3, threads: settings.threads,
    args: ['-map', '0:v:0', '-map', '0:a:0?', '-vf', `scale=-2:${h}:flags=lanczos`, '-vsync', 'passthrough', ...H264, '-c:a', 'copy', ...MP4],
  });
  return { learned: await lumaFrames(learnedOut, w, h), lanczos: await lumaFrames(lanczosOut, w, h) };
}

/** The clips made here (originals and their reductions) are lossless H.264. */
const LOSSLESS = ['-c:v', 'libx264', '-preset', 'ultrafast', '-qp', '0'];

/** A photo's crop as a lossless clip of `frames` frames: panning 2 px right and 1 px down a frame, or still. */
async function truthClip(photo: string, w: number, h: number, frames: number, pan: boolean, file: string): Promise<void> {
  const crop = pan ? `crop=${w}:${h}:'2*n':'n'` : `crop=${w}:${h}:0:0`;
  await ffmpeg(['-loop', '1', '-framerate', String(FPS), '-i', photo, '-vf', `${crop},format=yuv444p`, '-frames:v', String(frames), ...LOSSLESS, file]);
}

/** `clip` (w x h) reduced 2x by swscale's `flags`, then `after` (a filter, or none), as a lossless clip. */
async function reducedClip(clip: string, w: number, h: number, flags: string, file: string, after?: string): Promise<void> {
  const filter = [`scale=${w / 2}:${h / 2}:flags=${flags}`, 'format=yuv444p', ...(after ? [after] : [])].join(',');
  await ffmpeg(['-i', clip, '-vf', filter, ...LOSSLESS, file]);
}

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
    await truthClip(photo, w, h, f, true, truthFile);
    const truth = await lumaFrames(truthFile, w, h);
    names.push(`${name} (${w}x${h})`);
    for (const reduction of REDUCTIONS) {
      const small = path.join(dir, `small-${names.length}-${reduction}.mp4`);
      await reducedClip(truthFile, w, h, reduction, small);
      const out = await upscaleBoth(small, f, w, h, path.join(dir, `pan-${names.length}-${reduction}`));
      const s: ClipScore = {
        psnr: { learned: meanPsnr(out.learned, truth, w, h, BORDER), lanczos: meanPsnr(out.lanczos, truth, w, h, BORDER) },
        flicker: { learned: panFlicker(out.learned, truth, w, h, BORDER), lanczos: panFlicker(out.lanczos, truth, w, h, BORDER) },
      };
      scores[reduction].push(s);
      process.stdout.write(
        `${name} ${reduction}: learned ${s.psnr.learned.toFixed(2)} dB, lanczos ${s.psnr.lanczos.toFixed(2)} dB; ` +
          `pan flicker learned ${s.flicker.learned.toFixed(3)}, lanczos ${s.flicker.lanczos.toFixed(3)}\n`,
      );
    }
  }
  return { scores, names };
}

/** Static scenes: each photo still, reduced 2x (bicubic), fresh noise every frame; consecutive-frame flicker of both outputs. */
async function staticScenes(dir: string): Promise<{ name: string; learned: number; lanczos: number }[]> {
  const f = settings.qualityFrames;
  const rows: { name: string; learned: number; lanczos: number }[] = [];
  for (const name of PHOTOS) {
    const photo = path.join(EVAL, `${name}_SRF_2_HR.png`);
    const size = await photoSize(photo);
    const w = Math.floor(size.width / 4) * 4;
    const h = Math.floor(size.height / 4) * 4;
    const still = path.join(dir, `still-${rows.length}.mp4`);
    await truthClip(photo, w, h, f, false, still);
    const small = path.join(dir, `still-small-${rows.length}.mp4`);
    await reducedClip(still, w, h, 'bicubic', small, STATIC_NOISE);
    const out = await upscaleBoth(small, f, w, h, path.join(dir, `still-${rows.length}`));
    const row = { name: `${name} (${w}x${h})`, learned: staticFlicker(out.learned, w, h, BORDER), lanczos: staticFlicker(out.lanczos, w, h, BORDER) };
    rows.push(row);
    process.stdout.write(`${name} still: flicker learned ${row.learned.toFixed(3)}, lanczos ${row.lanczos.toFixed(3)}\n`);
  }
  return rows;
}

async function main(): Promise<void> {
  const before = loadNote();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'toolrun-bench-video-learned-'));
  const cleanup = async () => {
    await net.close();
    fs.rmSync(dir, { recursive: true, force: true });
  };
  watchdog('video-learned', cleanup);
  try {
    const sp = await speed(dir);
    const figures = [...sp.figures];
    const notes = [
      `Speed: a ${settings.speedSeconds} s 960x540 25 fps clip panning across a photograph, to 1080p through the runner, ${settings.rounds} round(s), medians; ffmpeg threads ${settings.threads}, the network's threads its default (the cores, at most 4). CPU seconds include reaped children (both ffmpegs).`,
      `Price: learned costs the lanczos price plus 1 Spark per started ${LEARNED_FRAME_MP_PER_SPARK} input frame-megapixels (docs/prices.md), from the CPU a Spark buys on the Lanczos path's prices (${CPU_SECONDS_PER_SPARK} CPU s on the benchmark machine). The CPU-per-Spark figure sets learned against that reference measured in this run (10 s of 1280x720 at 30 fps to 1080p for 2 Sparks, extrapolated from ${REFERENCE_LENGTHS.join(' and ')} frames, as bench:tools does), so a slower machine does not read as a cheaper price; it fails past ${REFERENCE_TOLERANCE} times.`,
      `Medians, in seconds:\n\n${'```'}text\n${table(['method', 'wall s', 'CPU s', 'realtime x'], sp.rows)}\n${'```'}`,
    ];
    let details: unknown = { speed: sp.samples };
    if (fs.existsSync(EVAL)) {
      const q = await quality(dir);
      const still = await staticScenes(dir);
      const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
      for (const r of REDUCTIONS) {
        const lz = mean(q.scores[r].map((s) => s.psnr.lanczos));
        const le = mean(q.scores[r].map((s) => s.psnr.learned));
        figures.push(
          figure({ name: `learned_psnr_${r}`, figure: `learned: mean luma PSNR, frames reduced 2x (${r})`, unit: 'dB', value: le, baseline: { label: 'lanczos', value: lz } }),
          figure({
            name: `learned_gain_${r}`, figure: `learned minus lanczos, mean luma PSNR (${r}; the default's bar: >= ${BAR.gainDb})`, unit: 'dB', value: le - lz,
            target: { on: 'value', op: '>=', limit: BAR.gainDb }, roundValues: q.scores[r].map((s) => s.psnr.learned - s.psnr.lanczos), spreadOver: 'clips',
          }),
          figure({
            name: `learned_pan_flicker_${r}`,
            figure: `pan flicker: mean |consecutive-frame difference - the original's|, grey levels (${r}; the default's bar: within ${Math.round((BAR.flickerRatio - 1) * 100)}% of lanczos)`,
            unit: '', value: mean(q.scores[r].map((s) => s.flicker.learned)), baseline: { label: 'lanczos', value: mean(q.scores[r].map((s) => s.flicker.lanczos)) },
            target: { on: 'ratio', op: '<=', limit: BAR.flickerRatio }, roundRatios: q.scores[r].map((s) => s.flicker.learned / s.flicker.lanczos), spreadOver: 'clips',
          }),
        );
      }
      figures.push(
        figure({
          name: 'learned_static_flicker',
          figure: `static flicker: mean |consecutive-frame difference| of a still scene with fresh noise each frame, grey levels (the default's bar: within ${Math.round((BAR.flickerRatio - 1) * 100)}% of lanczos)`,
          unit: '', value: mean(still.map((s) => s.learned)), baseline: { label: 'lanczos', value: mean(still.map((s) => s.lanczos)) },
          target: { on: 'ratio', op: '<=', limit: BAR.flickerRatio }, roundRatios: still.map((s) => s.learned / s.lanczos), spreadOver: 'clips',
        }),
      );
      const bar = figures.filter((x) => x.name === 'learned_cpu_ratio' || x.name.startsWith('learned_gain_') || x.name.includes('flicker'));
      const missed = bar.filter((x) => x.pass === false).map((x) => x.name);
      const rows = q.names.map((n, i) => [n, ...REDUCTIONS.flatMap((r) => [q.scores[r][i]!.psnr.lanczos.toFixed(2), q.scores[r][i]!.psnr.learned.toFixed(2)])]);
      const flickerRows = q.names.map((n, i) => [n, ...REDUCTIONS.flatMap((r) => [q.scores[r][i]!.flicker.lanczos.toFixed(3), q.scores[r][i]!.flicker.learned.toFixed(3)])]);
      notes.push(
        `Default: ${
          missed.length === 0
            ? `every bar of issue 38 is met (${bar.length} figures): learned has earned the default (${DEFAULT_METHOD} in src/tools/video/upscale-rules.ts)`
            : `learned misses ${missed.join(', ')}: ${DEFAULT_METHOD === 'learned' ? 'the default (learned) should go back to lanczos' : `${DEFAULT_METHOD} stays the default`}`
        }.`,
        `Quality: ${settings.qualityFrames} frames at ${FPS} fps panning across each photo (whole pixels), lossless; reduced 2x per frame by swscale (bicubic: antialiased, area), enlarged back 2x by each method ending in the tool's H.264 CRF 20; luma PSNR against the original frames, ${BORDER} px border left out. Ratios of PSNRs mean little; the gain in dB is the figure; its spread is over the clips.`,
        `Flicker (bench/lib/video-frames.ts), ${BORDER} px border left out, spreads over the clips: on the pans, |(out[t] - out[t-1]) - (original[t] - original[t-1])| averaged over pixels and frame pairs (motion the original has is not flicker); on still scenes (each photo unmoving, reduced 2x by bicubic, then ffmpeg ${STATIC_NOISE} on luma, fresh every frame, as a camera's still shot carries, lossless), |out[t] - out[t-1]|.`,
        `Per clip, mean luma PSNR in dB:\n\n${'```'}text\n${table(['clip', 'bicubic lanczos', 'bicubic learned', 'area lanczos', 'area learned'], rows)}\n${'```'}`,
        `Per clip, pan flicker in grey levels:\n\n${'```'}text\n${table(['clip', 'bicubic lanczos', 'bicubic learned', 'area lanczos', 'area learned'], flickerRows)}\n${'```'}`,
        `Still scenes, flicker in grey levels:\n\n${'```'}text\n${table(['clip', 'lanczos', 'learned'], still.map((s) => [s.name, s.lanczos.toFixed(3), s.learned.toFixed(3)]))}\n${'```'}`,
      );
      details = { speed: sp.samples, quality: q, still };
    } else {
      notes.push(`Quality and flicker: not measured, ${path.relative(ROOT, EVAL)} is not on this machine.`);
    }
    const result: BenchResult = {
      ...resultHeader('video-learned', 'video_upscale: learned vs lanczos, speed at 540p -> 1080p, luma PSNR and flicker on panned and still photos',
        { before, after: loadNote() }, { server: 'none (no database involved)', version: null }, { ...settings, photos: PHOTOS, reductions: REDUCTIONS, model: candidate ?? 'shipped' }),
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
