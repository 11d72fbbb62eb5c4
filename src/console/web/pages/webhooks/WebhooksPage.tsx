// Webhooks: the team's endpoints; owners and admins add, pause, change, test and delete them.
import { useState } from 'preact/hooks';
import type { ConsoleApi } from '../../api.ts';
import { Loading, useLoad } from '../../components/load.tsx';
import { PageTitle } from '../../components/page.tsx';
import { Secret } from '../../components/secret.tsx';
import { AddEndpointForm } from './AddEndpointForm.tsx';
import { EndpointCard } from './EndpointCard.tsx';

export function WebhooksPage(p: { api: ConsoleApi }) {
  const [loaded, reload] = useLoad(() => p.api.listWebhooks());
  const [secret, setSecret] = useState<{ url: string; secret: string } | null>(null);
  const list = loaded.state === 'ready' ? loaded.value : null;
  return (
    <>
      <PageTitle title="Webhooks" />
      <p>
        Toolrun POSTs an event to each endpoint when a run succeeds, fails or is canceled, signed with the endpoint's secret (the
        Service-Signature header). Failed deliveries are retried; a delivery given up can be sent again from its log.
      </p>
      <Loading loaded={loaded} />
      {list && !list.can_manage ? <p class="hint">Only owners and admins change webhook endpoints.</p> : null}
      {secret ? (
        <Secret
          label={`Signing secret for ${secret.url}`}
          value={secret.secret}
          warning="Copy the signing secret now: it is shown only once. Your receiver uses it to check each delivery's signature."
          onDone={() => setSecret(null)}
        />
      ) : null}
      {list?.can_manage && !secret ? (
        <AddEndpointForm
          api={p.api}
          onCreated={(url, s) => {
            setSecret({ url, secret: s });
            void reload();
          }}
        />
      ) : null}
      {list && list.data.length === 0 ? <p>No endpoints yet.</p> : null}
      {list?.data.map((ep) => <EndpointCard key={ep.id} api={p.api} endpoint={ep} canManage={list.can_manage} onChanged={reload} />)}
    </>
  );
}
