import path from 'node:path';
import { probeVideo, runFfmpeg } from '../../media/ffmpeg.js';
import { LENGTH_TOLERANCE_SECONDS } from '../../media/measure.js';
import { stringValue, ToolError, type MediaInfo, type RunContext, type ToolOutput } from '../manifest.js';
import { sharedVideoNet, type LumaNet } from '../upscaler/luma-net.js';
import { encodeProgress, H264, H264_CODEC, MP4, namedInputs, PROBE_TIME_LIMIT_MS, scaledWidth, VIDEO_MAX_OUTPUT_BYTES, vouchedMp4, type VideoRunOptions } from './common.js';
import { runLearned } from './learned-frames.js';
import { learnedTimeLimitSeconds, TARGET_HEIGHTS, UPSCALE_METHODS, UPSCALE_TIMEOUT_SECONDS, upscaleMethod, type UpscaleMethod } from './upscale-rules.js';
import { upscaleWork } from './upscale-work.js';

/** Audio codecs an MP4 takes as they are; others (Opus, Vorbis, FLAC, PCM...) are encoded to AAC. */
const MP4_AUDIO = ['aac', 'mp3', 'ac3', 'eac3', 'alac'];

function targetOf(values: Record<string, unknown>): { name: string; height: number } {
  const name = stringValue({ values, media: {}, durationHint: null }, 'target', '1080p');
  const height = TARGET_HEIGHTS[name];
  if (!height) throw new ToolError(`Unknown target ${name}.`);
  return { name, height };
}

/** The method asked for, or the default for this file (upscale-rules.ts), as the price was made. */
function methodOf(values: Record<string, unknown>, info: MediaInfo): UpscaleMethod {
  const name = stringValue({ values, media: {}, durationHint: null }, 'method', '');
  if (name && !UPSCALE_METHODS.some((m) => m === name)) throw new ToolError(`Unknown method ${name}.`);
  return upscaleMethod({ values, media: { video: [info] }, durationHint: null });
}

export interface UpscaleRunOptions extends VideoRunOptions {
  /** The learned path's network; default the process's shared video network (tests give another). */
  net?: LumaNet;
}

/**
 * Upscale to 1080 or 2160 lines, width from the aspect ratio (even), H.264 at CRF 20 (preset
 * veryfast), first audio stream copied when MP4 can hold it. `lanczos`: one ffmpeg, swscale's
 * Lanczos, frames passed with their own timestamps (rate kept). `learned`: the luma network's 2x
 * between two ffmpegs (learned-frames.ts), at a constant rate, then Lanczos to the target when
 * that is not exactly 2x.
 */
export async function runUpscale(ctx: RunContext, opts: UpscaleRunOptions = {}): Promise<ToolOutput[]> {
  const { files, inputs } = namedInputs(ctx, 'video', () => 'the video');
  const input = inputs[0]!;
  const target = targetOf(ctx.values);
  const method = methodOf(ctx.values, files[0]!.info);
  // What the run was priced for, from the upload's probe: it does no more (docs/decisions.md).
  const priced = upscaleWork(files[0]!.info, target.height, method);
  if (!priced) throw new ToolError('The size of the video is not known; upload it again.');
  const facts = await probeVideo(ctx.media, input, { signal: ctx.signal, timeLimitMs: PROBE_TIME_LIMIT_MS });
  ctx.progress(0.02);
  if (facts.height >= target.height) {
    throw new ToolError(`The video is already ${facts.height} px high, at or above the ${target.height} px target.`);
  }
  if (facts.width * facts.height > priced.inputPixels || scaledWidth(facts.width, facts.height, target.height) * target.height > priced.outputPixels) {
    throw new ToolError('The video\'s frames are larger than the ones it was priced for; upload it again.');
  }
  const audio = facts.audioCodec && MP4_AUDIO.includes(facts.audioCodec) ? ['-c:a', 'copy'] : ['-c:a', 'aac', '-b:a', '192k'];
  const fileName = `upscaled-${target.name}.mp4`;
  const output = path.join(ctx.workDir, fileName);
  const size = { width: scaledWidth(facts.width, facts.height, target.height), height: target.height, codec: H264_CODEC };
  if (method === 'learned') {
    const seconds = learnedTimeLimitSeconds(priced);
    const frames = await runLearned({
      bins: ctx.media,
      input,
      facts,
      targetHeight: target.height,
      encodeArgs: [...H264, ...audio, ...MP4],
      output,
      signal: ctx.signal,
      timeLimitMs: seconds * 1000,
      maxOutputBytes: opts.maxOutputBytes ?? VIDEO_MAX_OUTPUT_BYTES,
      threads: opts.threads,
      net: opts.net ?? sharedVideoNet(),
      maxFrames: priced.frames,
      onProgress: encodeProgress(ctx),
    });
    // A constant rate: every frame given to the encoder lasts one frame at the probed rate.
    const length = (frames * facts.fps.den) / facts.fps.num;
    return [await vouchedMp4(output, fileName, { ...size, seconds: { min: length, max: length }, frames })];
  }
  await runFfmpeg({
    bins: ctx.media,
    inputs,
    args: [
      '-map', '0:v:0', '-map', '0:a:0?',
      '-vf', `scale=-2:${target.height}:flags=lanczos`,
      '-vsync', 'passthrough', '-frames:v', String(priced.frames),
      ...H264, ...audio, ...MP4,
    ],
    output,
    expectedSeconds: facts.durationSeconds,
    signal: ctx.signal,
    timeLimitMs: UPSCALE_TIMEOUT_SECONDS * 1000,
    maxOutputBytes: opts.maxOutputBytes ?? VIDEO_MAX_OUTPUT_BYTES,
    threads: opts.threads,
    onProgress: encodeProgress(ctx),
  });
  // The input's own timestamps pass through: its frame count is not known here. Its length is as
  // measured (less what a measurement may miss), at most what ffmpeg may read of it plus a frame.
  const frame = facts.fps.den / facts.fps.num;
  const seconds = {
    min: Math.max(0, facts.durationSeconds - LENGTH_TOLERANCE_SECONDS),
    max: (input.pricedSeconds ?? facts.durationSeconds) + LENGTH_TOLERANCE_SECONDS + frame,
  };
  return [await vouchedMp4(output, fileName, { ...size, seconds, frames: null })];
}
