// "Add endpoint": an HTTPS URL and the events it receives (all three unless narrowed).
import { useState } from 'preact/hooks';
import { EVENT_TYPES, type ConsoleApi, type EventType } from '../../api.ts';
import { CheckboxGroup, FormError, TextField } from '../../components/field.tsx';
import { useSubmit } from '../../components/submit.ts';
import { EVENT_OPTIONS } from './events.ts';

export function AddEndpointForm(p: { api: ConsoleApi; onCreated: (url: string, secret: string) => void }) {
  const [url, setUrl] = useState('');
  const [events, setEvents] = useState<EventType[]>([...EVENT_TYPES]);
  const submit = useSubmit(['url', 'events']);
  const onSubmit = async (e: Event) => {
    e.preventDefault();
    await submit.run(async () => {
      const created = await p.api.createWebhook({ url: url.trim(), events });
      setUrl('');
      setEvents([...EVENT_TYPES]);
      p.onCreated(created.url, created.signing_secret);
    });
  };
  return (
    <form onSubmit={(e) => void onSubmit(e)} noValidate aria-labelledby="add-endpoint-heading">
      <h2 id="add-endpoint-heading">Add endpoint</h2>
      <TextField label="URL" type="url" value={url} onValue={setUrl} error={submit.fields.url} hint="An HTTPS URL on a public host." />
      <CheckboxGroup legend="Events" options={EVENT_OPTIONS} checked={events} onChecked={setEvents} error={submit.fields.events} />
      <FormError message={submit.error} />
      <button type="submit" class="primary" disabled={submit.busy}>
        Add endpoint
      </button>
    </form>
  );
}
