// The team's pending invite links (owners and admins): for whom, made by whom, until when, whether
// it resets a password the member already has, and Revoke. Tokens are never shown again here.
import { useEffect, useState } from 'preact/hooks';
import type { ConsoleApi, PendingInvite } from '../../api.ts';
import { when } from '../../components/format.ts';
import { errorText, Loading, useLoad } from '../../components/load.tsx';

export function PendingInvites(p: { api: ConsoleApi; refreshKey: number; onRevoked: (email: string) => void }) {
  const [loaded, reload] = useLoad(() => p.api.listInvites());
  const [status, setStatus] = useState('');
  const [busy, setBusy] = useState<string | null>(null);
  useEffect(() => {
    if (p.refreshKey > 0) void reload();
  }, [p.refreshKey]);

  const revoke = async (link: PendingInvite) => {
    setBusy(link.id);
    setStatus('');
    try {
      await p.api.revokeInvite(link.id);
      await reload();
      p.onRevoked(link.member.email);
    } catch (err) {
      setStatus(errorText(err));
    } finally {
      setBusy(null);
    }
  };

  const links = loaded.state === 'ready' ? loaded.value.data : null;
  return (
    <section>
      <h2 id="pending-heading">Pending invite links</h2>
      <p class="hint">
        Links that can still set a member's password. A link stops working when it is used or revoked, when the member's role
        changes, and when whoever made it is removed or demoted.
      </p>
      <Loading loaded={loaded} />
      <p role="status" class="status">
        {status}
      </p>
      {links && links.length === 0 ? <p>No pending links.</p> : null}
      {links && links.length > 0 ? (
        <div class="table-wrap" tabIndex={0} role="region" aria-label="Pending invite links">
          <table>
            <caption>Pending invite links</caption>
            <thead>
              <tr>
                <th scope="col">For</th>
                <th scope="col">Made by</th>
                <th scope="col">Made</th>
                <th scope="col">Expires</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {links.map((l) => (
                <tr key={l.id}>
                  <th scope="row">
                    {l.member.email}
                    {l.resets_password ? (
                      <>
                        {' '}
                        <span class="badge paused">Resets password</span>
                      </>
                    ) : null}
                  </th>
                  <td>{l.created_by ? l.created_by.email : 'An operator'}</td>
                  <td>{when(l.created_at)}</td>
                  <td>{when(l.expires_at)}</td>
                  <td class="actions">
                    <button
                      type="button"
                      class="small danger"
                      aria-label={`Revoke the link for ${l.member.email}`}
                      disabled={busy === l.id}
                      onClick={() => void revoke(l)}
                    >
                      Revoke
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
    </section>
  );
}
