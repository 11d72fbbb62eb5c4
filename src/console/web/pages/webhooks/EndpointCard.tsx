// One endpoint: its state and events, and (for owners and admins) pause/resume, change events,
// send a test ping, delete; its delivery log opens on demand.
import { useId, useState } from 'preact/hooks';
import type { ConsoleApi, EventType, WebhookEndpoint, WebhookTest } from '../../api.ts';
import { ConfirmDialog } from '../../components/dialog.tsx';
import { CheckboxGroup, FormError } from '../../components/field.tsx';
import { when } from '../../components/format.ts';
import { errorText } from '../../components/load.tsx';
import { useSubmit } from '../../components/submit.ts';
import { DeliveryLog } from './DeliveryLog.tsx';
import { EVENT_OPTIONS } from './events.ts';

function testResult(t: WebhookTest): string {
  const code = t.response_code === null ? 'no response' : `HTTP ${t.response_code}`;
  return t.delivered
    ? `Test delivered: ${code} in ${t.duration_ms} ms.`
    : `Test not delivered: ${code} after ${t.duration_ms} ms${t.error ? ` (${t.error})` : ''}.`;
}

/** What the API adds to an endpoint the service paused itself (absent otherwise). */
type Endpoint = WebhookEndpoint & { paused_reason?: 'failing' | 'gone'; paused_at?: string };

/** Why the service paused the endpoint, for the person who has to fix the receiver before resuming. */
export function pausedReasonText(ep: Endpoint): string | null {
  if (ep.enabled || !ep.paused_reason) return null;
  const at = ep.paused_at ? ` on ${when(ep.paused_at)}` : '';
  return ep.paused_reason === 'gone'
    ? `Paused automatically${at}: the endpoint answered 410 Gone. Resume it once it accepts deliveries again.`
    : `Paused automatically${at}: every delivery attempt had been failing for days. Fix the receiver, then resume it.`;
}

function EventsEditor(p: { api: ConsoleApi; endpoint: WebhookEndpoint; onDone: (changed: boolean) => void }) {
  const [events, setEvents] = useState<EventType[]>(p.endpoint.events);
  const submit = useSubmit(['events']);
  const onSubmit = async (e: Event) => {
    e.preventDefault();
    if (await submit.run(async () => void (await p.api.updateWebhook(p.endpoint.id, { events })))) p.onDone(true);
  };
  return (
    <form onSubmit={(e) => void onSubmit(e)} noValidate class="inline-form">
      <CheckboxGroup legend={`Events for ${p.endpoint.url}`} options={EVENT_OPTIONS} checked={events} onChecked={setEvents} error={submit.fields.events} />
      <FormError message={submit.error} />
      <div class="actions">
        <button type="submit" class="primary small" disabled={submit.busy}>
          Save events
        </button>
        <button type="button" class="secondary small" onClick={() => p.onDone(false)}>
          Cancel
        </button>
      </div>
    </form>
  );
}

export function EndpointCard(p: { api: ConsoleApi; endpoint: Endpoint; canManage: boolean; onChanged: () => Promise<void> }) {
  const { endpoint: ep } = p;
  const pausedReason = pausedReasonText(ep);
  const headingId = useId();
  const logId = useId();
  const [status, setStatus] = useState('');
  const [editing, setEditing] = useState(false);
  const [showLog, setShowLog] = useState(false);
  const [deleting, setDeleting] = useState(false);
  const [deleteError, setDeleteError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const act = async (fn: () => Promise<string>) => {
    setBusy(true);
    setStatus('');
    try {
      setStatus(await fn());
    } catch (err) {
      setStatus(errorText(err));
    } finally {
      setBusy(false);
    }
  };
  const toggle = () =>
    act(async () => {
      await p.api.updateWebhook(ep.id, { enabled: !ep.enabled });
      await p.onChanged();
      return ep.enabled ? 'Endpoint paused.' : 'Endpoint resumed.';
    });
  const sendTest = () => act(async () => testResult(await p.api.testWebhook(ep.id)));
  const remove = async () => {
    setBusy(true);
    setDeleteError(null);
    try {
      await p.api.deleteWebhook(ep.id);
      setDeleting(false);
      await p.onChanged();
    } catch (err) {
      setDeleteError(errorText(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <article class="card" aria-labelledby={headingId}>
      <h2 id={headingId} class="mono url">
        {ep.url}
      </h2>
      <p>
        <span class={ep.enabled ? 'badge ok' : 'badge paused'}>{ep.enabled ? 'Active' : 'Paused'}</span> Events:{' '}
        {ep.events.join(', ')}. Added {when(ep.created_at)}.
      </p>
      {pausedReason ? <p class="hint paused-reason">{pausedReason}</p> : null}
      {editing ? (
        <EventsEditor
          api={p.api}
          endpoint={ep}
          onDone={(changed) => {
            setEditing(false);
            if (changed) void p.onChanged().then(() => setStatus('Events saved.'));
          }}
        />
      ) : null}
      {p.canManage && !editing ? (
        <div class="actions">
          <button type="button" class="small" disabled={busy} onClick={() => void toggle()}>
            {ep.enabled ? 'Pause' : 'Resume'}
          </button>
          <button type="button" class="small" onClick={() => setEditing(true)}>
            Change events
          </button>
          <button type="button" class="small" disabled={busy} onClick={() => void sendTest()}>
            Send test
          </button>
          <button type="button" class="small danger" onClick={() => (setDeleteError(null), setDeleting(true))}>
            Delete
          </button>
        </div>
      ) : null}
      <p role="status" class="status">
        {status}
      </p>
      <button type="button" class="secondary small" aria-expanded={showLog} aria-controls={logId} onClick={() => setShowLog(!showLog)}>
        {showLog ? 'Hide deliveries' : 'Show deliveries'}
      </button>
      <div id={logId}>{showLog ? <DeliveryLog api={p.api} endpointId={ep.id} canManage={p.canManage} label={ep.url} /> : null}</div>
      {deleting ? (
        <ConfirmDialog
          title="Delete this endpoint?"
          confirmLabel="Delete endpoint"
          danger
          busy={busy}
          error={deleteError}
          onConfirm={() => void remove()}
          onClose={() => setDeleting(false)}
        >
          <p>
            {ep.url} receives nothing more, and its delivery log goes with it. To stop deliveries for a while, pause it instead.
          </p>
        </ConfirmDialog>
      ) : null}
    </article>
  );
}
