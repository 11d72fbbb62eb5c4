// The benchmark report generator (bench/lib): synthetic results in, docs markdown and SVG charts
// out. No benchmark runs here and no timing is measured; the numbers are made up so that every
// verdict (PASS, FAIL, n/a, no target) and every bench status (ran, failed, missing, not run) shows.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { conditionsBetween, cpuCounters, type CpuCounters, type MachineInfo } from '../bench/lib/machine.js';
import { renderMarkdown, writeReport, type BenchOutcome, type ReportInput } from '../bench/lib/markdown.js';
import { compactSamples, figure, figuresTable, loadNote, type BenchResult, type LoadNote } from '../bench/lib/report.js';
import { benchEnv, BENCHES, readResult } from '../bench/lib/suite.js';
import { curve, renderChart, xAxis, type Chart } from '../bench/lib/svg.js';
import { settledFrom } from '../bench/lib/http-instructions.js';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'toolrun-bench-report-'));
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

const load = (x: number): LoadNote => ({ loadavg: [x, x, x], cpuPressure10s: null, text: `load average ${x}, ${x}, ${x} on 2 CPUs` });

const MACHINE: MachineInfo = {
  cpuModel: 'Test CPU 9000',
  cores: 2,
  memoryBytes: 4 * 1024 ** 3,
  os: 'Test Linux 1',
  kernel: 'Linux 6.1 x64',
  node: 'v20.99.0',
  postgres: '18.1 (embedded)',
  ffmpeg: 'ffmpeg version 4.1',
};

/** 1..n ms, so percentiles are known exactly. */
const ramp = (n: number, scale = 1) => Array.from({ length: n }, (_, i) => (i + 1) * scale);

function httpResult(): BenchResult {
  return {
    benchmark: 'http',
    title: 'HTTP synthetic',
    at: '2030-01-01T00:00:00.000Z',
    machine: { node: 'v20.99.0', cpus: 2, platform: 'linux-x64', memory_bytes: 4 * 1024 ** 3, cpu: 'Synthetic CPU (family 1 model 2 stepping 3)' },
    load: { before: load(0.5), after: load(1.5) },
    database: { server: 'embedded', version: '18.1' },
    settings: {},
    figures: [
      figure({ name: 'me_throughput', figure: 'GET /v1/me throughput', unit: 'req/s', value: 2000, baseline: { label: 'bare', value: 5000 },
        target: { on: 'ratio', op: '>=', limit: 0.5 } }),
      figure({ name: 'latency_p50', figure: 'latency p50', unit: 'ms', value: 12.5, baseline: { label: 'NOTIFY', value: 2.5 },
        target: { on: 'value', op: '<', limit: 20 } }),
      figure({ name: 'short_job', figure: 'short job overhead', unit: 's', value: 1.5, baseline: { label: 'direct', value: 1 },
        target: { on: 'ratio', op: '<', limit: 1.1 }, notApplicable: 'the direct job took under 2 s' }),
      figure({ name: 'failed_requests', figure: 'throughput with errors', unit: 'req/s', value: 4000, baseline: { label: 'bare', value: 5000 },
        target: { on: 'ratio', op: '>=', limit: 0.5 }, invalid: 'some requests failed' }),
      figure({ name: 'context', figure: 'diag | with a pipe', unit: 'MiB', value: 42, baseline: null }),
      figure({ name: 'far', figure: 'far from its floor', unit: 'ms', value: 252, baseline: { label: 'NOTIFY', value: 0.322 } }),
    ],
    charts: [
      {
        id: 'latency',
        title: 'Latency <synthetic> & co',
        unit: 'ms',
        series: [
          { label: 'measured', role: 'measured', samples: ramp(100) },
          { label: 'bare', role: 'baseline', percentiles: [{ p: 0, value: 1 }, { p: 50, value: 2 }, { p: 99, value: 4 }, { p: 100, value: 5 }] },
        ],
      },
    ],
    notes: ['A note about the baseline.'],
    details: { anything: true },
  };
}

function outcomes(): BenchOutcome[] {
  return [
    { name: 'http', title: 'HTTP', script: 'bench/http.ts', status: 'ok', result: httpResult(), exitCode: 1, seconds: 75, reason: null },
    { name: 'runs', title: 'Runs', script: 'bench/runs.ts', status: 'failed', result: null, exitCode: 1, seconds: 3, reason: 'no results file; end of its output:\nError: boom' },
    { name: 'keys', title: 'Keys', script: 'bench/keys.ts', status: 'missing', result: null, exitCode: null, seconds: null, reason: null },
    { name: 'tools', title: 'Tools', script: 'bench/tools.ts', status: 'skipped', result: null, exitCode: null, seconds: null, reason: 'not selected (--only http)' },
  ];
}

const input = (): ReportInput => ({
  generatedAt: '2030-01-01T00:00:00.000Z',
  command: 'npm run bench -- --quick',
  quick: true,
  machine: MACHINE,
  load: { before: load(0.25), after: load(1.75) },
  benches: outcomes(),
});

/** Cells of a markdown table row, split on pipes that are not escaped. */
const cells = (line: string) => line.slice(2, -2).split(/(?<!\\) \| /);

/**
 * A strict-enough XML well-formedness check for the SVG we write: every tag closes in order,
 * attributes are quoted, text holds no raw '<' or '&' outside entities, one root element.
 */
function checkXml(xml: string): { elements: Map<string, number> } {
  const elements = new Map<string, number>();
  const stack: string[] = [];
  const tag = /<(\/?)([A-Za-z][\w:.-]*)([^<>]*?)(\/?)>/g;
  let last = 0;
  let roots = 0;
  const escaped = (t: string) => {
    assert.ok(!/[<>]/.test(t), `stray angle bracket: ${JSON.stringify(t.slice(0, 80))}`);
    assert.ok(!/&(?!(amp|lt|gt|quot|apos|#\d+);)/.test(t), `bare ampersand: ${JSON.stringify(t.slice(0, 80))}`);
  };
  const text = (t: string) => {
    escaped(t);
    if (!stack.length) assert.equal(t.trim(), '', 'text outside the root element');
  };
  for (let m = tag.exec(xml); m; m = tag.exec(xml)) {
    text(xml.slice(last, m.index));
    last = tag.lastIndex;
    const [, close, name = '', attrs = '', selfClose] = m;
    if (close) {
      assert.equal(stack.pop(), name, `</${name}> closes the wrong element`);
      continue;
    }
    assert.match(attrs, /^(\s+[\w:-]+="[^"<]*")*\s*$/, `<${name}> has malformed attributes: ${attrs}`);
    for (const v of attrs.matchAll(/="([^"]*)"/g)) escaped(v[1] ?? '');
    if (!stack.length) roots++;
    elements.set(name, (elements.get(name) ?? 0) + 1);
    if (!selfClose) stack.push(name);
  }
  text(xml.slice(last));
  assert.deepEqual(stack, [], 'unclosed elements');
  assert.equal(roots, 1, 'exactly one root element');
  return { elements };
}

describe('benchmark report', () => {
  test('figure() computes the ratio against the same-run baseline and the verdict from the target', () => {
    const ratio = figure({ name: 'a', figure: 'a', unit: 'req/s', value: 3000, baseline: { label: 'bare', value: 4000 }, target: { on: 'ratio', op: '>=', limit: 0.5 } });
    assert.equal(ratio.ratio, 0.75);
    assert.equal(ratio.pass, true);
    const low = figure({ name: 'b', figure: 'b', unit: 'req/s', value: 1999, baseline: { label: 'bare', value: 4000 }, target: { on: 'ratio', op: '>=', limit: 0.5 } });
    assert.equal(low.pass, false);
    const edge = figure({ name: 'c', figure: 'c', unit: 'ms', value: 20, target: { on: 'value', op: '<', limit: 20 } });
    assert.equal(edge.pass, false, '20 ms is not under 20 ms');
    assert.equal(edge.ratio, null);
    const noBaseline = figure({ name: 'd', figure: 'd', unit: 'x', value: 1, baseline: { label: 'zero', value: 0 }, target: { on: 'ratio', op: '<', limit: 1.1 } });
    assert.equal(noBaseline.ratio, null);
    assert.equal(noBaseline.pass, false, 'a ratio target without a usable baseline fails');
    const nan = figure({ name: 'e', figure: 'e', unit: 'ms', value: Number.NaN, target: { on: 'value', op: '<', limit: 50 } });
    assert.equal(nan.pass, false, 'a figure that was not measured fails its target');
    const info = figure({ name: 'f', figure: 'f', unit: 'ms', value: 3 });
    assert.equal(info.pass, null);
    assert.equal(info.target, null);
  });

  test('the markdown has the machine, a summary and one table per benchmark with ratio, target and PASS/FAIL', () => {
    const md = renderMarkdown(input());
    const lines = md.split('\n');
    assert.ok(md.startsWith('# Benchmarks\n'));
    assert.match(md, /Generated by `npm run bench -- --quick` on 2030-01-01T00:00:00.000Z/);
    assert.match(md, /\*\*Quick run\*\*/);
    for (const row of [
      '| CPU | Test CPU 9000, 2 cores available |',
      '| Memory | 4.0 GiB |',
      '| OS | Test Linux 1 (Linux 6.1 x64) |',
      '| Node.js | v20.99.0 |',
      '| PostgreSQL | 18.1 (embedded) |',
      '| ffmpeg | ffmpeg version 4.1 |',
      '| Load before | load average 0.25, 0.25, 0.25 on 2 CPUs |',
      '| Load after | load average 1.75, 1.75, 1.75 on 2 CPUs |',
      '| Date | 2030-01-01T00:00:00.000Z |',
    ]) assert.ok(lines.includes(row), `machine row missing: ${row}`);

    // Summary: figures, PASS and FAIL counted per benchmark; each status named.
    assert.ok(lines.includes('| [http](#bench-http) | ran | 6 | 1 | 2 | 1 min 15 s |'));
    assert.ok(lines.includes('| [runs](#bench-runs) | **failed** (exit code 1) | 0 | 0 | 0 | 3 s |'));
    assert.ok(lines.includes('| [keys](#bench-keys) | missing | 0 | 0 | 0 | - |'));
    assert.ok(lines.includes('| [tools](#bench-tools) | not run | 0 | 0 | 0 | - |'));
    assert.ok(lines.includes('1 figures PASS, 2 FAIL; failed: runs; missing: keys; not run: tools.'));

    // The figure rows, exactly.
    assert.ok(lines.includes('| GET /v1/me throughput | 2000 req/s | 5000 req/s (bare) | 0.400 | ratio ≥ 0.5 | **FAIL** |'));
    assert.ok(lines.includes('| latency p50 | 12.5 ms | 2.50 ms (NOTIFY) | 5.000 | < 20 ms | **PASS** |'));
    assert.ok(lines.includes('| short job overhead | 1.50 s | 1.00 s (direct) | 1.500 | ratio < 1.1 | n/a (the direct job took under 2 s) |'));
    assert.ok(lines.includes('| throughput with errors | 4000 req/s | 5000 req/s (bare) | 0.800 | ratio ≥ 0.5 | **FAIL** (some requests failed) |'));
    assert.ok(lines.includes('| diag \\| with a pipe | 42.0 MiB | - | - | - | - |'));
    assert.ok(lines.includes('| far from its floor | 252 ms | 0.322 ms (NOTIFY) | 783 | - | - |'));

    // Every table row has as many cells as its header.
    let width = 0;
    for (const l of lines) {
      if (!l.startsWith('| ')) {
        width = 0;
        continue;
      }
      if (!width) width = cells(l).length;
      else if (!l.startsWith('|---')) assert.equal(cells(l).length, width, `row with the wrong number of cells: ${l}`);
    }

    // Sections: the chart linked relatively, notes, and each bench that produced nothing says why.
    assert.ok(lines.includes('![Latency <synthetic> & co](benchmarks/http-latency.svg)'));
    assert.ok(lines.includes('- A note about the baseline.'));
    // Each section names the CPU its result was measured on.
    assert.ok(md.includes('`bench/http.ts` in 1 min 15 s on Synthetic CPU (family 1 model 2 stepping 3), 2 cores; database: embedded'), md);
    assert.ok(!md.includes('exited with code'), 'exit code 1 is explained by the FAILs');
    const clean = renderMarkdown({ ...input(), benches: [{ ...outcomes()[0]!, exitCode: 3, result: { ...httpResult(), figures: [httpResult().figures[1]!] } }] });
    assert.ok(clean.includes('The benchmark exited with code 3 although no figure failed; see its output.'));
    const runs = md.slice(md.indexOf('## runs: Runs'), md.indexOf('## keys'));
    assert.match(runs, /`bench\/runs.ts` failed in 3 s with exit code 1 and wrote no results\./);
    assert.match(runs, /```text\nno results file; end of its output:\nError: boom\n```/);
    assert.match(md, /## keys: Keys\n\nNot run: `bench\/keys.ts` does not exist in this checkout\./);
    assert.match(md, /## tools: Tools\n\nNot run: not selected \(--only http\)\./);
  });

  test('writeReport writes the page and one SVG per chart, and removes charts it no longer links', () => {
    const page = path.join(tmp, 'docs', 'benchmarks.md');
    fs.mkdirSync(path.join(tmp, 'docs', 'benchmarks'), { recursive: true });
    const stale = path.join(tmp, 'docs', 'benchmarks', 'old-chart.svg');
    fs.writeFileSync(stale, '<svg/>');
    const out = writeReport(input(), page);
    assert.deepEqual(out.charts, [path.join(tmp, 'docs', 'benchmarks', 'http-latency.svg')]);
    assert.equal(fs.readFileSync(page, 'utf8'), renderMarkdown(input()));
    assert.equal(fs.existsSync(stale), false);
    assert.deepEqual(fs.readdirSync(path.join(tmp, 'docs', 'benchmarks')), ['http-latency.svg']);
    checkXml(fs.readFileSync(out.charts[0] ?? '', 'utf8'));
  });

  test('a chart is well-formed SVG with a line per series, a point per sample, axes and a legend', () => {
    const chart = httpResult().charts[0] as Chart;
    const svg = renderChart(chart);
    const { elements } = checkXml(svg);
    assert.ok(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"'));
    assert.equal(elements.get('polyline'), 2, 'one line per series');
    const polylines = [...svg.matchAll(/<polyline [^>]*points="([^"]*)"/g)].map((m) => (m[1] ?? '').split(' '));
    // The baseline (4 percentiles joined, 4 dots) is drawn first, then the 100 samples as a
    // staircase (two corners per sample, no dots above 40 points).
    assert.deepEqual(polylines.map((p) => p.length), [4, 200]);
    assert.equal(elements.get('circle'), 4);
    for (const p of polylines.flat()) assert.match(p, /^\d+(\.\d)?,\d+(\.\d)?$/);
    assert.match(svg, /stroke-dasharray="6 4" points=/, 'the baseline is dashed');
    assert.match(svg, /<title>Latency &lt;synthetic&gt; &amp; co<\/title>/);
    // The 100 samples are 1..100 ms: p50 50, p99 99.
    assert.match(svg, />measured \(n=100, p50 50 ms, p99 99 ms\)</);
    assert.match(svg, />baseline: bare \(p50 2 ms, p99 4 ms\)</);
    assert.match(svg, />ms \(log scale\)</, 'values from 1 to 100 ms span 100x, so the axis is logarithmic');
  });

  test('samples are thinned to evenly spaced ranks, and the axis is linear when the spread is small', () => {
    const many = ramp(5000, 0.5);
    const pts = curve({ label: 'x', role: 'measured', samples: many });
    assert.equal(pts.length, 200);
    assert.deepEqual(pts[0], { p: 100 / 5000, value: 0.5 });
    assert.deepEqual(pts.at(-1), { p: 100, value: 2500 });
    for (let i = 1; i < pts.length; i++) assert.ok((pts[i]?.value ?? 0) >= (pts[i - 1]?.value ?? 0), 'ascending');
    const svg = renderChart({ id: 'x', title: 'many', unit: 's', series: [{ label: 'a', role: 'measured', samples: many }] });
    assert.equal(checkXml(svg).elements.get('circle') ?? 0, 0);
    assert.deepEqual(xAxis([2.9, 3.1, 3.3]), { log: false, min: 0, max: 4, ticks: [0, 1, 2, 3, 4] });
    const log = xAxis([2, 900]);
    assert.equal(log.log, true);
    assert.equal(log.min, 2);
    assert.equal(log.max, 1000);
    assert.deepEqual(log.ticks, [2, 5, 10, 20, 50, 100, 200, 500, 1000]);
    assert.deepEqual(xAxis([0, 3, 70]), { log: true, min: 2, max: 100, ticks: [2, 5, 10, 20, 50, 100] }, 'a zero does not force a linear axis');
    assert.deepEqual(xAxis([0.5, 40000]).ticks, [0.1, 1, 10, 100, 1000, 10000, 100000], 'over three decades, one tick per decade');
    assert.equal(xAxis([-1, 3, 70]).log, false);
    const compact = compactSamples([5, 1, Number.NaN, 3, 2, 4], 3);
    assert.deepEqual(compact, [1, 3, 5]);
  });

  test('a series without data is listed in the legend but draws nothing', () => {
    const svg = renderChart({ id: 'e', title: 'empty', unit: 'ms', series: [{ label: 'none', role: 'measured', samples: [] }, { label: 'one', role: 'baseline', samples: [7] }] });
    const { elements } = checkXml(svg);
    assert.equal(elements.get('polyline'), 1);
    assert.equal(elements.get('circle'), 1);
    assert.match(svg, />none \(no data\)</);
    // One run is a vertical step from 0% to 100% at its value.
    const [x0, y0, x1, y1] = (/points="([\d.]+),([\d.]+) ([\d.]+),([\d.]+)"/.exec(svg) ?? []).slice(1).map(Number);
    assert.equal(x0, x1);
    assert.ok(y0 !== undefined && y1 !== undefined && y0 > y1, 'rises from the bottom to the top');
  });

  test('results files are read back in the common shape, NaN included, and other shapes are refused with a reason', () => {
    const good = path.join(tmp, 'http.json');
    const r = httpResult();
    r.figures.push(figure({ name: 'nan', figure: 'not measured', unit: 'ms', value: Number.NaN, target: { on: 'value', op: '<', limit: 50 } }));
    fs.writeFileSync(good, JSON.stringify(r));
    const read = readResult(good);
    assert.ok('result' in read, JSON.stringify(read));
    assert.equal(read.result.figures.length, 7);
    assert.deepEqual(read.result.figures[0], r.figures[0]);
    const nan = read.result.figures[6];
    assert.ok(nan && Number.isNaN(nan.value));
    assert.equal(nan.pass, false);
    assert.deepEqual(read.result.charts, r.charts);
    assert.equal(renderMarkdown({ ...input(), benches: [{ ...outcomes()[0]!, result: read.result }] }).includes('| not measured | - | - | - | < 50 ms | **FAIL** |'), true);

    const legacy = path.join(tmp, 'legacy.json');
    fs.writeFileSync(legacy, JSON.stringify({ benchmark: 'keys', ratio: { value: 1, pass: true } }));
    assert.deepEqual(readResult(legacy), { error: 'legacy.json has no "figures" array (not the BenchResult shape of bench/lib/report.ts)' });
    const broken = path.join(tmp, 'broken.json');
    fs.writeFileSync(broken, '{"figures": [');
    const err = readResult(broken);
    assert.ok('error' in err && err.error.startsWith('broken.json is not readable JSON'));
    const empty = path.join(tmp, 'empty.json');
    fs.writeFileSync(empty, JSON.stringify({ figures: [{ nope: 1 }] }));
    assert.deepEqual(readResult(empty), { error: 'empty.json has no readable figure' });
  });

  test('a figure with per-round ratios reports their spread in the report, the console and the results file', () => {
    const f = figure({ name: 'up', figure: 'upload', unit: 'MB/s', value: 58, baseline: { label: 'write + MD5', value: 100 },
      target: { on: 'ratio', op: '>=', limit: 0.5 }, roundRatios: [0.61, 0.55, 0.58, 0.6, 0.57] });
    assert.deepEqual(f.spread, { of: 'ratio', n: 5, min: 0.55, q1: 0.57, median: 0.58, q3: 0.6, max: 0.61 });
    const v = figure({ name: 'fixed', figure: 'fixed cost', unit: 'ms', value: 37, roundValues: [36, 37, 104] });
    assert.equal(v.spread?.of, 'value');
    assert.equal(figure({ name: 'one', figure: 'one round', unit: 'ms', value: 1, roundValues: [1] }).spread, undefined, 'one round has no spread');

    // Samples that are not rounds say what they are, through the results file too.
    const c = figure({ name: 'gain', figure: 'gain', unit: 'dB', value: 1.2, roundValues: [0.5, 1.2, 2], spreadOver: 'clips' });
    assert.equal(c.spread?.over, 'clips');

    const r = { ...httpResult(), figures: [f, v, c] };
    const md = renderMarkdown({ ...input(), benches: [{ ...outcomes()[0]!, result: r }] });
    assert.ok(md.includes('| upload | 58.0 MB/s | 100 MB/s (write + MD5) | 0.580 (0.550-0.610 over 5 rounds, middle half 0.570-0.600) | ratio ≥ 0.5 | **PASS** |'), md);
    assert.ok(md.includes('| fixed cost | 37.0 ms (36.0-104 over 3 rounds) | - | - |'), md);
    assert.ok(md.includes('| gain | 1.20 dB (0.500-2.00 over 3 clips) |'), md);
    assert.match(figuresTable([f]), /0\.580 \(0\.550-0\.610 over 5 rounds/);

    const file = path.join(tmp, 'spread.json');
    fs.writeFileSync(file, JSON.stringify(r));
    const read = readResult(file);
    assert.ok('result' in read);
    assert.deepEqual(read.result.figures, r.figures);
  });

  test('each section reports steal time and CPU pressure between its two load notes', () => {
    const at = (ms: number, steal: number, total: number, psi: number | null): CpuCounters => ({ at: ms, stealTicks: steal, totalTicks: total, pressureSomeUs: psi });
    // 10 s; 2000 ticks of which 100 stolen; some task waited 2.5 s.
    assert.deepEqual(conditionsBetween(at(1_000, 50, 10_000, 7_000_000), at(11_000, 150, 12_000, 9_500_000)), { seconds: 10, stealPct: 5, cpuPressurePct: 25 });
    assert.equal(conditionsBetween(at(1_000, 0, 1, null), at(2_000, 0, 2, null))?.cpuPressurePct, null);
    assert.equal(conditionsBetween(null, at(2_000, 0, 2, null)), null);

    const withCounters = (note: LoadNote, c: CpuCounters): LoadNote => ({ ...note, counters: c });
    const r = { ...httpResult(), load: { before: withCounters(load(0.5), at(0, 0, 10_000, 0)), after: withCounters(load(1.5), at(60_000, 240, 22_000, 30_000_000)) } };
    const md = renderMarkdown({ ...input(), benches: [{ ...outcomes()[0]!, result: r }] });
    assert.ok(md.includes('over the 60 s measured: steal 2.0% of CPU time, some task waited for a CPU 50.0% of the time (PSI)'), md);
    // Results written before the counters existed say so instead of inventing a figure.
    const old = renderMarkdown({ ...input(), benches: [{ ...outcomes()[0]!, result: httpResult() }] });
    assert.ok(old.includes('machine conditions not recorded'));
    const file = path.join(tmp, 'conditions.json');
    fs.writeFileSync(file, JSON.stringify(r));
    const read = readResult(file);
    assert.ok('result' in read);
    assert.deepEqual(read.result.load, r.load);
  });

  test('the counters come from this machine\'s /proc: ticks move forward, steal within them', () => {
    const a = cpuCounters();
    const note = loadNote();
    assert.ok(a && note.counters, 'Linux has /proc/stat');
    assert.ok(note.counters.totalTicks >= a.totalTicks && a.totalTicks > 0);
    assert.ok(a.stealTicks >= 0 && a.stealTicks <= a.totalTicks);
    if (fs.existsSync('/proc/pressure/cpu')) assert.equal(typeof a.pressureSomeUs, 'number');
  });

  test('--quick adds each benchmark\'s short settings without overriding the environment', () => {
    const http = BENCHES.find((b) => b.name === 'http');
    assert.ok(http);
    const env = benchEnv(http, true, { BENCH_ROUNDS: '2', PATH: '/bin' });
    assert.equal(env.BENCH_QUICK, '1');
    assert.equal(env.BENCH_ROUNDS, '2', 'set by the user, kept');
    assert.equal(env.BENCH_DURATION, '3');
    assert.equal(env.PATH, '/bin');
    assert.deepEqual(benchEnv(http, false, { PATH: '/bin' }), { PATH: '/bin' });
    assert.deepEqual(
      BENCHES.map((b) => b.name),
      ['http', 'upload', 'upload-s3', 'runs', 'tools', 'quality', 'quality-learned', 'video-learned', 'upscale-speed', 'webhooks', 'keys', 'brandkit', 'render-isolation', 'password', 'scale', 'retention', 'containers'],
    );
    for (const b of BENCHES) assert.equal(b.script, `bench/${b.name}.ts`);
  });
});

describe('instruction-count series settle', () => {
  test('a series is settled once its last three windows agree within 1% and are not still falling, counted from the first of them', () => {
    assert.equal(settledFrom([124_000, 76_000]), null, 'fewer than three windows never settle');
    assert.equal(settledFrom([124_000, 76_000, 72_000, 70_500]), null, '76k..70.5k is 7.8% apart');
    assert.equal(settledFrom([124_000, 76_000, 70_400, 70_900, 70_200]), 2);
    assert.equal(settledFrom([70_000, 70_700, 70_000]), 0, 'exactly 1% apart is within');
    assert.equal(settledFrom([119_800, 118_800, 118_200, 117_700]), null, 'within 1% but still falling window after window');
    assert.equal(settledFrom([118_800, 118_200, 117_700, 117_900]), 1, 'falling, then not');
    assert.equal(settledFrom([70_000, 70_701, 70_000]), null, 'just over 1% is not');
    assert.equal(settledFrom([0, 0, 0]), null, 'an empty count is no steady cost');
  });
});
