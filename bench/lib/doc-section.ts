/**
 * Writes one benchmark's section into docs/benchmarks.md without regenerating the page: the part
 * from its anchor (`<a id="bench-<name>">`) up to the next benchmark's anchor is replaced, or the
 * section is appended when the page has none yet. `npm run bench` rewrites the whole page from
 * every result, this one included (bench/lib/suite.ts lists it).
 */
import fs from 'node:fs';
import { benchSection } from './markdown.js';
import type { BenchResult } from './report.js';

export function writeSection(markdownPath: string, name: string, title: string, result: BenchResult, script: string, seconds: number | null = null): void {
  const section = benchSection({ name, title, script, status: 'ok', result, exitCode: null, seconds, reason: null }, 'benchmarks')
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trimEnd();
  const page = fs.existsSync(markdownPath) ? fs.readFileSync(markdownPath, 'utf8') : '# Benchmarks\n';
  const start = page.indexOf(`<a id="bench-${name}"></a>`);
  if (start < 0) {
    fs.writeFileSync(markdownPath, `${page.trimEnd()}\n\n${section}\n`);
    return;
  }
  const next = page.indexOf('<a id="bench-', start + 1);
  const rest = next < 0 ? '' : `\n\n${page.slice(next)}`;
  fs.writeFileSync(markdownPath, `${page.slice(0, start)}${section}${rest.trimEnd()}\n`);
}
