// Sign in with email and password. The service answers an unknown email and a wrong password
// alike, so the page cannot (and does not) say which was wrong.
import { useState } from 'preact/hooks';
import type { ConsoleApi, Session } from '../../api.ts';
import { FormError, TextField } from '../../components/field.tsx';
import { useSubmit } from '../../components/submit.ts';
import { PageTitle } from '../../components/page.tsx';

export function SignInPage(p: { api: ConsoleApi; onSignedIn: (s: Session) => void }) {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const submit = useSubmit(['email', 'password']);
  const onSubmit = async (e: Event) => {
    e.preventDefault();
    let session: Session | null = null;
    const ok = await submit.run(async () => {
      session = await p.api.signIn(email.trim(), password);
    });
    if (ok && session) p.onSignedIn(session);
  };
  return (
    <main id="main" class="narrow">
      <PageTitle title="Sign in" heading="Sign in to Toolrun" />
      <form onSubmit={(e) => void onSubmit(e)} noValidate>
        <TextField label="Email" type="email" autoComplete="username" value={email} onValue={setEmail} error={submit.fields.email} />
        <TextField
          label="Password"
          type="password"
          autoComplete="current-password"
          value={password}
          onValue={setPassword}
          error={submit.fields.password}
        />
        <FormError message={submit.error} />
        <button type="submit" class="primary" disabled={submit.busy}>
          Sign in
        </button>
      </form>
      <p class="hint">No password yet? Ask an owner or admin of your team for an invite link.</p>
    </main>
  );
}
