// Labelled form controls whose error sits next to them: aria-invalid on the control and
// aria-describedby pointing at the message (and at the hint), so a screen reader reads both.
import type { ComponentChildren, PartialInputHTMLAttributes, Ref, TargetedEvent } from 'preact';
import { useId } from 'preact/hooks';

/** "Password" + "must be at least 12 characters" reads as one sentence; a full sentence stays as it is. */
export function fieldMessage(label: string, message: string): string {
  return /^[a-z]/.test(message) ? `${label} ${message}` : message;
}

function describedBy(...ids: (string | false)[]): string | undefined {
  const list = ids.filter((x): x is string => Boolean(x));
  return list.length ? list.join(' ') : undefined;
}

type InputType = 'text' | 'email' | 'password' | 'url';
type CommonInput = Omit<PartialInputHTMLAttributes<HTMLInputElement>, 'type' | 'role' | 'list'>;

// Preact types each input type apart (the roles it may take), so each gets its own element.
function input(type: InputType, attrs: CommonInput) {
  switch (type) {
    case 'email':
      return <input type="email" {...attrs} />;
    case 'password':
      return <input type="password" {...attrs} />;
    case 'url':
      return <input type="url" {...attrs} />;
    default:
      return <input type="text" {...attrs} />;
  }
}

interface TextFieldProps {
  label: string;
  value: string;
  onValue: (value: string) => void;
  error?: string | undefined;
  hint?: ComponentChildren;
  type?: InputType;
  autoComplete?: string;
  required?: boolean;
  name?: string;
  inputRef?: Ref<HTMLInputElement>;
}

export function TextField(p: TextFieldProps) {
  const id = useId();
  const errorId = `${id}-error`;
  const hintId = `${id}-hint`;
  const common: CommonInput = {
    id,
    ref: p.inputRef,
    name: p.name,
    value: p.value,
    required: p.required,
    autoComplete: p.autoComplete,
    'aria-invalid': p.error ? ('true' as const) : undefined,
    'aria-describedby': describedBy(Boolean(p.error) && errorId, Boolean(p.hint) && hintId),
    onInput: (e: TargetedEvent<HTMLInputElement>) => p.onValue(e.currentTarget.value),
  };
  return (
    <div class="field">
      <label for={id}>{p.label}</label>
      {p.hint ? (
        <p class="hint" id={hintId}>
          {p.hint}
        </p>
      ) : null}
      {input(p.type ?? 'text', common)}
      <ErrorText id={errorId} subject={p.label} error={p.error} />
    </div>
  );
}

interface SelectFieldProps<T extends string | number> {
  label: string;
  value: T;
  options: readonly { value: T; label: string }[];
  onValue: (value: T) => void;
  error?: string | undefined;
  hint?: ComponentChildren;
}

export function SelectField<T extends string | number>(p: SelectFieldProps<T>) {
  const id = useId();
  const errorId = `${id}-error`;
  const hintId = `${id}-hint`;
  const onChange = (e: TargetedEvent<HTMLSelectElement>) => {
    const picked = p.options.find((o) => String(o.value) === e.currentTarget.value);
    if (picked) p.onValue(picked.value);
  };
  return (
    <div class="field">
      <label for={id}>{p.label}</label>
      {p.hint ? (
        <p class="hint" id={hintId}>
          {p.hint}
        </p>
      ) : null}
      <select
        id={id}
        value={String(p.value)}
        aria-invalid={p.error ? 'true' : undefined}
        aria-describedby={describedBy(Boolean(p.error) && errorId, Boolean(p.hint) && hintId)}
        onChange={onChange}
      >
        {p.options.map((o) => (
          <option key={String(o.value)} value={String(o.value)}>
            {o.label}
          </option>
        ))}
      </select>
      <ErrorText id={errorId} subject={p.label} error={p.error} />
    </div>
  );
}

interface CheckboxGroupProps<T extends string> {
  legend: string;
  options: readonly { value: T; label: string; disabled?: boolean; hint?: string }[];
  checked: readonly T[];
  onChecked: (values: T[]) => void;
  error?: string | undefined;
}

/** A fieldset of checkboxes; a disabled option that is checked is always sent (read scope). */
export function CheckboxGroup<T extends string>(p: CheckboxGroupProps<T>) {
  const id = useId();
  const errorId = `${id}-error`;
  const toggle = (value: T, on: boolean) => {
    const next = p.options.map((o) => o.value).filter((v) => (v === value ? on : p.checked.includes(v)));
    p.onChecked(next);
  };
  return (
    <fieldset class="field" aria-describedby={p.error ? errorId : undefined}>
      <legend>{p.legend}</legend>
      {p.options.map((o) => (
        <label class="check" key={o.value}>
          <input
            type="checkbox"
            checked={p.checked.includes(o.value)}
            disabled={o.disabled}
            onChange={(e) => toggle(o.value, e.currentTarget.checked)}
          />
          <span>
            {o.label}
            {o.hint ? <span class="hint-inline"> {o.hint}</span> : null}
          </span>
        </label>
      ))}
      <ErrorText id={errorId} subject={p.legend} error={p.error} />
    </fieldset>
  );
}

/** The error shown under a field, named by the field's aria-describedby. */
function ErrorText(p: { id: string; subject: string; error: string | undefined }) {
  if (!p.error) return null;
  return (
    <p class="field-error" id={p.id}>
      {fieldMessage(p.subject, p.error)}
    </p>
  );
}

/** A message about the whole form (not one field), announced when it appears. */
export function FormError(p: { message: string | null }) {
  return (
    <div role="alert" class={p.message ? 'form-error' : 'form-error empty'}>
      {p.message}
    </div>
  );
}
