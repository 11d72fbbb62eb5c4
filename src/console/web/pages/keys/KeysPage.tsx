// API keys: owners and admins create and revoke; members see the list. A key acts as the member
// who created it, so the list says who that was.
import { useState } from 'preact/hooks';
import type { ApiKeyItem, ConsoleApi, KeyList } from '../../api.ts';
import { ConfirmDialog } from '../../components/dialog.tsx';
import { when } from '../../components/format.ts';
import { errorText, Loading, useLoad } from '../../components/load.tsx';
import { PageTitle } from '../../components/page.tsx';
import { Secret } from '../../components/secret.tsx';
import { CreateKeyForm } from './CreateKeyForm.tsx';

function Limits(p: { list: KeyList }) {
  const { list } = p;
  if (!list.plan_allows_keys) {
    return (
      <div class="notice" role="note">
        <h2>API keys need a paid plan</h2>
        <p>
          Your team is on the Free plan. The API works with Plus, Pro and Team plans: on Free no key can be created, and any
          existing key answers 403 plan_upgrade_required. Ask the people who run your Toolrun service to change the team's plan.
        </p>
      </div>
    );
  }
  const full = list.active_keys >= list.max_active_keys;
  return (
    <p class={full ? 'notice' : 'hint'}>
      {list.active_keys} of {list.max_active_keys} active keys in use. A team can have at most {list.max_active_keys} active keys
      {full ? ': revoke one you no longer use to create another.' : '.'}
    </p>
  );
}

function KeyTable(p: { keys: ApiKeyItem[]; canManage: boolean; onRevoke: (k: ApiKeyItem) => void }) {
  if (p.keys.length === 0) return <p>No active keys yet.</p>;
  return (
    <div class="table-wrap" tabIndex={0} role="region" aria-label="Active keys">
      <table>
        <caption>Active keys</caption>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Prefix</th>
            <th scope="col">Scopes</th>
            <th scope="col">Rate</th>
            <th scope="col">Created by</th>
            <th scope="col">Created</th>
            <th scope="col">Last used</th>
            {p.canManage ? <th scope="col">Actions</th> : null}
          </tr>
        </thead>
        <tbody>
          {p.keys.map((k) => (
            <tr key={k.id}>
              <th scope="row">{k.name}</th>
              <td class="mono">{k.prefix}…</td>
              <td>{k.scopes.join(', ')}</td>
              <td>{k.rate_limit_per_minute}/min</td>
              <td>{k.created_by.email}</td>
              <td>{when(k.created_at)}</td>
              <td>{when(k.last_used_at)}</td>
              {p.canManage ? (
                <td>
                  <button type="button" class="danger small" aria-label={`Revoke ${k.name}`} onClick={() => p.onRevoke(k)}>
                    Revoke
                  </button>
                </td>
              ) : null}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

export function KeysPage(p: { api: ConsoleApi }) {
  const [loaded, reload] = useLoad(() => p.api.listKeys());
  const [created, setCreated] = useState<{ key: string; name: string } | null>(null);
  const [revoking, setRevoking] = useState<ApiKeyItem | null>(null);
  const [revokeError, setRevokeError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const revoke = async (k: ApiKeyItem) => {
    setBusy(true);
    setRevokeError(null);
    try {
      await p.api.revokeKey(k.id);
      setRevoking(null);
      await reload();
    } catch (err) {
      setRevokeError(errorText(err));
    } finally {
      setBusy(false);
    }
  };

  const list = loaded.state === 'ready' ? loaded.value : null;
  return (
    <>
      <PageTitle title="API keys" />
      <p>
        Programs call the Tool-Run API with a key. A key acts as the member who created it, with the scopes and rate chosen here;
        every key and this console share the team's hourly ceiling.
      </p>
      <Loading loaded={loaded} />
      {list ? (
        <>
          <Limits list={list} />
          {!list.can_manage ? <p class="hint">Only owners and admins create and revoke keys.</p> : null}
          {created ? (
            <Secret
              label={`API key “${created.name}”`}
              value={created.key}
              warning="Copy this key now and keep it secret: it is shown only once."
              onDone={() => setCreated(null)}
            />
          ) : null}
          {list.can_manage && list.plan_allows_keys && list.active_keys < list.max_active_keys && !created ? (
            <CreateKeyForm
              api={p.api}
              onCreated={(key, item) => {
                setCreated({ key, name: item.name });
                void reload();
              }}
            />
          ) : null}
          <KeyTable keys={list.data} canManage={list.can_manage} onRevoke={(k) => (setRevokeError(null), setRevoking(k))} />
        </>
      ) : null}
      {revoking ? (
        <ConfirmDialog
          title={`Revoke “${revoking.name}”?`}
          confirmLabel="Revoke key"
          danger
          busy={busy}
          error={revokeError}
          onConfirm={() => void revoke(revoking)}
          onClose={() => setRevoking(null)}
        >
          <p>
            Anything using the key {revoking.prefix}… gets 401 from its next request. A revoked key cannot be turned back on.
          </p>
        </ConfirmDialog>
      ) : null}
    </>
  );
}
