// One member: role, whether they have set a password, and (for owners and admins) change role,
// a fresh invite link, remove.
import { useState } from 'preact/hooks';
import type { ConsoleApi, Member, Role } from '../../api.ts';
import { when, ROLE_NAMES } from '../../components/format.ts';
import { errorText } from '../../components/load.tsx';
import { ROLE_OPTIONS } from './roles.ts';

interface MemberRowProps {
  api: ConsoleApi;
  member: Member;
  canManage: boolean;
  /** Whether the signed-in member may make a link for this one (only owners reset a password, or touch an owner). */
  mayLink: boolean;
  isMe: boolean;
  onChanged: () => Promise<void>;
  onInvite: (m: Member) => void;
  onRemove: (m: Member) => void;
}

export function MemberRow(p: MemberRowProps) {
  const m = p.member;
  const [role, setRole] = useState<Role>(m.role);
  const [status, setStatus] = useState('');
  const [busy, setBusy] = useState(false);
  const selectId = `role-${m.id}`;
  const statusId = `status-${m.id}`;
  const saveRole = async () => {
    setBusy(true);
    setStatus('');
    try {
      await p.api.changeRole(m.id, role);
      await p.onChanged();
      setStatus('Role changed.');
    } catch (err) {
      setStatus(errorText(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <tr>
      <th scope="row">
        {m.email}
        {p.isMe ? ' (you)' : ''}
      </th>
      <td>
        {p.canManage ? (
          <div class="row-control">
            <label class="visually-hidden" for={selectId}>
              Role for {m.email}
            </label>
            <select id={selectId} value={role} aria-describedby={statusId} onChange={(e) => setRole(e.currentTarget.value as Role)}>
              {ROLE_OPTIONS.map((o) => (
                <option key={o.value} value={o.value}>
                  {ROLE_NAMES[o.value]}
                </option>
              ))}
            </select>
            <button type="button" class="small" disabled={busy || role === m.role} onClick={() => void saveRole()}>
              Change role
            </button>
          </div>
        ) : (
          (ROLE_NAMES[m.role] ?? m.role)
        )}
        <p id={statusId} role="status" class="status">
          {status}
        </p>
      </td>
      <td>{m.has_password ? 'Set' : 'Invite pending'}</td>
      <td>{when(m.created_at)}</td>
      {p.canManage ? (
        <td class="actions">
          {p.mayLink ? (
            <button type="button" class="small" aria-label={`${m.has_password ? 'New reset link' : 'New invite link'} for ${m.email}`} onClick={() => p.onInvite(m)}>
              {m.has_password ? 'Reset link' : 'Invite link'}
            </button>
          ) : null}
          <button type="button" class="small danger" aria-label={`Remove ${m.email}`} onClick={() => p.onRemove(m)}>
            Remove
          </button>
        </td>
      ) : null}
    </tr>
  );
}
