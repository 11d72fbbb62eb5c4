// Cursor pagination: the API hands out an opaque next_cursor, so "Previous page" walks back a stack
// of the cursors that led here. Changing a filter starts again from the first page.
import { useState } from 'preact/hooks';

export interface Pager {
  /** The cursor of the page shown (undefined: the first page). */
  cursor: string | undefined;
  page: number;
  next(cursor: string): void;
  previous(): void;
  reset(): void;
}

export function usePager(): Pager {
  const [stack, setStack] = useState<string[]>([]);
  return {
    cursor: stack[stack.length - 1],
    page: stack.length + 1,
    next: (cursor) => setStack((s) => [...s, cursor]),
    previous: () => setStack((s) => s.slice(0, -1)),
    reset: () => setStack([]),
  };
}

export function PagerControls(p: { pager: Pager; nextCursor: string | null; label: string }) {
  const { pager, nextCursor } = p;
  if (pager.page === 1 && !nextCursor) return null;
  return (
    <nav class="actions pager" aria-label={`${p.label} pages`}>
      <button type="button" class="secondary small" disabled={pager.page === 1} onClick={pager.previous}>
        Previous page
      </button>
      <span class="hint">Page {pager.page}</span>
      <button type="button" class="secondary small" disabled={!nextCursor} onClick={() => nextCursor && pager.next(nextCursor)}>
        Next page
      </button>
    </nav>
  );
}
