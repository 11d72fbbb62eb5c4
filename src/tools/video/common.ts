import fs from 'node:fs/promises';
import type { NamedInput } from '../../media/ffmpeg.js';
import { ToolError, type EncodedVideo, type InputFile, type RunContext, type ToolOutput } from '../manifest.js';

/** What a video output may weigh before ffmpeg stops writing it (-fs) and the run fails. */
export const VIDEO_MAX_OUTPUT_BYTES = 4 * 1024 * 1024 * 1024;
/** How long a single probe of an input may take. */
export const PROBE_TIME_LIMIT_MS = 60_000;
/** H.264 settings of both video tools: quality-driven (CRF), veryfast keeps 4K jobs in bounds on small machines. */
export const H264 = ['-c:v', 'libx264', '-preset', 'veryfast', '-crf', '20', '-pix_fmt', 'yuv420p'];
export const MP4 = ['-max_muxing_queue_size', '4096', '-movflags', '+faststart', '-f', 'mp4'];
/** What ffprobe calls the codec H264 encodes to. */
export const H264_CODEC = 'h264';

/** Options a deployment (or a test) may give a video runner. */
export interface VideoRunOptions {
  /** ffmpeg threads (decoder, filters, encoder each), 1..16; default 2. */
  threads?: number;
  maxOutputBytes?: number;
}

/**
 * The files of a media slot as ffmpeg inputs named for messages ("clip 2"), never by path, each
 * bounded by the length its run was priced for (the file row's duration_seconds).
 */
export function namedInputs(ctx: RunContext, slot: string, label: (i: number) => string): { files: InputFile[]; inputs: NamedInput[] } {
  const files = ctx.files[slot] ?? [];
  if (!files.length) throw new ToolError(`No ${slot} were given.`);
  const inputs = files.map((f, i) => {
    const priced = f.info.durationSeconds;
    // Without a length the price had nothing to go on, so there is no bound to hold the work to.
    if (priced === null || !(priced > 0)) throw new ToolError(`The length of ${label(i)} is not known; upload it again.`);
    return { path: f.path, label: label(i), pricedSeconds: priced };
  });
  return { files, inputs };
}

/** Progress of a run in two phases: probing the inputs (a few percent), then the encode. */
export function encodeProgress(ctx: RunContext): (fraction: number) => void {
  return (f) => ctx.progress(0.02 + 0.97 * f);
}

/**
 * The width `scale=-2:<height>` gives a `width` x `height` picture, as ffmpeg computes it
 * (ff_scale_adjust_dimensions: av_rescale rounding to nearest, then times the factor 2).
 */
export function scaledWidth(width: number, height: number, targetHeight: number): number {
  return Math.floor((targetHeight * width + height) / (2 * height)) * 2;
}

/**
 * An MP4 the tool's own ffmpeg wrote and exited 0 on, with what the tool asked of it
 * (ToolOutput.encodedVideo): the engine checks the file's header against this instead of
 * decoding it. The length is taken now, once ffmpeg is gone and nothing else writes the file.
 */
export async function vouchedMp4(file: string, fileName: string, asked: Omit<EncodedVideo, 'bytes'>): Promise<ToolOutput> {
  const { size } = await fs.stat(file);
  return { path: file, fileName, mimeType: 'video/mp4', encodedVideo: { ...asked, bytes: size } };
}
