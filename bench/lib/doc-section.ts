/**
 * Writes one benchmark's section into docs/benchmarks.md without regenerating the page: the part
 * from its anchor (`<a id="bench-<name>">`) up to the next benchmark's anchor is replaced, or the
 * section is appended when the page has none yet; its charts are written beside the page. `npm run bench` rewrites the whole page from
 * every result, this one included (bench/lib/suite.ts lists it).
 */
import fs from 'node:fs';
import path from 'node:path';
import { benchSection, chartFile } from './markdown.js';
import { renderChart } from './svg.js';
import type { BenchResult } from './report.js';

export function writeSection(markdownPath: string, name: string, title: string, result: BenchResult, script: string, seconds: number | null = null): void {
  const section = benchSection({ name, title, script, status: 'ok', result, exitCode: null, seconds, reason: null }, 'benchmarks')
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trimEnd();
  // Its charts too, beside the page where the section links them.
  const chartDir = path.join(path.dirname(markdownPath), 'benchmarks');
  fs.mkdirSync(chartDir, { recursive: true });
  for (const c of result.charts) fs.writeFileSync(path.join(chartDir, chartFile(result.benchmark, c)), renderChart(c));
  const page = withSummaryRow(fs.existsSync(markdownPath) ? fs.readFileSync(markdownPath, 'utf8') : '# Benchmarks\n', name, result);
  const start = page.indexOf(`<a id="bench-${name}"></a>`);
  if (start < 0) {
    fs.writeFileSync(markdownPath, `${page.trimEnd()}\n\n${section}\n`);
    return;
  }
  const next = page.indexOf('<a id="bench-', start + 1);
  const rest = next < 0 ? '' : `\n\n${page.slice(next)}`;
  fs.writeFileSync(markdownPath, `${page.slice(0, start)}${section}${rest.trimEnd()}\n`);
}

/**
 * The summary table's row of this benchmark, and the PASS/FAIL total under the table, as they now
 * are: the row says the section was run alone, and when.
 */
function withSummaryRow(page: string, name: string, result: BenchResult): string {
  const figures = result.figures;
  const passed = figures.filter((f) => f.pass === true).length;
  const failed = figures.filter((f) => f.pass === false).length;
  const link = `| [${name}](#bench-${name}) |`;
  const row = `${link} ran alone, ${result.at.slice(0, 10)} | ${figures.length} | ${passed} | ${failed} | - |`;
  const lines = page.split('\n').map((l) => (l.startsWith(link) ? row : l));
  // A benchmark the last full run did not have gets its row after the table's last one.
  if (!lines.includes(row)) {
    let last = -1;
    lines.forEach((l, i) => {
      if (/^\| \[[^\]]+\]\(#bench-[^)]+\) \|/.test(l)) last = i;
    });
    if (last >= 0) lines.splice(last + 1, 0, row);
  }
  let pass = 0;
  let fail = 0;
  for (const l of lines) {
    const cells = /^\| \[[^\]]+\]\(#bench-[^)]+\) \|[^|]*\| (\d+) \| (\d+) \| (\d+) \|/.exec(l);
    if (cells) {
      pass += Number(cells[2]);
      fail += Number(cells[3]);
    }
  }
  return lines.map((l) => l.replace(/^\d+ figures PASS, \d+ FAIL/, `${pass} figures PASS, ${fail} FAIL`)).join('\n');
}
