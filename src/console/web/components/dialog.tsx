// A confirmation dialog on the native modal <dialog>: the browser makes the rest of the page inert,
// Tab cycles inside it, Escape cancels it, and focus returns to the control that opened it.
import type { ComponentChildren } from 'preact';
import { useId, useLayoutEffect, useRef } from 'preact/hooks';
import { FormError } from './field.tsx';

interface ConfirmDialogProps {
  title: string;
  children: ComponentChildren;
  confirmLabel: string;
  /** The button that closes without acting; "Cancel" unless that would read like the action. */
  closeLabel?: string;
  /** Destructive actions get the danger style. */
  danger?: boolean;
  busy?: boolean;
  error?: string | null;
  onConfirm: () => void;
  onClose: () => void;
}

const FOCUSABLE = 'button:not([disabled]), [href], input:not([disabled]), select:not([disabled]), textarea:not([disabled]), [tabindex]:not([tabindex="-1"])';

/** Tab past the last control comes back to the first (and Shift+Tab the other way), never to the browser's own UI. */
function trapTab(e: KeyboardEvent, dialog: HTMLDialogElement | null): void {
  if (e.key !== 'Tab' || !dialog) return;
  const controls = [...dialog.querySelectorAll<HTMLElement>(FOCUSABLE)];
  const first = controls[0];
  const last = controls[controls.length - 1];
  if (!first || !last) return;
  if (e.shiftKey && document.activeElement === first) {
    e.preventDefault();
    last.focus();
  } else if (!e.shiftKey && document.activeElement === last) {
    e.preventDefault();
    first.focus();
  }
}

/** Rendered only while open: mounting shows it modally, unmounting closes it. */
export function ConfirmDialog(p: ConfirmDialogProps) {
  const ref = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  const bodyId = useId();
  // Layout effect: its cleanup runs before the dialog leaves the DOM, so focus goes straight back
  // to the opener instead of passing through the page's body.
  useLayoutEffect(() => {
    const dialog = ref.current;
    if (!dialog) return;
    const opener = document.activeElement instanceof HTMLElement ? document.activeElement : null;
    dialog.showModal();
    return () => {
      if (dialog.open) dialog.close();
      opener?.focus();
    };
  }, []);
  return (
    <dialog
      ref={ref}
      class="dialog"
      aria-labelledby={titleId}
      aria-describedby={bodyId}
      onKeyDown={(e) => trapTab(e, ref.current)}
      onCancel={(e) => {
        // Escape: the parent decides (and unmounts us), so the state never disagrees with the DOM.
        e.preventDefault();
        p.onClose();
      }}
    >
      <h2 id={titleId}>{p.title}</h2>
      <div id={bodyId}>{p.children}</div>
      <FormError message={p.error ?? null} />
      <div class="actions">
        <button type="button" class="secondary" onClick={p.onClose}>
          {p.closeLabel ?? 'Cancel'}
        </button>
        <button type="button" class={p.danger ? 'danger' : 'primary'} disabled={p.busy} onClick={p.onConfirm}>
          {p.confirmLabel}
        </button>
      </div>
    </dialog>
  );
}
