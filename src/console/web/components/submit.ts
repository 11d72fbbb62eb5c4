// Sending a form: busy while it runs, then the server's field errors next to their fields (and
// focus on the first one), or one message for the form when no shown field is at fault.
import { useState } from 'preact/hooks';
import { ConsoleError } from '../api.ts';
import { errorText } from './load.tsx';

export interface Submit {
  busy: boolean;
  fields: Record<string, string>;
  error: string | null;
  /** Runs fn; true when it succeeded. */
  run(fn: () => Promise<void>): Promise<boolean>;
  /** Errors found before sending (a confirmation that does not match). */
  fail(fields: Record<string, string>): void;
  reset(): void;
}

function focusFirstInvalid(): void {
  // After the render that marks the fields.
  requestAnimationFrame(() => {
    const el = document.querySelector<HTMLElement>('[aria-invalid="true"]');
    el?.focus();
  });
}

/** `shown` names the body fields this form displays; errors on others go to the form message. */
export function useSubmit(shown: readonly string[]): Submit {
  const [busy, setBusy] = useState(false);
  const [fields, setFields] = useState<Record<string, string>>({});
  const [error, setError] = useState<string | null>(null);
  return {
    busy,
    fields,
    error,
    async run(fn) {
      setBusy(true);
      setFields({});
      setError(null);
      try {
        await fn();
        return true;
      } catch (err) {
        const mine = err instanceof ConsoleError ? Object.entries(err.fields).filter(([f]) => shown.includes(f)) : [];
        if (mine.length) {
          setFields(Object.fromEntries(mine));
          focusFirstInvalid();
        } else {
          setError(errorText(err));
        }
        return false;
      } finally {
        setBusy(false);
      }
    },
    fail(f) {
      setFields(f);
      setError(null);
      focusFirstInvalid();
    },
    reset() {
      setFields({});
      setError(null);
    },
  };
}
