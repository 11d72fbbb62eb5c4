// Usage: the Sparks available, what the last 30 days spent (per day and per tool), and the ledger
// (grants, holds, charges, releases, refunds), newest first, filtered by kind, a page at a time.
import { useEffect, useState } from 'preact/hooks';
import { LEDGER_KINDS, type LedgerKind, type LedgerPage } from '../../api-runs.ts';
import type { ConsoleApi } from '../../api.ts';
import { SelectField } from '../../components/field.tsx';
import { num, readable, signed, when } from '../../components/format.ts';
import { errorText, Loading, useLoad } from '../../components/load.tsx';
import { PageTitle } from '../../components/page.tsx';
import { PagerControls, usePager } from '../../components/pager.tsx';
import { BASE, Link } from '../../router.tsx';
import { SpendChart, ToolTable } from './SpendChart.tsx';

const KIND_OPTIONS = [{ value: '' as const, label: 'All' }, ...LEDGER_KINDS.map((k) => ({ value: k, label: readable(k) }))];

function Ledger(p: { api: ConsoleApi }) {
  const [kind, setKind] = useState<LedgerKind | ''>('');
  const pager = usePager();
  const [page, setPage] = useState<LedgerPage | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    let current = true;
    p.api.ledger({ kind: kind || undefined, cursor: pager.cursor }).then(
      (l) => current && (setPage(l), setError(null)),
      (err: unknown) => current && setError(errorText(err)),
    );
    return () => {
      current = false;
    };
  }, [kind, pager.cursor]);
  return (
    <section aria-labelledby="ledger-heading">
      <h2 id="ledger-heading">Ledger</h2>
      <SelectField
        label="Kind"
        value={kind}
        options={KIND_OPTIONS}
        onValue={(k) => {
          setKind(k);
          pager.reset();
        }}
      />
      {error ? (
        <p role="alert" class="form-error">
          {error}
        </p>
      ) : null}
      {!page && !error ? <p role="status">Loading…</p> : null}
      {page && page.data.length === 0 ? <p>No ledger entries{kind ? ` of kind ${kind}` : ''}.</p> : null}
      {page && page.data.length > 0 ? (
        <div class="table-wrap" tabIndex={0} role="region" aria-label="Ledger entries">
          <table>
            <caption>Ledger entries, newest first (Sparks)</caption>
            <thead>
              <tr>
                <th scope="col">When</th>
                <th scope="col">Kind</th>
                <th scope="col">Amount</th>
                <th scope="col">Run</th>
                <th scope="col">Note</th>
              </tr>
            </thead>
            <tbody>
              {page.data.map((e) => (
                <tr key={e.id}>
                  <td>{when(e.created_at)}</td>
                  <th scope="row">{readable(e.kind)}</th>
                  <td class="amount">{signed(e.amount)}</td>
                  <td>
                    {e.run_id ? (
                      <Link href={`${BASE}/runs/${e.run_id}`}>
                        <span class="mono">{e.run_id.slice(0, 8)}</span>
                        <span class="visually-hidden"> (run {e.run_id})</span>
                      </Link>
                    ) : (
                      '—'
                    )}
                  </td>
                  <td>{e.note ?? ''}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
      {page ? <PagerControls pager={pager} nextCursor={page.next_cursor} label="Ledger" /> : null}
    </section>
  );
}

export function UsagePage(p: { api: ConsoleApi }) {
  const [loaded] = useLoad(() => p.api.usage());
  const usage = loaded.state === 'ready' ? loaded.value : null;
  const spent = usage ? usage.days.reduce((s, d) => s + d.sparks_spent, 0) : 0;
  const runs = usage ? usage.days.reduce((s, d) => s + d.runs, 0) : 0;
  return (
    <>
      <PageTitle title="Usage" />
      <Loading loaded={loaded} />
      {usage ? (
        <>
          <dl class="stats">
            <div>
              <dt>Sparks available</dt>
              <dd>{num(usage.sparks_available)}</dd>
            </div>
            <div>
              <dt>Sparks spent, last 30 days</dt>
              <dd>{num(spent)}</dd>
            </div>
            <div>
              <dt>Runs, last 30 days</dt>
              <dd>{num(runs)}</dd>
            </div>
          </dl>
          <h2>Sparks spent per day</h2>
          <p class="hint">Charges less refunds, by day (UTC) since {usage.since}.</p>
          <SpendChart days={usage.days} />
          <h2>Runs per tool</h2>
          <ToolTable tools={usage.tools} />
        </>
      ) : null}
      <Ledger api={p.api} />
    </>
  );
}
