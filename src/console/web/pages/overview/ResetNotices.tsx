// The reset links made for the signed-in member in the last 30 days (links made when they already
// had a password): who made each, and whether it was used, so a reset nobody asked for is seen.
import type { ConsoleApi, ResetNotice } from '../../api.ts';
import { when } from '../../components/format.ts';
import { useLoad } from '../../components/load.tsx';

function state(n: ResetNotice): string {
  if (n.used_at) return `used ${when(n.used_at)} to set a new password`;
  if (n.revoked_at) return `revoked or replaced ${when(n.revoked_at)}, never used`;
  if (Date.parse(n.expires_at) <= Date.now()) return `expired ${when(n.expires_at)}, never used`;
  return `not used yet; it works until ${when(n.expires_at)}`;
}

export function ResetNotices(p: { api: ConsoleApi }) {
  // Failing to load the notices must not hide the overview: they are simply left out.
  const [loaded] = useLoad(() => p.api.passwordResets());
  if (loaded.state !== 'ready' || loaded.value.data.length === 0) return null;
  return (
    <section class="notice" aria-labelledby="resets-heading">
      <h2 id="resets-heading">Password reset links were made for you</h2>
      <ul>
        {loaded.value.data.map((n) => (
          <li key={n.created_at}>
            {when(n.created_at)}, by {n.created_by ? n.created_by.email : 'an operator'}: {state(n)}.
          </li>
        ))}
      </ul>
      <p>Whoever holds such a link can set your password. If you did not ask for one, tell an owner of your team.</p>
    </section>
  );
}
