import { spawn } from 'node:child_process';

/**
 * The length of an audio or video file as its packets tell it, not as its container's header
 * says: the header's duration is a field the uploader writes (a 40 s Matroska file whose Duration
 * element says 1 s plays for 40 s). ffprobe demuxes the file without decoding anything and lists
 * each packet's timestamps; the length is the span from the earliest start to the latest end.
 * Streams whose packets carry no timestamp at all count their packets at the stream's frame rate.
 * Packets flagged discard (an MP4 edit list's audio priming: decoded, never shown) are left out
 * while they add no more than LENGTH_TOLERANCE_SECONDS; past that they are work the price must
 * cover, and the length counts every packet.
 *
 * Cost: one pass over the file's bytes plus about a second of ffprobe per hour of 30 fps video
 * with audio (~260,000 packets); the output is parsed line by line, so memory stays flat.
 */

/** What a measured stream needs: its index and, for the packet-count fallback, its frame rate. */
export interface MeasuredStream {
  index: number;
  frameRate: number | null;
  /** A video stream: its packets (one per frame) are counted as frames. */
  video?: boolean;
}

export type Measurement =
  | { kind: 'measured'; seconds: number | null; videoFrames: number }
  /** The span passed stopAfterSeconds and the scan was stopped there. */
  | { kind: 'over'; seconds: number }
  | { kind: 'timeout' }
  | { kind: 'aborted' }
  /** ffprobe could not be started, or failed before any packet was seen. */
  | { kind: 'failed' };

export interface MeasureOptions {
  /** ffprobe (possibly wrapped, e.g. in setpriv) and the input options placed before the source. */
  command: (args: string[]) => [string, string[]];
  inputArgs: string[];
  source: string;
  /**
   * The streams to measure. A promise lets the scan start before they are known (every stream's
   * packets are kept until then); a rejected one fails the measurement.
   */
  streams: MeasuredStream[] | Promise<MeasuredStream[]>;
  timeoutMs: number;
  /** Stop as soon as the span exceeds this many seconds; null: read to the end. */
  stopAfterSeconds: number | null;
  signal?: AbortSignal;
}

/**
 * How far a length may be off and still be taken as it is: discarded priming left out, how far
 * past its priced length a tool reads an input (ffmpeg.ts), whatever the file's timing quirks.
 */
export const LENGTH_TOLERANCE_SECONDS = 0.5;

interface Span {
  start: number;
  end: number;
}

interface StreamSpans {
  /** Every timed packet, and the ones not flagged discard. */
  all: Span;
  shown: Span;
  packets: number;
  timed: number;
}

const EMPTY_SPAN: Span = { start: Infinity, end: -Infinity };

function widen(span: Span, start: number, end: number): void {
  span.start = Math.min(span.start, start);
  span.end = Math.max(span.end, end);
}

function length(spans: Span[]): number {
  const start = Math.min(...spans.map((s) => s.start));
  const end = Math.max(...spans.map((s) => s.end));
  return end > start ? end - start : 0;
}

/** Accumulates packet lines (`-of compact`: key=value pairs separated by |) into per-stream spans. */
export class PacketSpans {
  private readonly spans = new Map<number, StreamSpans>();

  private streams: MeasuredStream[] | null = null;

  /** Null: the streams are not known yet, and every stream's packets are kept meanwhile. */
  constructor(streams: MeasuredStream[] | null) {
    if (streams) this.setStreams(streams);
  }

  setStreams(streams: MeasuredStream[]): void {
    this.streams = streams;
    const kept = new Map(this.spans);
    this.spans.clear();
    for (const s of streams) this.spans.set(s.index, kept.get(s.index) ?? { all: { ...EMPTY_SPAN }, shown: { ...EMPTY_SPAN }, packets: 0, timed: 0 });
  }

  add(line: string): void {
    let stream = NaN;
    let pts = NaN;
    let dts = NaN;
    let duration = NaN;
    let discarded = false;
    for (const pair of line.split('|')) {
      const eq = pair.indexOf('=');
      const value = pair.slice(eq + 1);
      switch (pair.slice(0, eq)) {
        case 'stream_index':
          stream = Number(value);
          break;
        case 'pts_time':
          pts = Number(value);
          break;
        case 'dts_time':
          dts = Number(value);
          break;
        case 'duration_time':
          duration = Number(value);
          break;
        case 'flags':
          discarded = value.includes('D');
          break;
      }
    }
    if (this.streams === null && Number.isInteger(stream) && !this.spans.has(stream)) {
      this.spans.set(stream, { all: { ...EMPTY_SPAN }, shown: { ...EMPTY_SPAN }, packets: 0, timed: 0 });
    }
    const span = this.spans.get(stream);
    if (!span) return;
    span.packets++;
    const at = Number.isFinite(pts) ? pts : dts;
    if (!Number.isFinite(at)) return;
    const end = at + (Number.isFinite(duration) && duration > 0 ? duration : 0);
    span.timed++;
    widen(span.all, at, end);
    if (!discarded) widen(span.shown, at, end);
  }

  /** Packets of the video streams: the frames a tool decodes, whatever the timestamps say. */
  videoFrames(): number {
    let frames = 0;
    for (const s of this.streams ?? []) if (s.video) frames += this.spans.get(s.index)!.packets;
    return frames;
  }

  /** From the earliest timestamp of any stream to the latest end of any; null before any packet (or before the streams are known). */
  seconds(): number | null {
    let counted = 0;
    const timed: StreamSpans[] = [];
    for (const s of this.streams ?? []) {
      const span = this.spans.get(s.index)!;
      if (span.timed) timed.push(span);
      else if (span.packets && s.frameRate) counted = Math.max(counted, span.packets / s.frameRate);
    }
    const all = length(timed.map((s) => s.all));
    const shown = length(timed.map((s) => s.shown));
    const measured = Math.max(all - shown <= LENGTH_TOLERANCE_SECONDS ? shown : all, counted);
    return measured > 0 ? measured : null;
  }
}

export function packetArgs(inputArgs: string[], source: string): string[] {
  return ['-v', 'error', ...inputArgs, '-show_entries', 'packet=stream_index,pts_time,dts_time,duration_time,flags', '-of', 'compact=p=0', source];
}

/** Runs the packet scan under a time limit and an optional length bound; never rejects. */
export function measureLength(opts: MeasureOptions): Promise<Measurement> {
  return new Promise((resolve) => {
    if (opts.signal?.aborted) {
      resolve({ kind: 'aborted' });
      return;
    }
    const spans = new PacketSpans(Array.isArray(opts.streams) ? opts.streams : null);
    let streamsKnown: Promise<boolean> = Promise.resolve(true);
    if (!Array.isArray(opts.streams)) {
      streamsKnown = opts.streams.then(
        (streams) => {
          spans.setStreams(streams);
          return true;
        },
        () => false,
      );
    }
    const [cmd, args] = opts.command(packetArgs(opts.inputArgs, opts.source));
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'ignore'] });
    let outcome: Measurement | null = null;
    let partial = '';
    const stop = (why: Measurement) => {
      if (outcome) return;
      outcome = why;
      child.kill('SIGKILL');
    };
    const onAbort = () => stop({ kind: 'aborted' });
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    const timer = setTimeout(() => stop({ kind: 'timeout' }), opts.timeoutMs);
    let seen = 0;
    const take = (line: string) => {
      if (outcome || !line) return;
      spans.add(line);
      const bound = opts.stopAfterSeconds;
      // Checked every 256 packets (a few seconds of a typical file): the scan stops soon after the
      // bound, however long the file is.
      if (bound !== null && ++seen % 256 === 0) {
        const seconds = spans.seconds();
        if (seconds !== null && seconds > bound) stop({ kind: 'over', seconds });
      }
    };
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      const lines = (partial + chunk).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) take(line.trim());
    });
    let settled = false;
    const settle = (code: number | null, started: boolean) => {
      // A child that cannot be spawned emits 'error' and then 'close'.
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      opts.signal?.removeEventListener('abort', onAbort);
      if (outcome) {
        resolve(outcome);
        return;
      }
      take(partial.trim());
      if (outcome) {
        resolve(outcome);
        return;
      }
      void streamsKnown.then((known) => {
        if (!known) {
          resolve({ kind: 'failed' });
          return;
        }
        const seconds = spans.seconds();
        if (seconds !== null && opts.stopAfterSeconds !== null && seconds > opts.stopAfterSeconds) {
          resolve({ kind: 'over', seconds });
          return;
        }
        // A scan that failed part-way still proves the file is at least this long.
        resolve(started && (code === 0 || seconds !== null) ? { kind: 'measured', seconds, videoFrames: spans.videoFrames() } : { kind: 'failed' });
      });
    };
    child.once('error', () => settle(null, false));
    child.once('close', (code) => settle(code, true));
  });
}
