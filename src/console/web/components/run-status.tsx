// A run's status as the runs table and the run page show it: the word, and while it works a
// progress bar with its percentage; who started it (a key by name, or a member in the app).
import type { RunItem, RunStatus, StartedBy } from '../api-runs.ts';
import { FINAL_STATUSES } from '../api-runs.ts';

export const STATUS_NAMES: Record<RunStatus, string> = {
  queued: 'Queued',
  running: 'Running',
  succeeded: 'Succeeded',
  failed: 'Failed',
  canceled: 'Canceled',
};

export function isFinal(status: RunStatus): boolean {
  return FINAL_STATUSES.includes(status);
}

/** A succeeded run has done all its work whatever its last progress report said. */
export function progressOf(run: Pick<RunItem, 'status' | 'progress'>): number {
  return run.status === 'succeeded' ? 1 : Math.max(0, Math.min(1, run.progress));
}

export function RunStatusView(p: { run: Pick<RunItem, 'status' | 'progress'>; label: string; always?: boolean }) {
  const { run } = p;
  const fraction = progressOf(run);
  const percent = Math.round(fraction * 100);
  const showBar = p.always || !isFinal(run.status);
  return (
    <span class="run-status">
      <span class={`badge status-${run.status}`}>{STATUS_NAMES[run.status] ?? run.status}</span>
      {showBar ? (
        <span class="run-progress">
          <progress max={1} value={fraction} aria-label={p.label} aria-valuetext={`${percent}%`} />
          <span aria-hidden="true">{percent}%</span>
        </span>
      ) : null}
    </span>
  );
}

/** A key by name (it acts as its creator), or the member who started an app run, marked App. */
export function StartedByView(p: { by: StartedBy }) {
  if (p.by.kind === 'key')
    return (
      <span>
        Key “{p.by.name}”<span class="hint-inline"> ({p.by.member_email})</span>
      </span>
    );
  return (
    <span>
      <span class="badge app">App</span> {p.by.email}
    </span>
  );
}
