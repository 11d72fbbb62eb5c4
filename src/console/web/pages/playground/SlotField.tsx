// One control per tool slot, from the slot's kind: a file picker for media (each file with its
// upload progress), a select for an enum, a number input with the slot's range and default, a
// checkbox for a bool, a text input for text (and for element ids). Each is labelled by the slot's
// name made readable, with its error next to it (aria-invalid, aria-describedby).
import { useId } from 'preact/hooks';
import { MEDIA_KINDS, type ToolSlot } from '../../api-runs.ts';
import { fieldMessage } from '../../components/field.tsx';
import { readable } from '../../components/format.ts';

export interface MediaItem {
  key: number;
  name: string;
  /** 0..1 of the bytes sent. */
  progress: number;
  fileId: string | null;
  error: string | null;
}

export type SlotValue = string | number | boolean | '';

interface SlotFieldProps {
  slot: ToolSlot;
  value: SlotValue | undefined;
  media: MediaItem[];
  error: string | undefined;
  onValue: (v: SlotValue) => void;
  onFiles: (files: File[]) => void;
}

function num(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}

const ACCEPT: Record<string, string> = { image: 'image/*', video: 'video/*', audio: 'audio/*' };

/** What the slot takes, in a few words under its label. */
function hintFor(slot: ToolSlot): string {
  const c = slot.constraints ?? {};
  const parts: string[] = [slot.required ? 'Required' : 'Optional'];
  if (MEDIA_KINDS.includes(slot.kind)) parts.push(slot.max > 1 ? `up to ${slot.max} ${slot.kind} files` : `one ${slot.kind} file`);
  if (slot.kind === 'number' && num(c.minimum) !== undefined && num(c.maximum) !== undefined) parts.push(`from ${String(c.minimum)} to ${String(c.maximum)}`);
  if (slot.kind === 'number' && num(c.step) !== undefined) parts.push(`in steps of ${String(c.step)}`);
  if (slot.kind === 'element') parts.push('element ids, separated by commas');
  if (slot.kind === 'text' && num(c.max_length) !== undefined) parts.push(`at most ${String(c.max_length)} characters`);
  return parts.join('; ') + '.';
}

function Uploads(p: { items: MediaItem[] }) {
  if (p.items.length === 0) return null;
  return (
    <ul class="uploads">
      {p.items.map((m) => {
        const percent = Math.round(m.progress * 100);
        const state = m.error ? m.error : m.fileId ? 'Uploaded' : `Uploading, ${percent}%`;
        return (
          <li key={m.key}>
            <span class="mono">{m.name}</span>
            <progress max={1} value={m.progress} aria-label={`Upload of ${m.name}`} aria-valuetext={`${percent}%`} />
            <span class={m.error ? 'error-text' : 'hint-inline'} role="status">
              {state}
            </span>
          </li>
        );
      })}
    </ul>
  );
}

export function SlotField(p: SlotFieldProps) {
  const { slot } = p;
  const id = useId();
  const label = readable(slot.name);
  const errorId = `${id}-error`;
  const hintId = `${id}-hint`;
  const aria = {
    'aria-invalid': p.error ? ('true' as const) : undefined,
    'aria-describedby': p.error ? `${errorId} ${hintId}` : hintId,
  };
  const c = slot.constraints ?? {};
  let control;
  if (MEDIA_KINDS.includes(slot.kind)) {
    control = (
      <input
        id={id}
        type="file"
        accept={ACCEPT[slot.kind]}
        multiple={slot.max > 1}
        {...aria}
        onChange={(e) => {
          const files = [...(e.currentTarget.files ?? [])];
          if (files.length) p.onFiles(files);
        }}
      />
    );
  } else if (slot.kind === 'enum') {
    const choices = slot.choices ?? [];
    control = (
      <select id={id} value={String(p.value ?? '')} {...aria} onChange={(e) => p.onValue(e.currentTarget.value)}>
        {slot.required && p.value !== '' ? null : <option value="">Not set</option>}
        {choices.map((choice) => (
          <option key={choice} value={choice}>
            {readable(choice)}
          </option>
        ))}
      </select>
    );
  } else if (slot.kind === 'number') {
    control = (
      <input
        id={id}
        type="number"
        min={num(c.minimum)}
        max={num(c.maximum)}
        step={num(c.step) ?? 'any'}
        value={p.value === undefined ? '' : String(p.value)}
        {...aria}
        onInput={(e) => {
          const raw = e.currentTarget.value;
          p.onValue(raw === '' ? '' : Number(raw));
        }}
      />
    );
  } else if (slot.kind === 'bool') {
    return (
      <div class="field">
        <label class="check" for={id}>
          <input id={id} type="checkbox" checked={p.value === true} {...aria} onChange={(e) => p.onValue(e.currentTarget.checked)} />
          <span>{label}</span>
        </label>
        <p class="hint" id={hintId}>
          {hintFor(slot)}
        </p>
        {p.error ? (
          <p class="field-error" id={errorId}>
            {fieldMessage(label, p.error)}
          </p>
        ) : null}
      </div>
    );
  } else {
    control = <input id={id} type="text" value={String(p.value ?? '')} {...aria} onInput={(e) => p.onValue(e.currentTarget.value)} />;
  }
  return (
    <div class="field">
      <label for={id}>{label}</label>
      <p class="hint" id={hintId}>
        {hintFor(slot)}
      </p>
      {control}
      {p.error ? (
        <p class="field-error" id={errorId}>
          {fieldMessage(label, p.error)}
        </p>
      ) : null}
      {MEDIA_KINDS.includes(slot.kind) ? <Uploads items={p.media} /> : null}
    </div>
  );
}
