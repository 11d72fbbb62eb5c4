// --input k=v and --file slot=path, turned into a run body's `inputs`.
import fs from 'node:fs';

/** A mistake in how the command was called: exit code 64. `problems` are shown one a line under the message. */
export class UsageError extends Error {
  override name = 'UsageError';
  constructor(
    message: string,
    readonly problems: string[] = [],
  ) {
    super(message);
  }
}

/**
 * A value given on the command line: JSON when it parses (numbers, true/false, null, arrays,
 * objects, "quoted strings"), else the text as it is. So `copies=2` is a number, `save=true` a
 * boolean, `preset=warm_film` a string, and `name="42"` the string 42.
 */
export function parseValue(raw: string): unknown {
  try {
    return JSON.parse(raw);
  } catch {
    return raw;
  }
}

function splitPair(flag: string, pair: string): [string, string] {
  const eq = pair.indexOf('=');
  if (eq <= 0) throw new UsageError(`${flag} takes NAME=VALUE, got "${pair}"`);
  return [pair.slice(0, eq).trim(), pair.slice(eq + 1)];
}

export interface FileArg {
  slot: string;
  path: string;
}

/** --file slot=path entries, each path checked to be a readable, non-empty file. */
export function parseFiles(pairs: string[]): FileArg[] {
  return pairs.map((pair) => {
    const [slot, file] = splitPair('--file', pair);
    if (!file) throw new UsageError(`--file ${slot}= needs a path`);
    let stat: fs.Stats;
    try {
      stat = fs.statSync(file);
    } catch {
      throw new UsageError(`--file ${slot}=${file}: no such file`);
    }
    if (!stat.isFile()) throw new UsageError(`--file ${slot}=${file}: not a regular file`);
    if (stat.size === 0) throw new UsageError(`--file ${slot}=${file}: the file is empty`);
    return { slot, path: file };
  });
}

/** --input pairs grouped by name, in the order given, the values as typed. */
export function inputTexts(inputPairs: string[]): Map<string, string[]> {
  const texts = new Map<string, string[]>();
  for (const pair of inputPairs) {
    const [name, raw] = splitPair('--input', pair);
    texts.set(name, [...(texts.get(name) ?? []), raw]);
  }
  return texts;
}

/**
 * One --input value for a slot of this kind. Text and enum slots take the text as typed (JSON
 * only when it is a "quoted string"), so `name=42` is the text 42 there; media and element slots
 * take ids, one or a JSON list of them; anything else is parseValue's.
 */
export function valueFor(kind: string | undefined, raw: string): unknown {
  const parsed = parseValue(raw);
  if (kind === 'text' || kind === 'enum') return typeof parsed === 'string' ? parsed : raw;
  return parsed;
}

export const ID_KINDS = ['image', 'video', 'audio', 'element'];

/**
 * The `inputs` object: every --input value by name (a name given more than once becomes a list)
 * and, per media slot, the list of uploaded file ids in the order the --file flags came. With the
 * tool's slots (`kinds`, by name), each value is read as its slot takes it (valueFor), and ids
 * given for a media or element slot always make a list.
 */
export function buildInputs(inputPairs: string[], uploaded: { slot: string; fileId: string }[], kinds: Map<string, string> = new Map()): Record<string, unknown> {
  const inputs: Record<string, unknown> = {};
  for (const [name, texts] of inputTexts(inputPairs)) {
    const kind = kinds.get(name);
    const list = texts.map((raw) => valueFor(kind, raw));
    if (kind !== undefined && ID_KINDS.includes(kind)) inputs[name] = list.flat();
    else inputs[name] = list.length === 1 ? list[0] : list;
  }
  const values = new Set(Object.keys(inputs));
  const files = new Map<string, string[]>();
  for (const { slot, fileId } of uploaded) {
    if (values.has(slot)) throw new UsageError(`"${slot}" is given both with --input and with --file`);
    files.set(slot, [...(files.get(slot) ?? []), fileId]);
  }
  for (const [slot, ids] of files) inputs[slot] = ids;
  return inputs;
}

export function parseDuration(raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0) throw new UsageError(`--duration takes a number of seconds above 0, got "${raw}"`);
  return n;
}
