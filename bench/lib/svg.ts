/**
 * Latency distributions as SVG: one cumulative distribution plot per chart (x = the measured
 * quantity, y = the share of samples at or below it), a line per series (a staircase for raw
 * samples), the baseline dashed
 * grey, axes with ticks and labels, and a legend with each series' n, p50 and p99. Written by
 * hand (a few hundred bytes of markup per series) so the report needs no chart package and no
 * browser; see docs/decisions.md.
 */

export interface ChartSeries {
  label: string;
  role: 'measured' | 'baseline';
  /** Raw values, in any order. */
  samples?: number[];
  /** Or a percentile curve (p in 0..100), e.g. what an HDR histogram reports. */
  percentiles?: { p: number; value: number }[];
}

export interface Chart {
  /** File name stem, unique within its benchmark: docs/benchmarks/<benchmark>-<id>.svg. */
  id: string;
  title: string;
  /** Unit of the x axis, e.g. "ms". */
  unit: string;
  series: ChartSeries[];
}

export interface Point {
  p: number;
  value: number;
}

const W = 720;
const PLOT = { left: 64, top: 40, width: 620, height: 280 };
const LEGEND_ROW = 20;
const COLORS = ['#1f6fb4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#8c564b'];
const BASELINE_COLOR = '#666666';
/** Series with at most this many points also get a dot per point (a few runs of a tool). */
const MARKERS_UP_TO = 40;

export function escapeXml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&apos;');
}

/**
 * The series as (percentile, value) points, ascending: the empirical CDF of raw samples (point i
 * of n at 100 * (i + 1) / n), thinned to `maxPoints` evenly spaced ranks (first and last kept).
 */
export function curve(s: ChartSeries, maxPoints = 200): Point[] {
  if (s.samples?.length) {
    const v = s.samples.filter(Number.isFinite).sort((a, b) => a - b);
    const n = v.length;
    const idx = n <= maxPoints ? v.map((_, i) => i) : Array.from({ length: maxPoints }, (_, k) => Math.round((k * (n - 1)) / (maxPoints - 1)));
    return idx.map((i) => ({ p: (100 * (i + 1)) / n, value: v[i] ?? 0 }));
  }
  return (s.percentiles ?? []).filter((q) => Number.isFinite(q.value) && Number.isFinite(q.p)).sort((a, b) => a.p - b.p || a.value - b.value);
}

/** The value at percentile p of a curve (the first point at or above p). */
export function curveAt(points: Point[], p: number): number {
  return (points.find((q) => q.p >= p) ?? points.at(-1))?.value ?? Number.NaN;
}

function niceStep(range: number, count: number): number {
  const raw = range / count;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const f = raw / mag;
  return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
}

export interface Axis {
  log: boolean;
  min: number;
  max: number;
  ticks: number[];
}

/**
 * Linear from 0 with about six round ticks, or logarithmic (ticks 1-2-5 per decade) when no
 * value is negative and the positive ones span 20x or more, so that a 2 ms median and a 900 ms
 * tail both show.
 */
export function xAxis(values: number[]): Axis {
  const finite = values.filter(Number.isFinite);
  const positive = finite.filter((v) => v > 0);
  // Zeros (a histogram's minimum at its 1 ms resolution) sit on the left edge of a log axis.
  const lo = positive.length ? Math.min(...positive) : 0;
  const hi = finite.length ? Math.max(...finite) : 1;
  if (lo > 0 && hi / lo >= 20 && finite.every((v) => v >= 0)) {
    const first = 10 ** Math.floor(Math.log10(lo));
    const last = 10 ** Math.ceil(Math.log10(hi));
    const steps = Math.log10(last / first) <= 3 ? [1, 2, 5] : [1];
    const candidates: number[] = [];
    for (let d = first; d <= last * 1.0001; d *= 10) for (const m of steps) candidates.push(Number((d * m).toPrecision(12)));
    // The axis runs from the round value at or below the smallest to the one at or above the largest.
    const min = candidates.filter((t) => t <= lo * 1.0001).at(-1) ?? first;
    const max = candidates.find((t) => t >= hi * 0.9999) ?? last;
    return { log: true, min, max, ticks: candidates.filter((t) => t >= min && t <= max) };
  }
  const top = hi > 0 ? hi : 1;
  const step = niceStep(top, 6);
  const max = Number((Math.ceil(top / step - 1e-9) * step).toPrecision(12));
  const ticks: number[] = [];
  for (let t = 0; t <= max + step / 2; t += step) ticks.push(Number(t.toPrecision(12)));
  return { log: false, min: 0, max, ticks };
}

function xPos(axis: Axis, v: number): number {
  const f = axis.log ? Math.log10(v / axis.min) / Math.log10(axis.max / axis.min) : (v - axis.min) / (axis.max - axis.min);
  return PLOT.left + Math.max(0, Math.min(1, f)) * PLOT.width;
}

const yPos = (p: number) => PLOT.top + PLOT.height * (1 - Math.max(0, Math.min(100, p)) / 100);
const r1 = (x: number) => Number(x.toFixed(1));

export function tickLabel(v: number): string {
  if (v === 0) return '0';
  const a = Math.abs(v);
  if (a >= 1e6) return `${Number((v / 1e6).toPrecision(3))}M`;
  if (a >= 1e4) return `${Number((v / 1e3).toPrecision(3))}k`;
  return String(Number(v.toPrecision(3)));
}

function summary(points: Point[], s: ChartSeries, unit: string): string {
  if (!points.length) return 'no data';
  const at = (p: number) => `${tickLabel(curveAt(points, p))} ${unit}`;
  const n = s.samples?.length ? `n=${s.samples.length}, ` : '';
  return `${n}p50 ${at(50)}, p99 ${at(99)}`;
}

/** The chart as a standalone SVG document. */
export function renderChart(chart: Chart): string {
  const curves = chart.series.map((s) => curve(s));
  const axis = xAxis(curves.flat().map((q) => q.value));
  const height = PLOT.top + PLOT.height + 56 + LEGEND_ROW * chart.series.length + 8;
  const out: string[] = [];
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${height}" viewBox="0 0 ${W} ${height}" font-family="sans-serif" font-size="12">`,
    `<title>${escapeXml(chart.title)}</title>`,
    `<rect x="0" y="0" width="${W}" height="${height}" fill="#ffffff"/>`,
    `<text x="${W / 2}" y="22" text-anchor="middle" font-size="14" font-weight="bold">${escapeXml(chart.title)}</text>`,
  );
  // Grid and y axis: share of samples at or below x.
  out.push('<g class="y-axis" stroke="#dddddd">');
  for (const p of [0, 25, 50, 75, 90, 99, 100]) {
    out.push(`<line x1="${PLOT.left}" y1="${r1(yPos(p))}" x2="${PLOT.left + PLOT.width}" y2="${r1(yPos(p))}"/>`);
  }
  out.push('</g><g class="y-labels" text-anchor="end">');
  for (const p of [0, 25, 50, 75, 100]) out.push(`<text x="${PLOT.left - 6}" y="${r1(yPos(p) + 4)}">${p}%</text>`);
  out.push('</g>');
  // x axis ticks and labels.
  out.push('<g class="x-axis" text-anchor="middle">');
  for (const t of axis.ticks) {
    const x = r1(xPos(axis, t));
    out.push(`<line x1="${x}" y1="${PLOT.top}" x2="${x}" y2="${PLOT.top + PLOT.height}" stroke="#eeeeee"/>`);
    out.push(`<text x="${x}" y="${PLOT.top + PLOT.height + 16}">${escapeXml(tickLabel(t))}</text>`);
  }
  out.push('</g>');
  out.push(
    `<rect x="${PLOT.left}" y="${PLOT.top}" width="${PLOT.width}" height="${PLOT.height}" fill="none" stroke="#333333"/>`,
    `<text x="${PLOT.left + PLOT.width / 2}" y="${PLOT.top + PLOT.height + 36}" text-anchor="middle">${escapeXml(chart.unit)}${axis.log ? ' (log scale)' : ''}</text>`,
    `<text transform="translate(16 ${PLOT.top + PLOT.height / 2}) rotate(-90)" text-anchor="middle">samples at or below x</text>`,
  );
  // Series: measured ones in colour, baselines dashed grey, drawn first so measured lines stay on top.
  const order = chart.series.map((s, i) => i).sort((a, b) => Number(chart.series[a]?.role === 'measured') - Number(chart.series[b]?.role === 'measured'));
  let colour = 0;
  const colours = chart.series.map((s) => (s.role === 'baseline' ? BASELINE_COLOR : (COLORS[colour++ % COLORS.length] ?? '#000000')));
  for (const i of order) {
    const s = chart.series[i];
    const pts = curves[i] ?? [];
    if (!s || !pts.length) continue;
    const dash = s.role === 'baseline' ? ' stroke-dasharray="6 4"' : '';
    const xy = (q: Point) => `${r1(xPos(axis, q.value))},${r1(yPos(q.p))}`;
    // Raw samples draw as the empirical CDF's staircase (rising at each sample, so a single run is
    // a vertical line); a percentile curve joins its points.
    const line = s.samples?.length ? pts.flatMap((q, k) => [xy({ p: pts[k - 1]?.p ?? 0, value: q.value }), xy(q)]) : pts.map(xy);
    out.push(`<g class="series ${s.role}" data-series="${i}">`);
    out.push(`<polyline fill="none" stroke="${colours[i]}" stroke-width="2"${dash} points="${line.join(' ')}"/>`);
    if (pts.length <= MARKERS_UP_TO) for (const c of pts.map(xy)) {
      const [cx, cy] = c.split(',');
      out.push(`<circle cx="${cx}" cy="${cy}" r="3" fill="${colours[i]}"/>`);
    }
    out.push('</g>');
  }
  // Legend under the x axis label.
  out.push('<g class="legend">');
  chart.series.forEach((s, i) => {
    const y = PLOT.top + PLOT.height + 56 + LEGEND_ROW * i;
    const dash = s.role === 'baseline' ? ' stroke-dasharray="6 4"' : '';
    out.push(`<line x1="${PLOT.left}" y1="${y - 4}" x2="${PLOT.left + 28}" y2="${y - 4}" stroke="${colours[i]}" stroke-width="2"${dash}/>`);
    const text = `${s.role === 'baseline' ? 'baseline: ' : ''}${s.label} (${summary(curves[i] ?? [], s, chart.unit)})`;
    out.push(`<text x="${PLOT.left + 36}" y="${y}">${escapeXml(text)}</text>`);
  });
  out.push('</g>', '</svg>');
  return out.join('\n') + '\n';
}
