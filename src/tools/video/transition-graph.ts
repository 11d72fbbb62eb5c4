import type { VideoFacts } from '../../media/ffmpeg.js';
import { ToolError } from '../manifest.js';

export type TransitionStyle = 'fade' | 'dissolve' | 'wipe_left' | 'wipe_right';

export interface TransitionPlan {
  /** The -filter_complex graph; its outputs are [vout] and [aout]. */
  graph: string;
  width: number;
  height: number;
  /** Output frame rate as "num/den" (the first clip's). */
  rate: string;
  /** Frames of output video and its length in seconds. */
  frames: number;
  seconds: number;
  /** Frames each transition lasts. */
  transitionFrames: number;
}

const SAMPLE_RATE = 48_000;
/** The largest output frame (the first clip's size): 4096x2304, DCI 4K with room for 16:9. */
const MAX_PIXELS = 4096 * 2304;

function num(x: number): string {
  return x.toFixed(6).replace(/\.?0+$/, '');
}

/** Seconds for messages: at most two decimals. */
export function shortSeconds(x: number): string {
  return String(Math.round(x * 100) / 100);
}

function even(x: number): number {
  return Math.max(2, x - (x % 2));
}

/**
 * The filter graph joining clips with transitions, built only from filters ffmpeg 4.1 already has
 * (no xfade): scale, pad, fps, format, trim, split, setpts, settb, concat, fade, overlay, color,
 * aresample, aformat, apad, atrim, anullsrc, acrossfade.
 *
 * Every clip is normalised to the first clip's size (scaled with its aspect kept, then padded
 * with black), frame rate and yuv420p, and cut to an exact frame count. Transitions are chained:
 * the result so far is split into its body and its last d seconds (tail), the next clip into its
 * first d seconds (head) and the rest; tail and head are combined, and body + transition + rest
 * are concatenated. Chaining makes a clip shorter than two transitions still well defined.
 * Frame k of a d-frame transition is taken at progress p = (k + 0.5) / d, so the transition is
 * symmetric and a one-frame transition is a half mix:
 *  - dissolve: a linear crossfade, the head's alpha ramps from 0 to 1 (fade alpha=1) over the tail;
 *  - fade: through black, the tail's first half fades out to black, the head's second half fades
 *    in from black (the tail's second half and the head's first half are not shown);
 *  - wipe_left: the next clip is uncovered from the right, the edge moving to the left (as
 *    xfade's wipeleft); wipe_right: from the left, the edge moving right. The edge is at
 *    x = W * (1 - p) (wipe_left) or W * p (wipe_right): the part of one picture on its side of the
 *    edge is cut out with pad + crop and overlaid in place on the other.
 * Audio: each clip's audio (or silence from anullsrc when it has none) is resampled to 48 kHz
 * stereo and cut or padded to its video's length; the clips are chained with acrossfade over the
 * same number of samples as the video transition, so picture and sound stay in step.
 */
export function planTransition(clips: VideoFacts[], style: TransitionStyle, durationSeconds: number): TransitionPlan {
  const first = clips[0];
  if (!first || clips.length < 2) throw new ToolError('At least two clips are needed.');
  const { num: fn, den: fd } = first.fps;
  const fps = fn / fd;
  const tb = `${fd}/${fn}`;
  const spf = fd / fn;
  const W = even(first.width);
  const H = even(first.height);
  if (W * H > MAX_PIXELS) throw new ToolError(`Clip 1 is ${first.width}x${first.height}; the output may be at most 4096x2304 (about 9.4 MP).`);
  const dF = Math.max(1, Math.round(durationSeconds * fps));
  const frames = clips.map((c) => Math.max(1, Math.round(c.durationSeconds * fps)));
  clips.forEach((c, i) => {
    if (!(durationSeconds < c.durationSeconds) || dF >= frames[i]!) {
      throw new ToolError(
        `The transition (${shortSeconds(durationSeconds)} s) must be shorter than every clip; clip ${i + 1} is ${shortSeconds(c.durationSeconds)} s long.`,
      );
    }
  });
  const samplesPerFrame = SAMPLE_RATE * spf;
  const dS = Math.round(dF * samplesPerFrame);
  const parts: string[] = [];
  const cfr = `settb=${tb},setpts=N`;
  // Half a frame later, in microseconds, so a fade evaluates at the middle of each frame's span.
  const midFrame = `settb=AVTB,setpts=(N+0.5)*${num(spf)}/TB`;

  clips.forEach((c, i) => {
    parts.push(
      `[${i}:v:0]setpts=PTS-STARTPTS,scale=${W}:${H}:force_original_aspect_ratio=decrease,setsar=1,` +
        `pad=${W}:${H}:(ow-iw)/2:(oh-ih)/2:color=black,fps=${fn}/${fd},format=yuv420p,trim=end_frame=${frames[i]},${cfr}[v${i}]`,
    );
    const samples = Math.round(frames[i]! * samplesPerFrame);
    const audio = c.hasAudio
      ? `[${i}:a:0]asetpts=PTS-STARTPTS,aresample=${SAMPLE_RATE},aformat=sample_fmts=fltp:sample_rates=${SAMPLE_RATE}:channel_layouts=stereo,apad=whole_len=${samples},`
      : `anullsrc=r=${SAMPLE_RATE}:cl=stereo,aformat=sample_fmts=fltp:sample_rates=${SAMPLE_RATE}:channel_layouts=stereo,`;
    parts.push(`${audio}atrim=end_sample=${samples},asetpts=N/SR/TB[a${i}]`);
  });

  let acc = 'v0';
  let length = frames[0]!;
  for (let i = 1; i < clips.length; i++) {
    const t = `t${i}`;
    parts.push(`[${acc}]split[${t}body][${t}tail0]`);
    parts.push(`[${t}body]trim=end_frame=${length - dF},${cfr}[${t}b]`);
    parts.push(`[${t}tail0]trim=start_frame=${length - dF},${cfr}[${t}tail]`);
    parts.push(`[v${i}]split[${t}head0][${t}rest0]`);
    parts.push(`[${t}head0]trim=end_frame=${dF},${cfr}[${t}head]`);
    parts.push(`[${t}rest0]trim=start_frame=${dF},${cfr}[${t}r]`);
    parts.push(...transition(style, t, { W, H, dF, fn, fd, tb, spf, midFrame, cfr }));
    parts.push(`[${t}b][${t}x][${t}r]concat=n=3:v=1:a=0,${cfr}[${i === clips.length - 1 ? 'vjoined' : `v${i}j`}]`);
    acc = `v${i}j`;
    length += frames[i]! - dF;
  }
  parts.push(`[vjoined]format=yuv420p[vout]`);

  let audio = 'a0';
  for (let i = 1; i < clips.length; i++) {
    const out = i === clips.length - 1 ? 'aout' : `a${i}x`;
    parts.push(`[${audio}][a${i}]acrossfade=ns=${dS}:c1=tri:c2=tri[${out}]`);
    audio = out;
  }
  return { graph: parts.join(';'), width: W, height: H, rate: `${fn}/${fd}`, frames: length, seconds: length * spf, transitionFrames: dF };
}

interface Geometry {
  W: number;
  H: number;
  dF: number;
  fn: number;
  fd: number;
  tb: string;
  spf: number;
  midFrame: string;
  cfr: string;
}

/** The filters turning [t tail] and [t head] (dF frames each) into [t x]. */
function transition(style: TransitionStyle, t: string, g: Geometry): string[] {
  const { W, H, dF, midFrame, cfr } = g;
  if (style === 'dissolve') {
    return [
      `[${t}head]format=yuva420p,${midFrame},fade=t=in:st=0:d=${num(dF * g.spf)}:alpha=1,${cfr}[${t}h]`,
      `[${t}tail][${t}h]overlay=0:0:format=yuv420,${cfr}[${t}x]`,
    ];
  }
  if (style === 'fade') {
    const out = Math.floor(dF / 2);
    const inFrames = dF - out;
    const fadeIn = `[${t}head]trim=start_frame=${out},${midFrame},fade=t=in:st=0:d=${num(inFrames * g.spf)},${cfr}`;
    if (out === 0) return [`[${t}tail]nullsink`, `${fadeIn}[${t}x]`];
    return [
      `[${t}tail]trim=end_frame=${out},${midFrame},fade=t=out:st=0:d=${num(out * g.spf)},${cfr}[${t}o]`,
      `${fadeIn}[${t}i]`,
      `[${t}o][${t}i]concat=n=2:v=1:a=0,${cfr}[${t}x]`,
    ];
  }
  // Wipes, without masks: the side being uncovered is the incoming clip's region [z, W) (wipe_left,
  // head over tail) or the outgoing clip's region [z, W) (wipe_right, tail over head). Padding the
  // picture to 2W on the right and cropping W columns from x = z gives a picture whose column k is
  // column z + k of the original; overlaid at x = z it lands exactly where it was, and the part
  // past the frame's edge is clipped. z moves every frame (crop and overlay evaluate x per frame; overlay's n runs one ahead of
  // crop's, so the frame's time is used).
  const left = style === 'wipe_left';
  // Both filters see the same frame time t (frame k is at k/F), so both compute the same z.
  const k = `(t*${g.fn}/${g.fd}+0.5)`;
  const z = left ? `${W}-${W}*${k}/${dF}` : `${W}*${k}/${dF}`;
  const [over, under] = left ? [`${t}head`, `${t}tail`] : [`${t}tail`, `${t}head`];
  return [
    `[${over}]pad=${2 * W}:${H}:0:0:color=black,crop=w=${W}:h=${H}:x=${z}:y=0,${cfr}[${t}c]`,
    `[${under}][${t}c]overlay=x=${z}:y=0:format=yuv420,${cfr}[${t}x]`,
  ];
}
