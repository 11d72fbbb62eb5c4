import { isGrey, parseHex, toLab } from './colors.js';
import type { NamePick } from './name.js';
import { brandable, type ColorTally } from './palette.js';

/**
 * The kit says how sure it is where a user needs to know (issue 35): a warning when the name or
 * the primary colour rests on weak evidence: one signal only, or signals that disagree (a rival
 * with at least RIVAL of the winner's weight). The warning names the signals on each side.
 */

const RIVAL = 0.6;
/** Colours closer than this (CIE76) are shades of one colour: they do not disagree. */
const SAME_COLOR = 12;

const list = (items: string[]) => (items.length <= 1 ? (items[0] ?? '') : `${items.slice(0, -1).join(', ')} and ${items.at(-1)}`);

export function nameWarning(pick: NamePick | null): string | null {
  if (!pick) return null;
  if (pick.rival && pick.rival.share >= RIVAL) {
    return `the name "${pick.name}" is uncertain (from ${list(pick.sources)}): "${pick.rival.name}" has nearly as much support (from ${list(pick.rival.sources)})`;
  }
  if (pick.sources.length === 1) return `the name "${pick.name}" rests on one signal (${pick.sources[0]})`;
  return null;
}

function distance(a: string, b: string): number {
  const x = parseHex(a);
  const y = parseHex(b);
  if (!x || !y) return Infinity;
  const p = toLab(x);
  const q = toLab(y);
  return Math.hypot(p.l - q.l, p.a - q.a, p.b - q.b);
}

/** What hinted a colour, strongest first, as words ("the buttons on the page"). */
const saidBy = (from: Map<string, number>) => [...from.entries()].sort((a, b) => b[1] - a[1]).map(([label]) => label);

export function primaryWarning(tally: ColorTally, primary: string | null): string | null {
  if (!primary) return null;
  const evidence = tally.evidence('primary').filter((e) => brandable(e.hex));
  const own = evidence.find((e) => e.hex === primary);
  if (!own) return `the primary colour ${primary} rests on weak evidence (no signal marks it as primary: it is the most used hue)`;
  // A grey does not dispute a hue: greys give way to hues by rule (see palette.ts).
  const rival = evidence.find((e) => e.hex !== primary && e.strength >= RIVAL * own.strength && distance(e.hex, primary) >= SAME_COLOR && (isGrey(primary) || !isGrey(e.hex)));
  if (rival) {
    return `the primary colour ${primary} is uncertain (from ${list(saidBy(own.from))}): ${rival.hex} has nearly as much support (from ${list(saidBy(rival.from))})`;
  }
  const signals = saidBy(own.from);
  if (signals.length === 1) return `the primary colour ${primary} rests on one signal (${signals[0]})`;
  return null;
}
