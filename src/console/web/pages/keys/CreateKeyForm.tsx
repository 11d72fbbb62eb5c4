// "Create key": name, scopes (read always, run by default, webhooks when asked) and rate.
import { useState } from 'preact/hooks';
import { RATES, type ApiKeyItem, type ConsoleApi, type Rate, type Scope } from '../../api.ts';
import { CheckboxGroup, FormError, SelectField, TextField } from '../../components/field.tsx';
import { useSubmit } from '../../components/submit.ts';

const SCOPE_OPTIONS = [
  { value: 'read' as const, label: 'Read', disabled: true, hint: '(always: list tools, estimate, read runs, download outputs)' },
  { value: 'run' as const, label: 'Run', hint: '(start and cancel runs, upload files)' },
  { value: 'webhooks' as const, label: 'Webhooks', hint: '(add, change, test and delete webhook endpoints)' },
];

const RATE_OPTIONS = RATES.map((r) => ({ value: r, label: `${r} requests a minute` }));

export function CreateKeyForm(p: { api: ConsoleApi; onCreated: (key: string, item: ApiKeyItem) => void }) {
  const [name, setName] = useState('');
  const [scopes, setScopes] = useState<Scope[]>(['read', 'run']);
  const [rate, setRate] = useState<Rate>(60);
  const submit = useSubmit(['name', 'scopes', 'rate_limit_per_minute']);
  const onSubmit = async (e: Event) => {
    e.preventDefault();
    await submit.run(async () => {
      const created = await p.api.createKey({ name: name.trim(), scopes, rate_limit_per_minute: rate });
      setName('');
      setScopes(['read', 'run']);
      setRate(60);
      p.onCreated(created.key, created.api_key);
    });
  };
  return (
    <form onSubmit={(e) => void onSubmit(e)} noValidate aria-labelledby="create-key-heading">
      <h2 id="create-key-heading">Create key</h2>
      <TextField label="Name" value={name} onValue={setName} error={submit.fields.name} hint="What uses the key, e.g. “billing export”." />
      <CheckboxGroup legend="Scopes" options={SCOPE_OPTIONS} checked={scopes} onChecked={(s) => setScopes(s.includes('read') ? s : ['read', ...s])} error={submit.fields.scopes} />
      <SelectField label="Rate limit" value={rate} options={RATE_OPTIONS} onValue={setRate} error={submit.fields.rate_limit_per_minute} />
      <FormError message={submit.error} />
      <button type="submit" class="primary" disabled={submit.busy}>
        Create key
      </button>
    </form>
  );
}
