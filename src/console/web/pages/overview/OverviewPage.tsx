// Overview: the team, its plan, the Sparks it has and this hour's runs against its ceiling, and
// the password reset links made for the member lately.
import type { ConsoleApi, Session } from '../../api.ts';
import { PLAN_NAMES, ROLE_NAMES } from '../../components/format.ts';
import { Loading, useLoad } from '../../components/load.tsx';
import { PageTitle } from '../../components/page.tsx';
import { ResetNotices } from './ResetNotices.tsx';

const number = new Intl.NumberFormat();

export function OverviewPage(p: { api: ConsoleApi; session: Session }) {
  const [loaded] = useLoad(() => p.api.overview());
  return (
    <>
      <PageTitle title="Overview" />
      <ResetNotices api={p.api} />
      <Loading loaded={loaded} />
      {loaded.state === 'ready' ? (
        <dl class="stats">
          <div>
            <dt>Team</dt>
            <dd>{loaded.value.team.name}</dd>
          </div>
          <div>
            <dt>Plan</dt>
            <dd>{PLAN_NAMES[loaded.value.team.plan] ?? loaded.value.team.plan}</dd>
          </div>
          <div>
            <dt>Sparks available</dt>
            <dd>{number.format(loaded.value.sparks_available)}</dd>
          </div>
          <div>
            <dt>Runs this hour</dt>
            <dd>
              {number.format(loaded.value.runs_this_hour)} of {number.format(loaded.value.runs_per_hour)}
              <progress
                max={loaded.value.runs_per_hour}
                value={Math.min(loaded.value.runs_this_hour, loaded.value.runs_per_hour)}
                aria-label="Runs this hour against the hourly ceiling"
              />
            </dd>
          </div>
        </dl>
      ) : null}
      <p class="hint">
        You are signed in as {p.session.member.email} ({ROLE_NAMES[p.session.member.role] ?? p.session.member.role}). The hourly
        ceiling is shared by every key of the team and by the console.
      </p>
    </>
  );
}
