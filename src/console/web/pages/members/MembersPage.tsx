// Members: everyone reads the list; owners and admins invite, change roles and remove, and see
// and revoke the pending invite links.
import { useState } from 'preact/hooks';
import type { ConsoleApi, Invite, Member, Session } from '../../api.ts';
import { ConfirmDialog } from '../../components/dialog.tsx';
import { errorText, Loading, useLoad } from '../../components/load.tsx';
import { PageTitle } from '../../components/page.tsx';
import { Secret } from '../../components/secret.tsx';
import { InviteForm } from './InviteForm.tsx';
import { MemberRow } from './MemberRow.tsx';
import { PendingInvites } from './PendingInvites.tsx';

export function MembersPage(p: { api: ConsoleApi; session: Session }) {
  const [loaded, reload] = useLoad(() => p.api.listMembers());
  const [invite, setInvite] = useState<{ email: string; invite: Invite } | null>(null);
  const [removing, setRemoving] = useState<Member | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [pageStatus, setPageStatus] = useState('');
  const [busy, setBusy] = useState(false);
  // Bumped after every change that makes, uses up or voids a link: the pending list reloads.
  const [linksChanged, setLinksChanged] = useState(0);
  const list = loaded.state === 'ready' ? loaded.value : null;
  const changed = async () => {
    setLinksChanged((n) => n + 1);
    await reload();
  };

  const newLink = async (m: Member) => {
    setPageStatus('');
    try {
      setInvite({ email: m.email, invite: await p.api.inviteMember(m.id) });
      setLinksChanged((n) => n + 1);
    } catch (err) {
      setPageStatus(errorText(err));
    }
  };
  const remove = async (m: Member) => {
    setBusy(true);
    setError(null);
    try {
      await p.api.removeMember(m.id);
      setRemoving(null);
      setPageStatus(`${m.email} was removed.`);
      await changed();
    } catch (err) {
      setError(errorText(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <>
      <PageTitle title="Members" />
      <p>
        Owners and admins manage keys, webhooks and members; members see them. Removing a member signs them out at once and stops
        their API keys for good.
      </p>
      <Loading loaded={loaded} />
      {list && !list.can_manage ? <p class="hint">Only owners and admins invite, change and remove members.</p> : null}
      <p role="status" class="status">
        {pageStatus}
      </p>
      {invite ? (
        <Secret
          label={`Invite link for ${invite.email}`}
          value={invite.invite.invite_url}
          warning={`Send this link to ${invite.email}; it sets their password. It works once, until ${new Date(invite.invite.expires_at).toLocaleString()}; a newer link, a change of their role or a revocation below stops it.`}
          onDone={() => setInvite(null)}
        />
      ) : null}
      {list?.can_manage && !invite ? (
        <InviteForm
          api={p.api}
          onInvited={(email, inv) => {
            setInvite({ email, invite: inv });
            void changed();
          }}
        />
      ) : null}
      {list ? (
        <div class="table-wrap" tabIndex={0} role="region" aria-label="Team members">
          <table>
            <caption>Team members</caption>
            <thead>
              <tr>
                <th scope="col">Email</th>
                <th scope="col">Role</th>
                <th scope="col">Password</th>
                <th scope="col">Added</th>
                {list.can_manage ? <th scope="col">Actions</th> : null}
              </tr>
            </thead>
            <tbody>
              {list.data.map((m) => (
                <MemberRow
                  key={m.id}
                  api={p.api}
                  member={m}
                  canManage={list.can_manage}
                  mayLink={p.session.member.role === 'owner' || (list.can_manage && m.role !== 'owner' && !m.has_password)}
                  isMe={m.id === p.session.member.id}
                  onChanged={changed}
                  onInvite={(x) => void newLink(x)}
                  onRemove={(x) => (setError(null), setRemoving(x))}
                />
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
      {list?.can_manage ? (
        <PendingInvites api={p.api} refreshKey={linksChanged} onRevoked={(email) => setPageStatus(`The link for ${email} was revoked.`)} />
      ) : null}
      {removing ? (
        <ConfirmDialog
          title={`Remove ${removing.email}?`}
          confirmLabel="Remove member"
          danger
          busy={busy}
          error={error}
          onConfirm={() => void remove(removing)}
          onClose={() => setRemoving(null)}
        >
          <p>
            They are signed out at once, and every API key they created stops working for good: programs using those keys get 401.
            This cannot be undone; to let them back in, invite them again.
          </p>
        </ConfirmDialog>
      ) : null}
    </>
  );
}
