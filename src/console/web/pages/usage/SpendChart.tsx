// Sparks spent per day over the last 30 days as an SVG bar chart drawn here (no chart library:
// the console's first page must stay small). The SVG is an image with a title and a summary; the
// same numbers are in a visually hidden table for screen readers and for copying.
import { useId } from 'preact/hooks';
import type { Usage } from '../../api-runs.ts';
import { num } from '../../components/format.ts';

const W = 720;
const H = 200;
const PAD = { top: 12, right: 8, bottom: 28, left: 44 };

const dayFormat = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric', timeZone: 'UTC' });
function day(date: string): string {
  const d = new Date(`${date}T00:00:00Z`);
  return Number.isNaN(d.getTime()) ? date : dayFormat.format(d);
}

/** A round top for the axis: 1, 2, 5 times a power of ten, at least the largest value. */
function niceMax(max: number): number {
  if (max <= 0) return 1;
  const p = 10 ** Math.floor(Math.log10(max));
  return ([1, 2, 5, 10].find((m) => m * p >= max) ?? 10) * p;
}

export function SpendChart(p: { days: Usage['days'] }) {
  const titleId = useId();
  const descId = useId();
  const days = p.days;
  const total = days.reduce((s, d) => s + d.sparks_spent, 0);
  const busiest = days.reduce<Usage['days'][number] | null>((b, d) => (!b || d.sparks_spent > b.sparks_spent ? d : b), null);
  const top = niceMax(Math.max(0, ...days.map((d) => d.sparks_spent)));
  const plotW = W - PAD.left - PAD.right;
  const plotH = H - PAD.top - PAD.bottom;
  const slot = plotW / Math.max(days.length, 1);
  const y = (v: number) => PAD.top + plotH - (Math.max(v, 0) / top) * plotH;
  const first = days[0];
  const last = days[days.length - 1];
  return (
    <figure class="chart">
      <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-labelledby={`${titleId} ${descId}`} preserveAspectRatio="xMidYMid meet">
        <title id={titleId}>Sparks spent per day, last 30 days</title>
        <desc id={descId}>
          {num(total)} Sparks spent in all
          {busiest && busiest.sparks_spent > 0 ? `; the most on ${day(busiest.date)}: ${num(busiest.sparks_spent)}` : ''}.
        </desc>
        {[0, 0.5, 1].map((f) => (
          <g key={f} class="grid">
            <line x1={PAD.left} x2={W - PAD.right} y1={y(top * f)} y2={y(top * f)} />
            <text x={PAD.left - 6} y={y(top * f) + 4} text-anchor="end">
              {num(top * f)}
            </text>
          </g>
        ))}
        {days.map((d, i) => {
          const h = PAD.top + plotH - y(d.sparks_spent);
          return (
            <rect key={d.date} class="bar" x={PAD.left + i * slot + slot * 0.15} y={y(d.sparks_spent)} width={slot * 0.7} height={h}>
              <title>
                {day(d.date)}: {num(d.sparks_spent)} Sparks, {num(d.runs)} runs
              </title>
            </rect>
          );
        })}
        {first ? (
          <text class="axis" x={PAD.left} y={H - 8}>
            {day(first.date)}
          </text>
        ) : null}
        {last ? (
          <text class="axis" x={W - PAD.right} y={H - 8} text-anchor="end">
            {day(last.date)}
          </text>
        ) : null}
      </svg>
      <table class="visually-hidden">
        <caption>Sparks spent and runs per day</caption>
        <thead>
          <tr>
            <th scope="col">Day</th>
            <th scope="col">Sparks spent</th>
            <th scope="col">Runs</th>
          </tr>
        </thead>
        <tbody>
          {days.map((d) => (
            <tr key={d.date}>
              <th scope="row">{day(d.date)}</th>
              <td>{num(d.sparks_spent)}</td>
              <td>{num(d.runs)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </figure>
  );
}

/** Runs per tool over the 30 days: a table whose cells carry a bar for the share of runs. */
export function ToolTable(p: { tools: Usage['tools'] }) {
  if (p.tools.length === 0) return <p>No runs in the last 30 days.</p>;
  const most = Math.max(...p.tools.map((t) => t.runs), 1);
  return (
    <div class="table-wrap" tabIndex={0} role="region" aria-label="Runs per tool">
      <table>
        <caption>Runs per tool, last 30 days</caption>
        <thead>
          <tr>
            <th scope="col">Tool</th>
            <th scope="col">Runs</th>
            <th scope="col">Sparks spent</th>
          </tr>
        </thead>
        <tbody>
          {p.tools.map((t) => (
            <tr key={t.tool_id}>
              <th scope="row">{t.tool_name}</th>
              <td>
                <span class="bar-cell">
                  <span class="bar-fill" aria-hidden="true" style={{ width: `${(t.runs / most) * 100}%` }} />
                  <span>{num(t.runs)}</span>
                </span>
              </td>
              <td>{num(t.sparks_spent)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
