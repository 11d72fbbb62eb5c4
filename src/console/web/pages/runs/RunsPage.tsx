// Runs: every run of the team, API and app, newest first, filtered by tool, status, key and member,
// a page at a time. While any row shown is still queued or running the page asks again every 2 s.
import { useEffect, useRef, useState } from 'preact/hooks';
import { RUN_STATUSES, type RunFilters, type RunList, type RunStatus } from '../../api-runs.ts';
import type { ConsoleApi } from '../../api.ts';
import { SelectField } from '../../components/field.tsx';
import { num, when } from '../../components/format.ts';
import { errorText } from '../../components/load.tsx';
import { PageTitle } from '../../components/page.tsx';
import { PagerControls, usePager } from '../../components/pager.tsx';
import { usePolling } from '../../components/poll.ts';
import { isFinal, RunStatusView, StartedByView, STATUS_NAMES } from '../../components/run-status.tsx';
import { BASE, Link } from '../../router.tsx';

type Filters = Required<Pick<RunFilters, 'tool_id' | 'api_key_id' | 'member_id'>> & { status: RunStatus | '' };
const NO_FILTERS: Filters = { tool_id: '', status: '', api_key_id: '', member_id: '' };
const ANY = { value: '' as const, label: 'Any' };

function Filters(p: { list: RunList | null; filters: Filters; onChange: (f: Filters) => void }) {
  const f = p.filters;
  const choices = p.list?.filters ?? { tools: [], keys: [], members: [] };
  const set = (change: Partial<Filters>) => p.onChange({ ...f, ...change });
  return (
    <form class="filters" aria-label="Filter runs" onSubmit={(e) => e.preventDefault()}>
      <SelectField label="Tool" value={f.tool_id} options={[ANY, ...choices.tools.map((t) => ({ value: t.id, label: t.name }))]} onValue={(v) => set({ tool_id: v })} />
      <SelectField
        label="Status"
        value={f.status}
        options={[ANY, ...RUN_STATUSES.map((s) => ({ value: s, label: STATUS_NAMES[s] }))]}
        onValue={(v) => set({ status: v })}
      />
      <SelectField label="Key" value={f.api_key_id} options={[ANY, ...choices.keys.map((k) => ({ value: k.id, label: k.name }))]} onValue={(v) => set({ api_key_id: v })} />
      <SelectField
        label="Member"
        value={f.member_id}
        options={[ANY, ...choices.members.map((m) => ({ value: m.id, label: m.email }))]}
        onValue={(v) => set({ member_id: v })}
      />
    </form>
  );
}

function RunTable(p: { list: RunList }) {
  if (p.list.data.length === 0) return <p>No runs match.</p>;
  return (
    <div class="table-wrap" tabIndex={0} role="region" aria-label="Runs">
      <table>
        <caption>Runs, newest first</caption>
        <thead>
          <tr>
            <th scope="col">Tool</th>
            <th scope="col">Status</th>
            <th scope="col">Cost (Sparks)</th>
            <th scope="col">Started by</th>
            <th scope="col">Created</th>
            <th scope="col">Finished</th>
          </tr>
        </thead>
        <tbody>
          {p.list.data.map((r) => (
            <tr key={r.id}>
              <th scope="row">
                <Link href={`${BASE}/runs/${r.id}`}>{r.tool_name}</Link>
                <span class="hint-inline mono"> {r.id.slice(0, 8)}</span>
              </th>
              <td>
                <RunStatusView run={r} label={`Progress of ${r.tool_name} run ${r.id.slice(0, 8)}`} />
              </td>
              <td>{num(r.cost_sparks)}</td>
              <td>
                <StartedByView by={r.started_by} />
              </td>
              <td>{when(r.created_at)}</td>
              <td>{when(r.finished_at, '—')}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

export function RunsPage(p: { api: ConsoleApi }) {
  const [filters, setFilters] = useState<Filters>(NO_FILTERS);
  const pager = usePager();
  const [list, setList] = useState<RunList | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [loading, setLoading] = useState(true);

  const load = () =>
    p.api.listRuns({
      tool_id: filters.tool_id || undefined,
      status: filters.status || undefined,
      api_key_id: filters.api_key_id || undefined,
      member_id: filters.member_id || undefined,
      cursor: pager.cursor,
    });

  useEffect(() => {
    let current = true;
    setLoading(true);
    load().then(
      (l) => current && (setList(l), setError(null), setLoading(false)),
      (err: unknown) => current && (setError(errorText(err)), setLoading(false)),
    );
    // A newer filter or page wins over an answer still on its way.
    return () => {
      current = false;
    };
  }, [filters, pager.cursor]);

  const working = Boolean(list?.data.some((r) => !isFinal(r.status)));
  // An answer for filters or a page no longer shown is dropped.
  const shown = useRef('');
  shown.current = JSON.stringify([filters, pager.cursor]);
  usePolling(working && !loading, async () => {
    const asked = shown.current;
    const fresh = await load();
    if (asked === shown.current) setList(fresh);
  });

  return (
    <>
      <PageTitle title="Runs" />
      <p>
        Every run of the team, started through the API with a key or here in the console (marked App). Open a run for its inputs,
        outputs and ledger entries.
      </p>
      <Filters
        list={list}
        filters={filters}
        onChange={(f) => {
          setFilters(f);
          pager.reset();
        }}
      />
      {loading && !list ? <p role="status">Loading…</p> : null}
      {error ? (
        <p role="alert" class="form-error">
          {error}
        </p>
      ) : null}
      {list ? (
        <>
          <RunTable list={list} />
          <PagerControls pager={pager} nextCursor={list.next_cursor} label="Runs" />
        </>
      ) : null}
    </>
  );
}
