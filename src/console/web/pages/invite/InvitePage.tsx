// The invite link: /console/invite#token=... (a fragment, so the token never reaches a server log
// or a Referer). Setting the password signs the member in.
import { useState } from 'preact/hooks';
import { ConsoleError, type ConsoleApi, type Session } from '../../api.ts';
import { FormError, TextField } from '../../components/field.tsx';
import { useSubmit } from '../../components/submit.ts';
import { PageTitle } from '../../components/page.tsx';

/** Reads the token once and takes it out of the address bar (and so out of the history). */
function takeToken(): string {
  const token = new URLSearchParams(location.hash.replace(/^#/, '')).get('token') ?? '';
  if (location.hash) history.replaceState(null, '', location.pathname);
  return token;
}

export function InvitePage(p: { api: ConsoleApi; onSignedIn: (s: Session) => void }) {
  const [token] = useState(takeToken);
  const [password, setPassword] = useState('');
  const [confirm, setConfirm] = useState('');
  const [invalid, setInvalid] = useState(false);
  const submit = useSubmit(['password']);

  const onSubmit = async (e: Event) => {
    e.preventDefault();
    if (password !== confirm) {
      submit.fail({ confirm: 'does not match the password' });
      return;
    }
    let session: Session | null = null;
    const ok = await submit.run(async () => {
      try {
        session = await p.api.acceptInvite(token, password);
      } catch (err) {
        if (err instanceof ConsoleError && err.code === 'invite_invalid') setInvalid(true);
        throw err;
      }
    });
    if (ok && session) p.onSignedIn(session);
  };

  if (!token || invalid) {
    return (
      <main id="main" class="narrow">
        <PageTitle title="Invite link" heading="This invite link does not work" />
        <p>
          {token
            ? 'It has expired, was already used, or a newer link replaced it.'
            : 'The link is incomplete: open the whole link you were sent.'}{' '}
          Ask an owner or admin of your team for a new one; links work once, for 72 hours.
        </p>
        <p>
          <a href="/console/sign-in">Go to sign in</a>
        </p>
      </main>
    );
  }
  return (
    <main id="main" class="narrow">
      <PageTitle title="Set your password" heading="Set your password" />
      <p>Choose the password you will sign in with. This link works once.</p>
      <form onSubmit={(e) => void onSubmit(e)} noValidate>
        <TextField
          label="Password"
          type="password"
          autoComplete="new-password"
          hint="At least 12 characters, and hard to guess: four or more random words will do."
          value={password}
          onValue={setPassword}
          error={submit.fields.password}
        />
        <TextField
          label="Confirm password"
          type="password"
          autoComplete="new-password"
          value={confirm}
          onValue={setConfirm}
          error={submit.fields.confirm}
        />
        <FormError message={submit.error} />
        <button type="submit" class="primary" disabled={submit.busy}>
          Set password and sign in
        </button>
      </form>
    </main>
  );
}
