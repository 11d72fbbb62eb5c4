// A value shown once (an API key, a signing secret, an invite link): read-only text to select,
// a Copy button, and the warning that it will not be shown again.
import { useId, useState } from 'preact/hooks';

interface SecretProps {
  label: string;
  value: string;
  warning: string;
  onDone?: () => void;
}

export function Secret(p: SecretProps) {
  const id = useId();
  const [copied, setCopied] = useState<string>('');
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(p.value);
      setCopied('Copied to the clipboard.');
    } catch {
      // No clipboard permission (plain http, an old browser): select it for Ctrl+C instead.
      const input = document.getElementById(id);
      if (input instanceof HTMLInputElement) input.select();
      setCopied('Selected: press Ctrl+C (or Cmd+C) to copy.');
    }
  };
  return (
    <section class="secret" aria-label={`Shown once: ${p.label}`}>
      <p class="warning">
        <strong>{p.warning}</strong>
      </p>
      <label for={id}>{p.label}</label>
      <div class="secret-row">
        <input id={id} class="mono" type="text" readOnly value={p.value} onFocus={(e) => e.currentTarget.select()} />
        <button type="button" onClick={() => void copy()}>
          Copy
        </button>
      </div>
      <p class="status" role="status">
        {copied}
      </p>
      {p.onDone ? (
        <button type="button" class="secondary" onClick={p.onDone}>
          Done
        </button>
      ) : null}
    </section>
  );
}
