// "Invite member": an email and a role; the answer is a one-time link to send them.
import { useState } from 'preact/hooks';
import type { ConsoleApi, Invite, Role } from '../../api.ts';
import { FormError, SelectField, TextField } from '../../components/field.tsx';
import { useSubmit } from '../../components/submit.ts';
import { ROLE_OPTIONS } from './roles.ts';

export function InviteForm(p: { api: ConsoleApi; onInvited: (email: string, invite: Invite) => void }) {
  const [email, setEmail] = useState('');
  const [role, setRole] = useState<Role>('member');
  const submit = useSubmit(['email', 'role']);
  const onSubmit = async (e: Event) => {
    e.preventDefault();
    await submit.run(async () => {
      const made = await p.api.inviteNewMember({ email: email.trim(), role });
      setEmail('');
      setRole('member');
      p.onInvited(made.member.email, made);
    });
  };
  return (
    <form onSubmit={(e) => void onSubmit(e)} noValidate aria-labelledby="invite-heading">
      <h2 id="invite-heading">Invite member</h2>
      <TextField label="Email" type="email" autoComplete="off" value={email} onValue={setEmail} error={submit.fields.email} />
      <SelectField label="Role" value={role} options={ROLE_OPTIONS} onValue={setRole} error={submit.fields.role} />
      <FormError message={submit.error} />
      <button type="submit" class="primary" disabled={submit.busy}>
        Create invite link
      </button>
    </form>
  );
}
