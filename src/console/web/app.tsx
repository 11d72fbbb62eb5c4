// The console's shell: asks who is signed in, then shows the sign-in page or the signed-in layout
// (navigation, the page for the path, Sign out). The invite page works either way.
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { ConsoleError, createApi, type ConsoleApi, type Session } from './api.ts';
import { PLAN_NAMES, ROLE_NAMES } from './components/format.ts';
import { errorText } from './components/load.tsx';
import { PageTitle } from './components/page.tsx';
import { BASE, Link, navigate, usePath } from './router.tsx';
import { InvitePage } from './pages/invite/InvitePage.tsx';
import { KeysPage } from './pages/keys/KeysPage.tsx';
import { MembersPage } from './pages/members/MembersPage.tsx';
import { OverviewPage } from './pages/overview/OverviewPage.tsx';
import { PlaygroundPage } from './pages/playground/PlaygroundPage.tsx';
import { RunPage } from './pages/run/RunPage.tsx';
import { RunsPage } from './pages/runs/RunsPage.tsx';
import { SignInPage } from './pages/sign-in/SignInPage.tsx';
import { UsagePage } from './pages/usage/UsagePage.tsx';
import { WebhooksPage } from './pages/webhooks/WebhooksPage.tsx';

const NAV = [
  { href: BASE, label: 'Overview' },
  { href: `${BASE}/runs`, label: 'Runs' },
  { href: `${BASE}/playground`, label: 'Playground' },
  { href: `${BASE}/usage`, label: 'Usage' },
  { href: `${BASE}/keys`, label: 'API keys' },
  { href: `${BASE}/webhooks`, label: 'Webhooks' },
  { href: `${BASE}/members`, label: 'Members' },
];

/** undefined while asking; null when nobody is signed in. */
type SessionState = Session | null | undefined;

/** /console/runs/<uuid>: a run's own page. */
const RUN_PATH = new RegExp(`^${BASE}/runs/([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$`, 'i');

function Page(p: { path: string; api: ConsoleApi; session: Session }) {
  const runId = RUN_PATH.exec(p.path)?.[1];
  // Keyed by the id: another run's page starts from nothing, not from this one's state.
  if (runId) return <RunPage key={runId} api={p.api} runId={runId} />;
  switch (p.path) {
    case BASE:
      return <OverviewPage api={p.api} session={p.session} />;
    case `${BASE}/runs`:
      return <RunsPage api={p.api} />;
    case `${BASE}/playground`:
      return <PlaygroundPage api={p.api} />;
    case `${BASE}/usage`:
      return <UsagePage api={p.api} />;
    case `${BASE}/keys`:
      return <KeysPage api={p.api} />;
    case `${BASE}/webhooks`:
      return <WebhooksPage api={p.api} />;
    case `${BASE}/members`:
      return <MembersPage api={p.api} session={p.session} />;
    default:
      return (
        <>
          <PageTitle title="Page not found" />
          <p>
            There is no console page at {p.path}. <Link href={BASE}>Go to the overview</Link>.
          </p>
        </>
      );
  }
}

/** The nav entry a path belongs to: a run's page is under Runs. */
function current(path: string): string {
  return RUN_PATH.test(path) ? `${BASE}/runs` : path;
}

function Shell(p: { path: string; api: ConsoleApi; session: Session; onSignOut: () => void }) {
  const { member, team } = p.session;
  return (
    <>
      <a class="skip-link" href="#main">
        Skip to content
      </a>
      <header class="topbar">
        <span class="brand">Toolrun</span>
        <span class="team">
          {team.name} · {PLAN_NAMES[team.plan] ?? team.plan}
        </span>
        <nav aria-label="Console">
          <ul>
            {NAV.map((n) => (
              <li key={n.href}>
                <Link href={n.href} aria-current={current(p.path) === n.href ? 'page' : undefined}>
                  {n.label}
                </Link>
              </li>
            ))}
          </ul>
        </nav>
        <span class="who">
          {member.email} ({ROLE_NAMES[member.role] ?? member.role})
        </span>
        <button type="button" class="secondary small" onClick={p.onSignOut}>
          Sign out
        </button>
      </header>
      <main id="main">
        <Page path={p.path} api={p.api} session={p.session} />
      </main>
    </>
  );
}

export function App() {
  const path = usePath();
  const [session, setSession] = useState<SessionState>(undefined);
  const [failure, setFailure] = useState<string | null>(null);
  const api = useMemo(() => createApi({ onSignedOut: () => setSession(null) }), []);
  // The page asked for before signing in, shown after it.
  const wanted = useRef<string>(BASE);

  useEffect(() => {
    api.getSession().then(setSession, (err: unknown) => {
      if (err instanceof ConsoleError && err.code === 'session_required') setSession(null);
      else setFailure(errorText(err));
    });
  }, [api]);

  const signedIn = (s: Session) => {
    setSession(s);
    navigate(wanted.current, { replace: true });
    wanted.current = BASE;
  };
  const signOut = async () => {
    try {
      await api.signOut();
    } catch {
      // Already ended (expired, or removed): signed out either way.
    }
    setSession(null);
    navigate(`${BASE}/sign-in`, { replace: true });
  };

  if (path === `${BASE}/invite`) return <InvitePage api={api} onSignedIn={signedIn} />;
  if (failure)
    return (
      <main id="main" class="narrow">
        <PageTitle title="Console unavailable" />
        <p role="alert">{failure}</p>
      </main>
    );
  if (session === undefined)
    return (
      <main id="main" class="narrow">
        <p role="status">Loading…</p>
      </main>
    );
  if (session === null) {
    if (path !== `${BASE}/sign-in`) {
      wanted.current = path;
      history.replaceState(null, '', `${BASE}/sign-in`);
    }
    return <SignInPage api={api} onSignedIn={signedIn} />;
  }
  if (path === `${BASE}/sign-in`) {
    history.replaceState(null, '', BASE);
    return <Shell path={BASE} api={api} session={session} onSignOut={() => void signOut()} />;
  }
  return <Shell path={path} api={api} session={session} onSignOut={() => void signOut()} />;
}
