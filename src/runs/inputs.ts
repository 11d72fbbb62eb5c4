import type { Queryable } from '../db/pool.js';
import { getTeamFiles, type FileRow } from '../files/repository.js';
import type { FieldError } from '../core/errors.js';
import { atItem, count } from '../core/wording.js';
import { MEDIA_KINDS, type MediaInfo, type PricingInput, type ToolManifest, type ToolSlot } from '../tools/manifest.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * What the inputs are checked for. An estimate of a metered video tool may leave its video slots
 * out when the body gives duration_seconds: the "duration_seconds prices metered video
 * tools before a file is known; once a file is given its probed length wins". A start needs them.
 */
export type PriceMode = 'estimate' | 'start';

/** Inputs after validation: what the run stores, what pricing sees, and the files behind media slots. */
export interface ResolvedInputs {
  /** Slot values with defaults applied; media and element slots as lists of ids. */
  values: Record<string, unknown>;
  pricing: PricingInput;
  files: Record<string, FileRow[]>;
}

/** Where a slot's problem is: the slot itself, also for one item of a list (the message names the item). */
function loc(slot: string): (string | number)[] {
  return ['body', 'inputs', slot];
}

function itemError(slot: ToolSlot, index: number, message: string, code: string): FieldError {
  return { loc: loc(slot.name), message: atItem(index, message), code };
}

/** What pricing and a tool's runner know of a file: its row's probe results. */
export function infoOf(f: FileRow): MediaInfo {
  return {
    kind: f.media_kind ?? 'other',
    width: f.width,
    height: f.height,
    durationSeconds: f.duration_seconds,
    frameRate: f.frame_rate,
    frames: f.video_frames,
    channels: f.channels,
    bitsPerSample: f.bits_per_sample,
  };
}

/** Element ids named in element slots, for the consent check that answers before validation. */
export function elementIds(tool: ToolManifest, inputs: Record<string, unknown>): string[] {
  const ids: string[] = [];
  for (const slot of tool.inputs) {
    const v = inputs[slot.name];
    if (slot.kind === 'element' && Array.isArray(v)) ids.push(...v.filter((x): x is string => typeof x === 'string' && UUID.test(x)));
  }
  return ids;
}

function checkScalar(slot: ToolSlot, value: unknown): FieldError | null {
  const c = slot.constraints ?? {};
  switch (slot.kind) {
    case 'enum':
      if (typeof value !== 'string' || !(slot.choices ?? []).includes(value)) {
        return { loc: loc(slot.name), message: `must be one of ${(slot.choices ?? []).join(', ')}`, code: 'invalid_choice' };
      }
      return null;
    case 'number': {
      if (typeof value !== 'number' || !Number.isFinite(value)) return { loc: loc(slot.name), message: 'must be a number', code: 'wrong_type' };
      const min = typeof c.minimum === 'number' ? c.minimum : -Infinity;
      const max = typeof c.maximum === 'number' ? c.maximum : Infinity;
      if (value < min || value > max) {
        return { loc: loc(slot.name), message: `must be from ${min} to ${max}`, code: 'out_of_range' };
      }
      // A step counts from the minimum, as an HTML number field's does: minimum 2, step 2 takes 2, 4, 6 ...
      const step = typeof c.step === 'number' && c.step > 0 ? c.step : null;
      if (step !== null) {
        const base = Number.isFinite(min) ? min : 0;
        const k = (value - base) / step;
        if (Math.abs(k - Math.round(k)) > 1e-9) {
          const allowed = Number.isFinite(max) && (max - base) / step <= 10
            ? Array.from({ length: Math.floor((max - base) / step + 1e-9) + 1 }, (_, i) => base + i * step).join(', ')
            : `${base} plus a multiple of ${step}`;
          return { loc: loc(slot.name), message: `must be one of ${allowed}`, code: 'invalid_choice' };
        }
      }
      return null;
    }
    case 'bool':
      return typeof value === 'boolean' ? null : { loc: loc(slot.name), message: 'must be true or false', code: 'wrong_type' };
    case 'text': {
      if (typeof value !== 'string') return { loc: loc(slot.name), message: 'must be a string', code: 'wrong_type' };
      // The run stores its inputs as jsonb, which cannot hold U+0000.
      if (value.includes('\u0000')) return { loc: loc(slot.name), message: 'must not contain the NUL character', code: 'invalid_character' };
      const maxLength = typeof c.max_length === 'number' ? c.max_length : 10_000;
      if (value.length < 1 || value.length > maxLength) {
        const range = maxLength === 1 ? count(1, 'character') : `1 to ${count(maxLength, 'character')}`;
        return { loc: loc(slot.name), message: `must be ${range}`, code: value.length ? 'too_long' : 'too_short' };
      }
      if (Array.isArray(c.schemes)) {
        let scheme = '';
        try {
          scheme = new URL(value).protocol.replace(/:$/, '');
        } catch {
          return { loc: loc(slot.name), message: 'must be an absolute URL', code: 'invalid_url' };
        }
        if (!c.schemes.includes(scheme)) {
          return { loc: loc(slot.name), message: `must use ${c.schemes.join(' or ')}`, code: 'invalid_url' };
        }
      }
      return null;
    }
    default:
      return null;
  }
}

/** How many values a list slot takes: "2 values", "at most 10 values", "2 to 10 values". */
function takes(slot: ToolSlot): string {
  if (slot.min === slot.max) return count(slot.max, 'value');
  if (slot.min === 0) return `at most ${count(slot.max, 'value')}`;
  return `${slot.min} to ${count(slot.max, 'value')}`;
}

function idList(slot: ToolSlot, value: unknown): { ids: string[] } | { error: FieldError } {
  if (!Array.isArray(value)) {
    return { error: { loc: loc(slot.name), message: `must be a list of ${slot.kind === 'element' ? 'element' : 'file'} ids`, code: 'wrong_type' } };
  }
  if (value.length < slot.min || value.length > slot.max) {
    return {
      error: {
        loc: loc(slot.name),
        message: `takes ${takes(slot)}, got ${value.length}`,
        code: value.length < slot.min ? 'too_few' : 'too_many',
      },
    };
  }
  const seen = new Set<string>();
  for (let i = 0; i < value.length; i++) {
    const id = value[i];
    if (typeof id !== 'string' || !UUID.test(id)) return { error: itemError(slot, i, 'must be an id (a UUID)', 'invalid_id') };
    if (seen.has(id.toLowerCase())) return { error: itemError(slot, i, 'is listed twice', 'duplicate') };
    seen.add(id.toLowerCase());
  }
  return { ids: value.map((id: string) => id.toLowerCase()) };
}

function checkFile(slot: ToolSlot, f: FileRow | undefined, index: number): FieldError | null {
  if (!f || f.status === 'expired') {
    return itemError(slot, index, 'no such file in this team (unknown, of another team, or expired)', 'workspace_asset_not_found');
  }
  if (f.status !== 'ready') {
    const why = f.status === 'uploading' ? 'the upload is not complete' : `the file was rejected: ${f.problem ?? 'it is not a decodable image, video or audio file'}`;
    return itemError(slot, index, why, 'file_not_ready');
  }
  if (f.media_kind !== slot.kind) {
    return itemError(slot, index, `is ${f.media_kind === 'image' ? 'an' : 'a'} ${f.media_kind} file; this slot takes ${slot.kind}`, 'wrong_media_kind');
  }
  return null;
}

/**
 * Checks inputs against the tool's slots (one error per bad slot) and resolves media slots to
 * this team's files. Element ids are checked to exist in the team.
 */
export async function resolveInputs(
  db: Queryable,
  tool: ToolManifest,
  teamId: string,
  inputs: Record<string, unknown>,
  durationHint: number | null,
  opts: { mode: PriceMode } = { mode: 'start' },
): Promise<{ resolved: ResolvedInputs; errors: FieldError[] }> {
  const errors: FieldError[] = [];
  const values: Record<string, unknown> = {};
  const idSlots: { slot: ToolSlot; ids: string[] }[] = [];
  const known = new Set(tool.inputs.map((s) => s.name));
  for (const name of Object.keys(inputs)) {
    if (!known.has(name)) errors.push({ loc: loc(name), message: `is not an input of ${tool.id}`, code: 'unknown_slot' });
  }
  for (const slot of tool.inputs) {
    const present = Object.prototype.hasOwnProperty.call(inputs, slot.name) && inputs[slot.name] !== null;
    if (!present) {
      const pricedByHint = opts.mode === 'estimate' && durationHint !== null && slot.kind === 'video';
      if (slot.required && !pricedByHint) errors.push({ loc: loc(slot.name), message: 'is required', code: 'missing' });
      else if (slot.default !== undefined) values[slot.name] = slot.default;
      continue;
    }
    const value = inputs[slot.name];
    if (MEDIA_KINDS.includes(slot.kind) || slot.kind === 'element') {
      const r = idList(slot, value);
      if ('error' in r) errors.push(r.error);
      else {
        values[slot.name] = r.ids;
        idSlots.push({ slot, ids: r.ids });
      }
      continue;
    }
    const err = checkScalar(slot, value);
    if (err) errors.push(err);
    else values[slot.name] = value;
  }

  const files: Record<string, FileRow[]> = {};
  const media: Record<string, MediaInfo[]> = {};
  const fileIds = idSlots.filter((s) => s.slot.kind !== 'element').flatMap((s) => s.ids);
  const elementIdsWanted = idSlots.filter((s) => s.slot.kind === 'element').flatMap((s) => s.ids);
  const rows = fileIds.length ? await getTeamFiles(db, teamId, fileIds) : [];
  const byId = new Map(rows.map((r) => [r.id, r]));
  const elements = new Set<string>();
  if (elementIdsWanted.length) {
    const { rows: found } = await db.query<{ id: string }>(
      'SELECT id FROM elements WHERE team_id = $1::uuid AND id = ANY ($2::uuid[])',
      [teamId, elementIdsWanted],
    );
    for (const r of found) elements.add(r.id);
  }
  for (const { slot, ids } of idSlots) {
    if (slot.kind === 'element') {
      const bad = ids.findIndex((id) => !elements.has(id));
      if (bad >= 0) errors.push(itemError(slot, bad, 'no such element in this team', 'workspace_asset_not_found'));
      continue;
    }
    let slotError: FieldError | null = null;
    ids.forEach((id, i) => {
      slotError ??= checkFile(slot, byId.get(id), i);
    });
    if (slotError) {
      errors.push(slotError);
      continue;
    }
    files[slot.name] = ids.map((id) => byId.get(id)).filter((f): f is FileRow => f !== undefined);
    media[slot.name] = files[slot.name]!.map(infoOf);
  }
  const pricing: PricingInput = { values, media, durationHint };
  if (errors.length === 0 && tool.validate) errors.push(...tool.validate(pricing));
  return { resolved: { values, pricing, files }, errors };
}
