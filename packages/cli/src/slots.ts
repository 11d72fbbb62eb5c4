// A tool's input slots as GET /v1/tools describes them: how `toolrun-cli tools` words them, and
// the checks run and estimate make before anything is uploaded, so that a misspelt tool or slot,
// a choice the slot does not offer or a number out of its range costs no upload (exit 64).
// The service checks everything again; these are the checks its answer would repeat after the
// upload. Number ranges are `constraints.minimum`/`maximum` and text lengths
// `constraints.max_length`, as the service reads them (src/runs/inputs.ts).
import fs from 'node:fs';
import path from 'node:path';
import { guessMimeType, type Tool, type ToolInput } from '@toolrun/sdk';
import { ID_KINDS, inputTexts, UsageError, valueFor, type FileArg } from './inputs.ts';

const MEDIA_KINDS = ['image', 'video', 'audio'];
const SCALAR_KINDS = ['text', 'enum', 'number', 'bool'];

const numberIn = (c: ToolInput['constraints'], key: string): number | undefined => {
  const v = c?.[key];
  return typeof v === 'number' ? v : undefined;
};

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

/** "a number from 1 to 3", "a number, at least 0", "a number". */
function numberRange(slot: ToolInput): string {
  const min = numberIn(slot.constraints, 'minimum');
  const max = numberIn(slot.constraints, 'maximum');
  if (min !== undefined && max !== undefined) return `a number from ${min} to ${max}`;
  if (min !== undefined) return `a number, at least ${min}`;
  if (max !== undefined) return `a number, at most ${max}`;
  return 'a number';
}

/** How many items a media or element slot takes: "an image file", "2 to 10 video files". */
function idCount(slot: ToolInput): string {
  const noun = slot.kind === 'element' ? 'element id' : `${slot.kind} file`;
  if (slot.max === 1) return `${slot.kind === 'image' || slot.kind === 'audio' || slot.kind === 'element' ? 'an' : 'a'} ${noun}`;
  if (slot.min === slot.max) return plural(slot.max, noun);
  if (slot.min === 0) return `up to ${plural(slot.max, noun)}`;
  return `${slot.min} to ${plural(slot.max, noun)}`;
}

/** What the slot takes, in words: "one of ok, fail", "a number from 1 to 3", "text, at most 2048 characters". */
export function slotTakes(slot: ToolInput): string {
  if (MEDIA_KINDS.includes(slot.kind) || slot.kind === 'element') return idCount(slot);
  switch (slot.kind) {
    case 'enum':
      return `one of ${(slot.choices ?? []).join(', ')}`;
    case 'number':
      return numberRange(slot);
    case 'bool':
      return 'true or false';
    case 'text': {
      const max = numberIn(slot.constraints, 'max_length');
      return max !== undefined ? `text, at most ${plural(max, 'character')}` : 'text';
    }
    default:
      return slot.kind;
  }
}

const shown = (v: unknown) => (typeof v === 'string' ? v : JSON.stringify(v));

/** One line of `toolrun-cli tools` for a slot: what it takes, and whether it is required or its default. */
export function describeSlot(slot: ToolInput): string {
  const extra = slot.required ? 'required' : slot.default !== undefined ? `default ${shown(slot.default)}` : 'optional';
  return `${slotTakes(slot)} (${extra})`;
}

function distance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) row[j] = Math.min((prev[j] ?? 0) + 1, (row[j - 1] ?? 0) + 1, (prev[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1));
    prev = row;
  }
  return prev[b.length] ?? 0;
}

/** The candidate a typo most likely meant: a few edits away, or one containing what was typed. */
export function nearest(typed: string, candidates: string[]): string | undefined {
  const t = typed.toLowerCase();
  let best: { name: string; d: number } | undefined;
  for (const name of candidates) {
    const d = distance(t, name.toLowerCase());
    if (!best || d < best.d) best = { name, d };
  }
  if (best && best.d <= Math.max(2, Math.floor(typed.length / 3))) return best.name;
  return t.length >= 3 ? candidates.find((c) => c.toLowerCase().includes(t)) : undefined;
}

const didYouMean = (typed: string, candidates: string[]) => {
  const n = nearest(typed, candidates);
  return n ? ` Did you mean ${n}?` : '';
};

/** The tool by id from GET /v1/tools, or a usage error naming the nearest one. */
export function findTool(tools: Tool[], id: string): Tool {
  const tool = tools.find((t) => t.id === id);
  if (tool) return tool;
  throw new UsageError(`Unknown tool "${id}".${didYouMean(id, tools.map((t) => t.id))} \`toolrun-cli tools\` lists the tools and their inputs.`);
}

/** The problem with one --input value for a scalar slot, or null. */
function valueProblem(slot: ToolInput, raw: string): string | null {
  const value = valueFor(slot.kind, raw);
  const takes = `${slot.name} takes ${slotTakes(slot)}`;
  switch (slot.kind) {
    case 'enum': {
      const choices = slot.choices ?? [];
      if (typeof value === 'string' && choices.includes(value)) return null;
      return `${takes}.${didYouMean(String(value), choices)}`;
    }
    case 'number': {
      if (typeof value !== 'number' || !Number.isFinite(value)) return `${takes}; "${raw}" is not a number.`;
      const min = numberIn(slot.constraints, 'minimum') ?? -Infinity;
      const max = numberIn(slot.constraints, 'maximum') ?? Infinity;
      return value < min || value > max ? `${takes}; ${value} is out of range.` : null;
    }
    case 'bool':
      return typeof value === 'boolean' ? null : `${takes}.`;
    case 'text': {
      const max = numberIn(slot.constraints, 'max_length') ?? Infinity;
      const text = String(value);
      if (!text.length) return `${takes}, not empty.`;
      return text.length > max ? `${takes}; this is ${plural(text.length, 'character')}.` : null;
    }
    default:
      return null;
  }
}

/**
 * The media kind a file's first bytes announce (image, video, audio, or the type itself for
 * another kind such as application/pdf), or null when the bytes say nothing known: then only the
 * service can tell. The name's extension alone is not trusted to refuse a file.
 */
function announcedKind(file: string): string | null {
  const head = Buffer.alloc(64);
  let n = 0;
  const fd = fs.openSync(file, 'r');
  try {
    n = fs.readSync(fd, head, 0, head.length, 0);
  } finally {
    fs.closeSync(fd);
  }
  const mime = guessMimeType(undefined, head.subarray(0, n));
  if (mime === 'application/octet-stream') return null;
  const major = mime.split('/')[0] ?? '';
  return MEDIA_KINDS.includes(major) ? major : mime;
}

const article = (kind: string) => (/^[aeiou]/.test(kind) ? `an ${kind}` : `a ${kind}`);

export interface CheckOptions {
  /** --duration was given to an estimate: the service prices video slots left out from it. */
  durationPricesVideo: boolean;
}

/**
 * Checks the --input and --file arguments against the tool's slots, before any upload: every
 * problem found, each with what to do, in one usage error. Returns the slots' kinds by name,
 * for buildInputs.
 */
export function checkInputs(tool: Tool, inputPairs: string[], files: FileArg[], opts: CheckOptions): Map<string, string> {
  const slots = new Map(tool.inputs.map((s) => [s.name, s]));
  const names = tool.inputs.map((s) => s.name);
  const problems: string[] = [];
  const unknown = (flag: string, name: string) =>
    problems.push(`${flag} ${name}: ${tool.id} has no input "${name}".${didYouMean(name, names)} Its inputs: ${names.join(', ') || 'none'}.`);

  const texts = inputTexts(inputPairs);
  for (const [name, raws] of texts) {
    const slot = slots.get(name);
    if (!slot) {
      unknown('--input', name);
      continue;
    }
    if (SCALAR_KINDS.includes(slot.kind)) {
      if (raws.length > 1) problems.push(`--input ${name}: ${name} takes one value, given ${raws.length} times.`);
      else {
        const problem = valueProblem(slot, raws[0] ?? '');
        if (problem) problems.push(`--input ${name}=${raws[0] ?? ''}: ${problem}`);
      }
    }
  }

  const fileCounts = new Map<string, number>();
  for (const f of files) fileCounts.set(f.slot, (fileCounts.get(f.slot) ?? 0) + 1);
  for (const [name, n] of fileCounts) {
    const slot = slots.get(name);
    if (!slot) unknown('--file', name);
    else if (!MEDIA_KINDS.includes(slot.kind)) {
      problems.push(`--file ${name}: ${name} is not a file input (it takes ${slotTakes(slot)}); give it with --input ${name}=VALUE.`);
    } else if (texts.has(name)) {
      problems.push(`${name} is given both with --input and with --file; use one.`);
    } else if (n < slot.min || n > slot.max) {
      problems.push(`--file ${name}: ${name} takes ${idCount(slot)}, given ${n}.`);
    }
  }
  for (const f of files) {
    const slot = slots.get(f.slot);
    if (!slot || !MEDIA_KINDS.includes(slot.kind)) continue;
    const kind = announcedKind(f.path);
    if (kind !== null && kind !== slot.kind) {
      const is = MEDIA_KINDS.includes(kind) ? `${article(kind)} file` : `not a media file (${kind})`;
      problems.push(`--file ${f.slot}=${f.path}: ${path.basename(f.path)} is ${is}; ${f.slot} takes ${article(slot.kind)} file.`);
    }
  }

  for (const slot of tool.inputs) {
    if (!slot.required || texts.has(slot.name) || fileCounts.has(slot.name)) continue;
    if (opts.durationPricesVideo && slot.kind === 'video') continue;
    const how = MEDIA_KINDS.includes(slot.kind) ? `--file ${slot.name}=PATH` : ID_KINDS.includes(slot.kind) ? `--input ${slot.name}=ID` : `--input ${slot.name}=VALUE`;
    problems.push(`${slot.name} is required (${slotTakes(slot)}): add ${how}.`);
  }

  if (problems.length) {
    throw new UsageError(`${tool.id} cannot take these inputs; nothing was uploaded. \`toolrun-cli tools\` shows every tool's inputs.`, problems);
  }
  return new Map(tool.inputs.map((s) => [s.name, s.kind]));
}
