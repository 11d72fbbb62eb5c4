// An endpoint's deliveries, newest first: each with its event, state and every attempt; a
// delivery that was given up can be sent again.
import { useState } from 'preact/hooks';
import type { ConsoleApi, Delivery } from '../../api.ts';
import { when } from '../../components/format.ts';
import { errorText, Loading, useLoad } from '../../components/load.tsx';

const STATE_NAMES: Record<Delivery['status'], string> = {
  pending: 'Pending',
  delivered: 'Delivered',
  failed: 'Failed (given up)',
  dropped: 'Dropped',
};

function Attempts(p: { delivery: Delivery }) {
  if (p.delivery.attempts.length === 0) return <span>No attempt yet</span>;
  return (
    <ol class="attempts">
      {p.delivery.attempts.map((a, i) => (
        <li key={i}>
          {when(a.attempted_at)}: {a.status_code === null ? 'no response' : `HTTP ${a.status_code}`} in {a.duration_ms} ms
          {a.error ? <span class="error-text"> ({a.error})</span> : null}
        </li>
      ))}
    </ol>
  );
}

export function DeliveryLog(p: { api: ConsoleApi; endpointId: string; canManage: boolean; label: string }) {
  const [loaded, reload] = useLoad(() => p.api.deliveries(p.endpointId));
  const [status, setStatus] = useState('');
  const redeliver = async (d: Delivery) => {
    setStatus('');
    try {
      await p.api.redeliver(p.endpointId, d.id);
      setStatus(`Delivery of ${d.event_type} queued again.`);
      await reload();
    } catch (err) {
      setStatus(errorText(err));
    }
  };
  return (
    <div class="deliveries">
      <Loading loaded={loaded} />
      <p role="status" class="status">
        {status}
      </p>
      {loaded.state === 'ready' && loaded.value.data.length === 0 ? <p>No deliveries yet.</p> : null}
      {loaded.state === 'ready' && loaded.value.data.length > 0 ? (
        <div class="table-wrap" tabIndex={0} role="region" aria-label={`Deliveries to ${p.label}`}>
          <table>
            <caption>Deliveries to {p.label}, newest first</caption>
            <thead>
              <tr>
                <th scope="col">Event</th>
                <th scope="col">State</th>
                <th scope="col">Created</th>
                <th scope="col">Attempts</th>
                {p.canManage ? <th scope="col">Actions</th> : null}
              </tr>
            </thead>
            <tbody>
              {loaded.value.data.map((d) => (
                <tr key={d.id}>
                  <td>{d.event_type}</td>
                  <td>{STATE_NAMES[d.status]}</td>
                  <td>{when(d.created_at)}</td>
                  <td>
                    <Attempts delivery={d} />
                  </td>
                  {p.canManage ? (
                    <td>
                      {d.status === 'failed' ? (
                        <button type="button" class="small" onClick={() => void redeliver(d)}>
                          Redeliver
                        </button>
                      ) : null}
                    </td>
                  ) : null}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
      <button type="button" class="secondary small" onClick={() => void reload()}>
        Refresh deliveries
      </button>
    </div>
  );
}
