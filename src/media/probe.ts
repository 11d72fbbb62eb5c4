import { execFile } from 'node:child_process';
import { fileTypeFromBuffer, fileTypeFromFile } from 'file-type';
import sharp from 'sharp';
import type { Storage } from '../storage/storage.js';
import type { MediaBinaries } from './binaries.js';
import { MAX_FRAME_RATE, MAX_MEDIA_SECONDS, MAX_VIDEO_PIXELS, workingFrameRate } from './limits.js';
import { measureLength, type MeasuredStream, type Measurement } from './measure.js';

export type MediaKind = 'image' | 'video' | 'audio' | 'other';

export interface ProbeResult {
  kind: MediaKind;
  /** Type sniffed from the bytes, or null when nothing recognisable was found. */
  mime: string | null;
  decodable: boolean;
  width: number | null;
  height: number | null;
  durationSeconds: number | null;
  videoCodec: string | null;
  audioCodec: string | null;
  /** The rate a run's ffmpeg works the video at (workingFrameRate), null when none is usable. */
  frameRate: number | null;
  /** A video stream's frames, its packets as the length's scan counted them. */
  frames: number | null;
  /** An image's bands and bits per sample as decoded (sharp's channels and depth). */
  channels: number | null;
  bitsPerSample: number | null;
  hasAudio: boolean;
  /** Why the file is not usable, when it is not. */
  problem: string | null;
}

/** Limits every probe obeys: time per external call, and how large a picture or how long a file may be. */
export interface ProbeLimits {
  timeoutMs: number;
  /** sharp's own default (16383 x 16383): larger images are refused from their header, never decoded. */
  maxImagePixels: number;
  /** Pixels of one video frame; larger frames are refused before any is decoded. */
  maxVideoPixels: number;
  /** Longest audio or video accepted; null: no bound (tool outputs, which their run time bounds). */
  maxDurationSeconds: number | null;
  /**
   * Most video frames a second of measured length may hold (any file may hold a second's worth):
   * a tool's work follows its frames, its price the length, so frames squeezed into a short
   * timeline would be work nobody paid for.
   */
  maxFrameRate: number;
  /**
   * Start a claimed video's frame decode and packet scan with the stream probe instead of after
   * its checks (tool outputs: the decoder's -max_pixels still bounds the frame).
   */
  eager?: boolean;
}

export { MAX_FRAME_RATE, MAX_MEDIA_SECONDS, MAX_VIDEO_PIXELS };

/** Uploads. */
export const DEFAULT_PROBE_LIMITS: ProbeLimits = {
  timeoutMs: 60_000,
  maxImagePixels: 268_402_689,
  maxVideoPixels: MAX_VIDEO_PIXELS,
  maxDurationSeconds: MAX_MEDIA_SECONDS,
  maxFrameRate: MAX_FRAME_RATE,
};

/** Tool outputs: the same picture bounds; their length is whatever the (time-bounded) run made. */
export const OUTPUT_PROBE_LIMITS: ProbeLimits = { ...DEFAULT_PROBE_LIMITS, maxDurationSeconds: null, eager: true };

const EMPTY: Omit<ProbeResult, 'kind' | 'mime' | 'decodable' | 'problem'> = {
  width: null,
  height: null,
  durationSeconds: null,
  videoCodec: null,
  audioCodec: null,
  frameRate: null,
  frames: null,
  channels: null,
  bitsPerSample: null,
  hasAudio: false,
};

/** Bits of one sample of each libvips band format (sharp's `depth`). */
const SAMPLE_BITS: Record<string, number> = { uchar: 8, char: 8, ushort: 16, short: 16, uint: 32, int: 32, float: 32, complex: 64, double: 64, dpcomplex: 128 };

function isAudioVideo(mime: string | null): boolean {
  return Boolean(mime && (mime.startsWith('video/') || mime.startsWith('audio/') || mime === 'application/ogg' || mime === 'application/mxf'));
}

function run(cmd: string, args: string[], timeoutMs: number, signal?: AbortSignal): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    execFile(cmd, args, { timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024, killSignal: 'SIGKILL', ...(signal ? { signal } : {}) }, (err, stdout, stderr) => {
      if (err) reject(Object.assign(err, { stderr: String(stderr) }));
      else resolve({ stdout: String(stdout), stderr: String(stderr) });
    });
  });
}

async function probeImage(path: string, mime: string, limits: ProbeLimits): Promise<ProbeResult> {
  try {
    const img = sharp(path, { limitInputPixels: limits.maxImagePixels, failOn: 'error' });
    const meta = await img.metadata();
    // Decoding is what proves the file is usable, not its header alone. Every entropy-coded block
    // is still read (truncated or corrupt data fails under failOn: 'error'), but at an eighth of
    // the size: JPEG and WebP shrink on load, a fraction of a full decode. Others decode in full.
    const sample = Math.max(1, Math.ceil((meta.width ?? 8) / 8));
    await img.clone().resize({ width: sample, kernel: 'nearest' }).raw().toBuffer();
    const rotated = (meta.orientation ?? 1) >= 5;
    const width = meta.width ?? null;
    const height = meta.height ?? null;
    return {
      ...EMPTY,
      kind: 'image',
      mime,
      decodable: true,
      width: rotated ? height : width,
      height: rotated ? width : height,
      channels: meta.channels ?? null,
      bitsPerSample: SAMPLE_BITS[meta.depth ?? ''] ?? null,
      problem: null,
    };
  } catch (err) {
    // libvips may name the file: the client sees this, and must not see the server's paths.
    const message = (err as Error).message.split(path).join('the file').replace(/(?:\/[\w.@%+=-]+)+\/?/g, '<file>').trim().slice(0, 200);
    const problem = /pixel limit/i.test(message)
      ? `the image has more than ${limits.maxImagePixels} pixels (16383 x 16383), the most accepted`
      : `the image does not decode: ${message}`;
    return { ...EMPTY, kind: 'image', mime, decodable: false, problem };
  }
}

/** One stream of `ffprobe -print_format json -show_streams`. */
export interface FfprobeStream {
  index?: number;
  codec_type?: string;
  codec_name?: string;
  width?: number;
  height?: number;
  avg_frame_rate?: string;
  r_frame_rate?: string;
  duration?: string;
  tags?: { rotate?: string };
  side_data_list?: { rotation?: number }[];
  disposition?: { attached_pic?: number };
}

function rate(r: string | undefined): number | null {
  if (!r) return null;
  const [n, d] = r.split('/').map(Number);
  return n && d ? n / d : null;
}

const OVERSIZED_FRAME = /Picture size (\d+)x(\d+) exceeds specified max pixel count/;

function megapixels(pixels: number): string {
  return `${Math.round(pixels / 100_000) / 10} MP`;
}

function hours(seconds: number): string {
  return seconds >= 3600 ? `${Math.round(seconds / 360) / 10} h` : `${Math.round(seconds)} s`;
}

/** The measured streams: audio, and video that is not a cover picture. */
function measuredStreams(streams: FfprobeStream[]): MeasuredStream[] {
  return streams
    .filter((s) => s.index !== undefined && (s.codec_type === 'audio' || (s.codec_type === 'video' && !s.disposition?.attached_pic)))
    .map((s) => ({ index: s.index!, frameRate: rate(s.avg_frame_rate) ?? rate(s.r_frame_rate), video: s.codec_type === 'video' }));
}

/**
 * ffprobe for streams and declared length, then, at once, one decoded frame (or second of audio)
 * to prove it plays and the length measured from the packets (measure.ts). The first two run with
 * `-max_pixels`, so a frame over the limit is refused by the decoder before its memory is touched;
 * for uploads, frame size and declared length are checked before anything decodes. Tool outputs
 * (`limits.eager`) that claim to be video start the frame decode and the packet scan with the
 * stream probe: three processes at once, one wait. The length kept is the longer of the declared
 * and the measured: a header claiming less than the streams hold never lowers it.
 */
async function probeAudioVideo(source: string, mime: string | null, bins: MediaBinaries, limits: ProbeLimits): Promise<ProbeResult> {
  const whitelist = ['-protocol_whitelist', source.startsWith('http') ? 'http,https,tcp,tls,file' : 'file'];
  const maxPixels = ['-max_pixels', String(limits.maxVideoPixels)];
  // Ends whatever still runs when the probe answers early.
  const stop = new AbortController();
  const eager = limits.eager === true && Boolean(mime?.startsWith('video/'));
  // Eager (a tool's own video output): the early decode and packet scan skip the demuxer's stream
  // analysis (which decodes frames of its own to guess parameters): the stream probe still does
  // it and decides which streams are measured, the decoder still has to turn the first frame out
  // of the file's own codec parameters, and the packets listed are the same.
  const noAnalysis = eager ? ['-nofind_stream_info'] : [];
  const decodeCheck = (video: boolean, early = false): Promise<boolean> => {
    const decode = video ? ['-map', '0:v:0', '-frames:v', '1'] : ['-map', '0:a:0', '-t', '1'];
    // One decoder thread: for one frame, starting a thread per core costs more than it saves.
    const args = ['-v', 'error', '-nostdin', ...whitelist, ...maxPixels, ...(early ? noAnalysis : []), '-threads', '1', '-i', source, ...decode, '-f', 'null', '-'];
    return run(bins.ffmpeg, args, limits.timeoutMs, stop.signal).then(
      () => true,
      () => false,
    );
  };
  let streamsKnown: (streams: MeasuredStream[]) => void = () => undefined;
  const streamList = new Promise<MeasuredStream[]>((resolve, reject) => {
    streamsKnown = resolve;
    stop.signal.addEventListener('abort', () => reject(new Error('probe ended')), { once: true });
  });
  streamList.catch(() => undefined);
  const measure = (streams: MeasuredStream[] | Promise<MeasuredStream[]>, early = false) =>
    measureLength({
      command: (args) => [bins.ffprobe, args],
      inputArgs: [...whitelist, ...(early ? noAnalysis : [])],
      source,
      streams,
      timeoutMs: limits.timeoutMs,
      stopAfterSeconds: limits.maxDurationSeconds,
      signal: stop.signal,
    });
  const early = eager ? { decoding: decodeCheck(true, true), measuring: measure(streamList, true) } : null;
  try {
    let info: { streams?: FfprobeStream[]; format?: { duration?: string } };
    let probeStderr = '';
    try {
      const { stdout, stderr } = await run(
        bins.ffprobe,
        ['-v', 'error', ...whitelist, ...maxPixels, '-print_format', 'json', '-show_format', '-show_streams', source],
        limits.timeoutMs,
      );
      probeStderr = stderr;
      info = JSON.parse(stdout) as typeof info;
    } catch (err) {
      return { ...EMPTY, kind: 'other', mime, decodable: false, problem: 'not a readable audio or video file' };
    }
    const streams = info.streams ?? [];
    const video = streams.find((s) => s.codec_type === 'video' && !s.disposition?.attached_pic);
    const audio = streams.find((s) => s.codec_type === 'audio');
    if (!video && !audio) return { ...EMPTY, kind: 'other', mime, decodable: false, problem: 'no audio or video stream' };
    const refused = (problem: string): ProbeResult => ({ ...EMPTY, kind: video ? 'video' : 'audio', mime, decodable: false, problem });
    const oversized = OVERSIZED_FRAME.exec(probeStderr);
    const frame = video?.width && video.height ? { w: video.width, h: video.height } : oversized ? { w: Number(oversized[1]), h: Number(oversized[2]) } : null;
    if (frame && frame.w * frame.h > limits.maxVideoPixels) {
      return refused(`the video's frames are ${frame.w} x ${frame.h} px (${megapixels(frame.w * frame.h)}); at most ${megapixels(limits.maxVideoPixels)} (8192 x 4320) are accepted`);
    }
    // What the container declares: a field the uploader controls, so it only ever adds to the
    // length the streams are measured at below, never takes from it.
    const declared = Number(info.format?.duration ?? video?.duration ?? audio?.duration);
    if (limits.maxDurationSeconds !== null && Number.isFinite(declared) && declared > limits.maxDurationSeconds) {
      return refused(`the file is ${hours(declared)} long; at most ${hours(limits.maxDurationSeconds)} are accepted`);
    }
    const working = video ? workingFrameRate(video.avg_frame_rate, video.r_frame_rate) : null;
    // The size as displayed, after the stream's rotation, as a run's ffmpeg sees its frames (probeVideo).
    const turned = video ? Math.abs(Number(video.side_data_list?.find((d) => d.rotation !== undefined)?.rotation ?? video.tags?.rotate ?? 0)) % 180 === 90 : false;
    const result: ProbeResult = {
      ...EMPTY,
      kind: video ? 'video' : 'audio',
      mime,
      decodable: false,
      width: (turned ? video?.height : video?.width) ?? null,
      height: (turned ? video?.width : video?.height) ?? null,
      durationSeconds: null,
      videoCodec: video?.codec_name ?? null,
      audioCodec: audio?.codec_name ?? null,
      frameRate: working ? working.num / working.den : null,
      hasAudio: Boolean(audio),
      problem: null,
    };
    streamsKnown(measuredStreams(streams));
    // The decode and the measurement read the file independently: run at once, they cost one wait.
    const decoding = early && video ? early.decoding : decodeCheck(Boolean(video));
    const measuring = early ? early.measuring : measure(measuredStreams(streams));
    const [decodes, measured] = await Promise.all([decoding, measuring]);
    if (!decodes) return { ...result, problem: `${result.kind} does not decode` };
    return lengthVerdict(result, refused, measured, declared, limits);
  } finally {
    stop.abort();
  }
}

/** The measured length against the limits: the result with its length, or why it is refused. */
function lengthVerdict(result: ProbeResult, refused: (problem: string) => ProbeResult, measured: Measurement, declared: number, limits: ProbeLimits): ProbeResult {
  const limit = limits.maxDurationSeconds;
  switch (measured.kind) {
    case 'over':
      return refused(`the file's streams run for more than ${hours(limit ?? measured.seconds)}; at most ${hours(limit ?? measured.seconds)} are accepted`);
    case 'timeout':
      return refused(`the file's length could not be measured within the ${Math.round(limits.timeoutMs / 1000)} s limit`);
    case 'failed':
    case 'aborted':
      return refused('not a readable audio or video file');
    case 'measured':
      break;
  }
  const length = Math.max(measured.seconds ?? 0, Number.isFinite(declared) ? declared : 0);
  if (!(length > 0)) return refused("the file's length could not be measured: its packets carry no timestamps");
  const frames = measured.videoFrames;
  if (frames > limits.maxFrameRate * Math.max(1, length)) {
    const perSecond = Math.round(frames / length);
    return refused(
      `the video holds ${frames} frames in ${Number(length.toFixed(2))} s (${perSecond} a second); at most ${limits.maxFrameRate} frames a second are accepted`,
    );
  }
  return { ...result, decodable: true, durationSeconds: length, frames: result.kind === 'video' ? frames : null };
}

/**
 * What a stored file really is: the type sniffed from its first bytes (never the declared one),
 * then sharp for images (on a local copy) and ffprobe/ffmpeg for audio and video (reading the
 * object where it is, through a presigned URL on S3).
 */
export async function probeStored(storage: Storage, key: string, bins: MediaBinaries, limits: ProbeLimits = DEFAULT_PROBE_LIMITS): Promise<ProbeResult> {
  const head = await storage.readHead(key, 64 * 1024);
  const type = await fileTypeFromBuffer(head).catch(() => undefined);
  const mime = type?.mime ?? null;
  if (mime?.startsWith('image/')) {
    const copy = await storage.localCopy(key);
    try {
      return await probeImage(copy.path, mime, limits);
    } finally {
      await copy.cleanup();
    }
  }
  if (isAudioVideo(mime)) {
    return probeAudioVideo(await storage.probeSource(key), mime, bins, limits);
  }
  return { ...EMPTY, kind: 'other', mime, decodable: false, problem: mime ? `${mime} is not an image, video or audio file` : 'unrecognised file type' };
}

/** The same checks on a local file (a tool's output before it is stored). */
/** An image file's type (from its first bytes) and size (from its header): nothing is decoded. */
export async function imageHeader(path: string): Promise<{ mime: string | null; width: number | null; height: number | null }> {
  const type = await fileTypeFromFile(path).catch(() => undefined);
  const meta = await sharp(path).metadata().catch(() => null);
  return { mime: type?.mime ?? null, width: meta?.width ?? null, height: meta?.height ?? null };
}

/** A video file's container and stream header, read by one ffprobe without decoding a frame. */
export interface VideoHeader {
  /** Type sniffed from the first bytes. */
  mime: string | null;
  width: number | null;
  height: number | null;
  codec: string | null;
  /** The video stream's declared length (the container's when the stream has none). */
  videoSeconds: number | null;
  /** The longest declared length, container or video stream: what is recorded for the output. */
  seconds: number | null;
  /** The video stream's frame count from its index (MP4's sample table); null when not declared. */
  frames: number | null;
  /** Why the file is not usable, from the header alone, when it is not. */
  problem: string | null;
}

/**
 * For a tool's own video output (ToolOutput.encodedVideo): type, frame size, codec, declared length
 * and frame count. `-nofind_stream_info`: the demuxer's stream analysis would decode frames, and
 * everything needed here is in the container's header (MP4's moov). The cheap refusals of
 * probeAudioVideo stay: not readable, no video stream, a frame over the limit, more frames than
 * the length allows, no length at all.
 */
export async function videoHeader(path: string, bins: MediaBinaries, limits: ProbeLimits = OUTPUT_PROBE_LIMITS): Promise<VideoHeader> {
  const sniffing = fileTypeFromFile(path).catch(() => undefined);
  const none: VideoHeader = { mime: null, width: null, height: null, codec: null, videoSeconds: null, seconds: null, frames: null, problem: null };
  let info: { streams?: (FfprobeStream & { nb_frames?: string })[]; format?: { duration?: string } };
  try {
    const args = ['-v', 'error', '-protocol_whitelist', 'file', '-nofind_stream_info', '-print_format', 'json', '-show_format', '-show_streams', path];
    info = JSON.parse((await run(bins.ffprobe, args, limits.timeoutMs)).stdout) as typeof info;
  } catch {
    info = {};
  }
  const mime = (await sniffing)?.mime ?? null;
  if (!info.streams) return { ...none, mime, problem: 'not a readable audio or video file' };
  const video = info.streams.find((s) => s.codec_type === 'video' && !s.disposition?.attached_pic);
  if (!video) return { ...none, mime, problem: 'no video stream' };
  const width = video.width ?? null;
  const height = video.height ?? null;
  if (width && height && width * height > limits.maxVideoPixels) {
    return { ...none, mime, problem: `the video's frames are ${width} x ${height} px (${megapixels(width * height)}); at most ${megapixels(limits.maxVideoPixels)} are accepted` };
  }
  const finite = (x: string | undefined): number | null => (x !== undefined && Number.isFinite(Number(x)) && Number(x) > 0 ? Number(x) : null);
  const videoSeconds = finite(video.duration) ?? finite(info.format?.duration);
  const seconds = Math.max(videoSeconds ?? 0, finite(info.format?.duration) ?? 0) || null;
  const frames = video.nb_frames !== undefined && /^\d+$/.test(video.nb_frames) ? Number(video.nb_frames) : null;
  const header: VideoHeader = { mime, width, height, codec: video.codec_name ?? null, videoSeconds, seconds, frames, problem: null };
  if (seconds === null) return { ...header, problem: "the video's header gives no length" };
  if (frames !== null && frames > limits.maxFrameRate * Math.max(1, seconds)) {
    return { ...header, problem: `the video holds ${frames} frames in ${Number(seconds.toFixed(2))} s; at most ${limits.maxFrameRate} frames a second are accepted` };
  }
  return header;
}

export async function probeLocalFile(path: string, bins: MediaBinaries, limits: ProbeLimits = OUTPUT_PROBE_LIMITS): Promise<ProbeResult> {
  const type = await fileTypeFromFile(path).catch(() => undefined);
  const mime = type?.mime ?? null;
  if (mime?.startsWith('image/')) return probeImage(path, mime, limits);
  if (isAudioVideo(mime)) return probeAudioVideo(path, mime, bins, limits);
  return { ...EMPTY, kind: 'other', mime, decodable: false, problem: mime ? `${mime} is not an image, video or audio file` : 'unrecognised file type' };
}
