/**
 * `node --import tsx scripts/bench-section.ts <name> [...]`: puts the last result of each named
 * benchmark (bench/results/<name>.json, written by running it alone, e.g. `npm run
 * bench:quality`) into its own section of docs/benchmarks.md, leaving the other sections as the
 * last full `npm run bench` wrote them.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { writeSection } from '../bench/lib/doc-section.js';
import { RESULTS_DIR } from '../bench/lib/report.js';
import { BENCHES, readResult } from '../bench/lib/suite.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

function main(names: string[]): number {
  if (!names.length) {
    process.stderr.write(`usage: node --import tsx scripts/bench-section.ts ${BENCHES.map((b) => b.name).join('|')} ...\n`);
    return 64;
  }
  for (const name of names) {
    const entry = BENCHES.find((b) => b.name === name);
    if (!entry) {
      process.stderr.write(`unknown benchmark ${name}\n`);
      return 64;
    }
    const read = readResult(path.join(RESULTS_DIR, `${name}.json`));
    if ('error' in read) {
      process.stderr.write(`${name}: ${read.error}; run it first (node --import tsx ${entry.script})\n`);
      return 1;
    }
    writeSection(path.join(ROOT, 'docs', 'benchmarks.md'), name, entry.title, read.result, entry.script);
    process.stdout.write(`docs/benchmarks.md: section ${name} written\n`);
  }
  return 0;
}

process.exitCode = main(process.argv.slice(2));
