import path from 'node:path';
import { probeVideo, runFfmpeg, type VideoFacts } from '../../media/ffmpeg.js';
import { stringValue, ToolError, type RunContext, type ToolOutput } from '../manifest.js';
import { encodeProgress, H264, H264_CODEC, MP4, namedInputs, PROBE_TIME_LIMIT_MS, VIDEO_MAX_OUTPUT_BYTES, vouchedMp4, type VideoRunOptions } from './common.js';
import { planTransition } from './transition-graph.js';
import { DEFAULT_DURATION, isStyle, TRANSITION_TIMEOUT_SECONDS } from './transition-rules.js';

/** Joins the clips in order with the chosen transition into one MP4 (H.264 + AAC). */
export async function runTransition(ctx: RunContext, opts: VideoRunOptions = {}): Promise<ToolOutput[]> {
  const { inputs } = namedInputs(ctx, 'clips', (i) => `clip ${i + 1}`);
  if (inputs.length < 2 || inputs.length > 10) throw new ToolError('video_transition takes 2 to 10 clips.');
  const style = stringValue({ values: ctx.values, media: {}, durationHint: null }, 'style', 'fade');
  if (!isStyle(style)) throw new ToolError(`Unknown transition style ${style}.`);
  const d = typeof ctx.values.duration_seconds === 'number' ? ctx.values.duration_seconds : DEFAULT_DURATION;
  // The lengths are read again from the files themselves: the run relies on them, not on the upload's record.
  const facts: VideoFacts[] = [];
  for (const input of inputs) {
    facts.push(await probeVideo(ctx.media, input, { signal: ctx.signal, timeLimitMs: PROBE_TIME_LIMIT_MS }));
    ctx.progress((0.02 * facts.length) / inputs.length);
  }
  const plan = planTransition(facts, style, d);
  const output = path.join(ctx.workDir, 'transition.mp4');
  await runFfmpeg({
    bins: ctx.media,
    inputs,
    args: ['-filter_complex', plan.graph, '-map', '[vout]', '-map', '[aout]', ...H264, '-r', plan.rate, '-c:a', 'aac', '-b:a', '160k', ...MP4],
    output,
    expectedSeconds: plan.seconds,
    signal: ctx.signal,
    timeLimitMs: TRANSITION_TIMEOUT_SECONDS * 1000,
    maxOutputBytes: opts.maxOutputBytes ?? VIDEO_MAX_OUTPUT_BYTES,
    threads: opts.threads,
    onProgress: encodeProgress(ctx),
  });
  ctx.logger.debug({ frames: plan.frames, seconds: plan.seconds, style }, 'transition encoded');
  // The graph trims every clip to a frame count at one constant rate: the frames are exact.
  return [await vouchedMp4(output, 'transition.mp4', { width: plan.width, height: plan.height, codec: H264_CODEC, seconds: { min: plan.seconds, max: plan.seconds }, frames: plan.frames })];
}
