/**
 * docs/benchmarks.md from the benchmarks' results: the machine, a summary, then per benchmark one
 * table (figure, value, same-run baseline, ratio, target, PASS/FAIL), its notes and its latency
 * charts (SVG files beside the page, linked relatively). Benchmarks that are missing, failed or
 * were not selected get a section saying so, never a gap.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { MachineInfo } from './machine.js';
import { allPass, fmt, fmtAuto, fmtRatio, machineConditionsText, spreadText, targetText, verdict, type BenchResult, type Figure, type LoadNote } from './report.js';
import { renderChart, type Chart } from './svg.js';

export type BenchStatus = 'ok' | 'failed' | 'missing' | 'skipped';

export interface BenchOutcome {
  name: string;
  title: string;
  /** The script, relative to the repository root. */
  script: string;
  status: BenchStatus;
  result: BenchResult | null;
  exitCode: number | null;
  seconds: number | null;
  /** Why it failed, is missing or was skipped (for failures: the end of its output). */
  reason: string | null;
}

export interface ReportInput {
  generatedAt: string;
  command: string;
  quick: boolean;
  machine: MachineInfo;
  load: { before: LoadNote; after: LoadNote };
  benches: BenchOutcome[];
}

export const chartFile = (benchmark: string, chart: Chart) => `${benchmark}-${chart.id.replace(/[^a-z0-9_-]+/gi, '-')}.svg`;

/** A table cell: no pipes or line breaks to break the row. */
const cell = (s: string) => s.replace(/\|/g, '\\|').replace(/\r?\n/g, ' ');
const row = (cells: string[]) => `| ${cells.map(cell).join(' | ')} |`;

function gib(bytes: number): string {
  return `${fmt(bytes / 1024 ** 3, 1)} GiB`;
}

function duration(s: number | null): string {
  if (s === null || !Number.isFinite(s)) return '-';
  const m = Math.floor(s / 60);
  return m ? `${m} min ${Math.round(s % 60)} s` : `${Math.round(s)} s`;
}

const withUnit = (x: number, unit: string) => (Number.isFinite(x) ? `${fmtAuto(x)} ${unit}` : '-');

export function resultCell(f: Figure): string {
  const v = verdict(f);
  const bold = v === 'PASS' || v === 'FAIL' ? `**${v}**` : v;
  return f.note ? `${bold} (${f.note})` : bold;
}

export function figureRow(f: Figure): string {
  return row([
    f.figure,
    withUnit(f.value, f.unit) + (f.spread?.of === 'value' ? ` (${spreadText(f.spread)})` : ''),
    f.baseline ? `${withUnit(f.baseline.value, f.unit)} (${f.baseline.label})` : '-',
    fmtRatio(f.ratio) + (f.spread?.of === 'ratio' ? ` (${spreadText(f.spread)})` : ''),
    targetText(f.target, f.unit),
    resultCell(f),
  ]);
}

export function counts(b: BenchOutcome): { figures: number; passed: number; failed: number } {
  const figs = b.result?.figures ?? [];
  return { figures: figs.length, passed: figs.filter((f) => f.pass === true).length, failed: figs.filter((f) => f.pass === false).length };
}

function statusText(b: BenchOutcome): string {
  if (b.status === 'ok') return 'ran';
  if (b.status === 'failed') return `**failed**${b.exitCode === null ? '' : ` (exit code ${b.exitCode})`}`;
  return b.status === 'missing' ? 'missing' : 'not run';
}

const anchor = (name: string) => `bench-${name}`;

function machineSection(input: ReportInput): string[] {
  const m = input.machine;
  return [
    '## Machine',
    '',
    '| | |',
    '|---|---|',
    row(['CPU', `${m.cpuModel}, ${m.cores} cores available`]),
    row(['Memory', gib(m.memoryBytes)]),
    row(['OS', `${m.os} (${m.kernel})`]),
    row(['Node.js', m.node]),
    row(['PostgreSQL', m.postgres]),
    row(['ffmpeg', m.ffmpeg]),
    row(['Load before', input.load.before.text]),
    row(['Load after', input.load.after.text]),
    row(['Conditions', machineConditionsText(input.load)]),
    row(['Date', input.generatedAt]),
    '',
  ];
}

function summarySection(input: ReportInput): string[] {
  const lines = ['## Summary', '', row(['benchmark', 'status', 'figures', 'PASS', 'FAIL', 'time']), '|---|---|---:|---:|---:|---:|'];
  for (const b of input.benches) {
    const c = counts(b);
    lines.push(row([`[${b.name}](#${anchor(b.name)})`, statusText(b), String(c.figures), String(c.passed), String(c.failed), duration(b.seconds)]));
  }
  const all = input.benches.map(counts);
  const named = (status: BenchOutcome['status'], label: string) => {
    const names = input.benches.filter((b) => b.status === status).map((b) => b.name);
    return names.length ? `; ${label}: ${names.join(', ')}` : '';
  };
  lines.push(
    '',
    `${all.reduce((n, c) => n + c.passed, 0)} figures PASS, ${all.reduce((n, c) => n + c.failed, 0)} FAIL` +
      `${named('failed', 'failed')}${named('missing', 'missing')}${named('skipped', 'not run')}.`,
    '',
  );
  return lines;
}

/** One benchmark's section (also written on its own by a bench that updates only its part of the page). */
export function benchSection(b: BenchOutcome, chartDir: string): string[] {
  const lines = [`<a id="${anchor(b.name)}"></a>`, '', `## ${b.name}: ${b.title}`, ''];
  const ran = b.seconds === null ? '' : ` in ${duration(b.seconds)}`;
  if (b.status === 'missing') return [...lines, `Not run: ${b.reason ?? `\`${b.script}\` does not exist in this checkout`}.`, ''];
  if (b.status === 'skipped') return [...lines, `Not run: ${b.reason ?? 'not selected'}.`, ''];
  if (b.status === 'failed' || !b.result) {
    lines.push(`\`${b.script}\` failed${ran}${b.exitCode === null ? '' : ` with exit code ${b.exitCode}`} and wrote no results.`, '');
    if (b.reason) lines.push('```text', b.reason.trimEnd(), '```', '');
    return lines;
  }
  const r = b.result;
  lines.push(
    `\`${b.script}\`${ran} on ${r.machine.cpu}, ${r.machine.cpus} cores; database: ${r.database.server}${r.database.version ? ` (PostgreSQL ${r.database.version})` : ''}; ` +
      `load before ${r.load.before.loadavg.join(', ')}, after ${r.load.after.loadavg.join(', ')}; ${machineConditionsText(r.load)}.`,
    '',
    row(['figure', 'value', 'baseline (same run)', 'ratio', 'target', 'result']),
    '|---|---:|---|---:|---|---|',
    ...r.figures.map(figureRow),
    '',
  );
  // A FAIL explains exit code 1; any other non-zero exit is worth a look at the bench's output.
  if (b.exitCode && allPass(r.figures)) lines.push(`The benchmark exited with code ${b.exitCode} although no figure failed; see its output.`, '');
  if (r.notes.length) lines.push(...r.notes.map((n) => `- ${n}`), '');
  for (const c of r.charts) lines.push(`![${c.title}](${chartDir}/${chartFile(r.benchmark, c)})`, '');
  return lines;
}

export function renderMarkdown(input: ReportInput, chartDir = 'benchmarks'): string {
  const lines = [
    '# Benchmarks',
    '',
    `Generated by \`${input.command}\` on ${input.generatedAt}; do not edit by hand, run it again.` +
      (input.quick ? ' **Quick run**: smaller sizes and shorter durations than the full run, so the figures are rough.' : ''),
    '',
    'Each benchmark runs in its own process, one after another, on this one machine (client, API, workers and ' +
      'PostgreSQL share its cores). Every figure is set against a baseline measured in the same run, so the ratio ' +
      'says more than the raw number when the machine is busy. Targets are the ones the issues set; a figure ' +
      'without a target is context. Charts show cumulative distributions: how many samples were at or below each ' +
      'value, the baseline dashed.',
    '',
    ...machineSection(input),
    ...summarySection(input),
    ...input.benches.flatMap((b) => benchSection(b, chartDir)),
  ];
  return lines.join('\n').replace(/\n{3,}/g, '\n\n').trimEnd() + '\n';
}

/**
 * Writes the page and one SVG per chart into `<dir of page>/<chartDir>/`, deleting SVGs there
 * that this report does not link (charts of renamed or unselected benchmarks). Returns the files.
 */
export function writeReport(input: ReportInput, markdownPath: string, chartDir = 'benchmarks'): { markdown: string; charts: string[] } {
  const dir = path.join(path.dirname(markdownPath), chartDir);
  fs.mkdirSync(dir, { recursive: true });
  const charts: string[] = [];
  for (const b of input.benches) {
    for (const c of b.result?.charts ?? []) {
      const file = path.join(dir, chartFile(b.result?.benchmark ?? b.name, c));
      fs.writeFileSync(file, renderChart(c));
      charts.push(file);
    }
  }
  for (const f of fs.readdirSync(dir)) {
    if (f.endsWith('.svg') && !charts.includes(path.join(dir, f))) fs.rmSync(path.join(dir, f));
  }
  fs.writeFileSync(markdownPath, renderMarkdown(input, chartDir));
  return { markdown: markdownPath, charts };
}
