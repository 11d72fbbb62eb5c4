// One run: its inputs as validated, its status and progress live (asked again every 2 s until it
// is final, without reloading the page), its error, its outputs with previews, and the ledger
// entries it made. A queued or running run can be canceled here; its hold is then released.
import { useState } from 'preact/hooks';
import type { ConsoleRun } from '../../api-runs.ts';
import type { ConsoleApi } from '../../api.ts';
import { ConfirmDialog } from '../../components/dialog.tsx';
import { num, plural, readable, signed, when } from '../../components/format.ts';
import { errorText, Loading, useLoad } from '../../components/load.tsx';
import { PageTitle } from '../../components/page.tsx';
import { usePolling } from '../../components/poll.ts';
import { isFinal, RunStatusView, StartedByView } from '../../components/run-status.tsx';
import { BASE, Link } from '../../router.tsx';
import { Outputs } from './Outputs.tsx';

function inputValue(run: ConsoleRun, slot: string, value: unknown): string {
  const files = run.input_files.filter((f) => f.slot === slot);
  if (files.length) return files.map((f) => (f.width && f.height ? `${f.file_name} (${f.width} × ${f.height})` : f.file_name)).join(', ');
  if (typeof value === 'boolean') return value ? 'Yes' : 'No';
  if (typeof value === 'string' || typeof value === 'number') return String(value);
  return JSON.stringify(value);
}

function Inputs(p: { run: ConsoleRun }) {
  const entries = Object.entries(p.run.inputs);
  if (entries.length === 0) return <p>No inputs.</p>;
  return (
    <dl class="inputs">
      {entries.map(([slot, value]) => (
        <div key={slot}>
          <dt>{readable(slot)}</dt>
          <dd>{inputValue(p.run, slot, value)}</dd>
        </div>
      ))}
    </dl>
  );
}

const LEDGER_NAMES: Record<string, string> = { hold: 'Hold', charge: 'Charge', release: 'Release', refund: 'Refund' };

/** A queued run waits for a slot of its team's own (its limit), not behind other teams. */
function QueueNote(p: { queue: NonNullable<ConsoleRun['queue']> }) {
  const { position, running, limit } = p.queue;
  const place = position === 1 ? 'Next in your team\'s queue' : `Number ${num(position)} in your team's queue`;
  return (
    <p class="small">
      {place}: your team is running {num(running)} of the {plural(limit, 'run', 'runs')} it may run at once.
    </p>
  );
}

function RunLedger(p: { run: ConsoleRun }) {
  if (p.run.ledger.length === 0) return <p>No ledger entries yet.</p>;
  return (
    <div class="table-wrap" tabIndex={0} role="region" aria-label="Ledger entries of this run">
      <table>
        <caption>Ledger entries of this run (Sparks)</caption>
        <thead>
          <tr>
            <th scope="col">Kind</th>
            <th scope="col">Amount</th>
            <th scope="col">Note</th>
            <th scope="col">When</th>
          </tr>
        </thead>
        <tbody>
          {p.run.ledger.map((e) => (
            <tr key={e.id}>
              <th scope="row">{LEDGER_NAMES[e.kind] ?? e.kind}</th>
              <td class="amount">{signed(e.amount)}</td>
              <td>{e.note ?? ''}</td>
              <td>{when(e.created_at)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

export function RunPage(p: { api: ConsoleApi; runId: string }) {
  const [loaded] = useLoad(() => p.api.getRun(p.runId));
  // The latest answer, from polling or cancel; the first load until then.
  const [fresh, setFresh] = useState<ConsoleRun | null>(null);
  const [confirming, setConfirming] = useState(false);
  const [busy, setBusy] = useState(false);
  const [cancelError, setCancelError] = useState<string | null>(null);
  const run = fresh ?? (loaded.state === 'ready' ? loaded.value : null);

  usePolling(Boolean(run && !isFinal(run.status)), async () => setFresh(await p.api.getRun(p.runId)));

  const cancel = async () => {
    setBusy(true);
    setCancelError(null);
    try {
      setFresh(await p.api.cancelRun(p.runId));
      setConfirming(false);
    } catch (err) {
      setCancelError(errorText(err));
      // Finished meanwhile (409 run_not_cancelable): show what it is now.
      setFresh(await p.api.getRun(p.runId).catch(() => run));
    } finally {
      setBusy(false);
    }
  };

  return (
    <>
      <PageTitle title={run ? run.tool_name : 'Run'} />
      <p>
        <Link href={`${BASE}/runs`}>All runs</Link> · Run <span class="mono">{p.runId}</span>
      </p>
      <Loading loaded={loaded} />
      {run ? (
        <>
          <dl class="stats">
            <div>
              <dt>Status</dt>
              <dd aria-live="polite">
                <RunStatusView run={run} label="Run progress" always />
                {run.status === 'queued' && run.queue ? <QueueNote queue={run.queue} /> : null}
              </dd>
            </div>
            <div>
              <dt>{isFinal(run.status) ? 'Cost' : 'Held'}</dt>
              <dd>{num(run.cost_sparks)} Sparks</dd>
            </div>
            <div>
              <dt>Started by</dt>
              <dd class="small">
                <StartedByView by={run.started_by} />
              </dd>
            </div>
            <div>
              <dt>Times</dt>
              <dd class="small">
                Created {when(run.created_at)}
                <br />
                Started {when(run.started_at, '—')}
                <br />
                Finished {when(run.finished_at, '—')}
              </dd>
            </div>
          </dl>
          {run.can_cancel ? (
            <button type="button" class="danger" onClick={() => (setCancelError(null), setConfirming(true))}>
              Cancel run
            </button>
          ) : null}
          {cancelError && !confirming ? (
            <p role="alert" class="form-error">
              {cancelError}
            </p>
          ) : null}
          {run.error ? (
            <div class="notice error" role="alert">
              <h2>Why the run failed</h2>
              <p>{run.error}</p>
            </div>
          ) : null}
          <h2>Inputs</h2>
          <Inputs run={run} />
          <h2>Outputs</h2>
          {run.status === 'succeeded' ? (
            <Outputs api={p.api} run={run} />
          ) : (
            <p>{isFinal(run.status) ? 'This run made no outputs.' : 'The outputs appear here when the run succeeds.'}</p>
          )}
          <h2>Ledger</h2>
          <RunLedger run={run} />
        </>
      ) : null}
      {confirming && run ? (
        <ConfirmDialog
          title={`Cancel this ${run.tool_name} run?`}
          confirmLabel="Cancel run"
          closeLabel="Keep it running"
          danger
          busy={busy}
          error={cancelError}
          onConfirm={() => void cancel()}
          onClose={() => setConfirming(false)}
        >
          <p>The run stops and the Sparks held for it are released. A canceled run cannot be started again.</p>
        </ConfirmDialog>
      ) : null}
    </>
  );
}
