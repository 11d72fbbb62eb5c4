// The house's floors (issue 19): src/ folders import each other in one direction only. src/core is
// the ground floor and imports no other folder; src/service and src/cli are the top and nothing
// below imports them; and no two folders import each other, directly or round a longer loop. Static
// imports, re-exports and dynamic `import()` all count (TypeScript 7 has no JS API to parse with,
// so a pattern reads the specifiers; the first test checks it sees known edges).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { ROOT } from './helpers/process.js';

const SRC = path.join(ROOT, 'src');
const TOP = new Set(['service', 'cli']);

const SPECIFIER = /(?:\bfrom\s*|\bimport\s*\(\s*|^\s*import\s+)'([^']+)'/gm;

function specifiers(file: string): string[] {
  return [...fs.readFileSync(file, 'utf8').matchAll(SPECIFIER)].map((m) => m[1]!);
}

interface Edge {
  from: string;
  to: string;
  file: string;
}

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    // The console's web pages are a separate program, bundled for the browser.
    if (entry.isDirectory()) {
      if (full !== path.join(SRC, 'console', 'web')) out.push(...sourceFiles(full));
    } else if (/\.tsx?$/.test(entry.name) && !entry.name.endsWith('.d.ts')) {
      out.push(full);
    }
  }
  return out;
}

/** The folder of src/ a path lies in ('logger.ts' at the root counts as its own room). */
function room(file: string): string {
  return path.relative(SRC, file).split(path.sep)[0]!.replace(/\.ts$/, '');
}

function folderEdges(): Edge[] {
  const edges: Edge[] = [];
  for (const file of sourceFiles(SRC)) {
    for (const spec of specifiers(file)) {
      if (!spec.startsWith('.')) continue;
      const target = path.resolve(path.dirname(file), spec);
      if (!target.startsWith(SRC + path.sep)) continue;
      const from = room(file);
      const to = room(target);
      if (from !== to) edges.push({ from, to, file: path.relative(ROOT, file) });
    }
  }
  return edges;
}

describe('the folders of src/ import in one direction', () => {
  const edges = folderEdges();

  test('the edges were read (the scan sees the app assembly import its domains)', () => {
    assert.ok(edges.some((e) => e.from === 'service' && e.to === 'runs'), 'service -> runs not seen');
    assert.ok(edges.some((e) => e.from === 'runs' && e.to === 'core'), 'runs -> core not seen');
    // A dynamic import: cli/admin.ts loads teams/repository.js with import().
    assert.ok(edges.some((e) => e.file === 'src/cli/admin.ts' && e.to === 'teams'), 'cli -> teams not seen');
  });

  test('src/core imports no other folder', () => {
    assert.deepEqual(edges.filter((e) => e.from === 'core'), []);
  });

  test('nothing below src/service and src/cli imports them', () => {
    assert.deepEqual(edges.filter((e) => TOP.has(e.to) && !TOP.has(e.from)), []);
  });

  test('no loop between folders', () => {
    const next = new Map<string, Set<string>>();
    for (const e of edges) {
      if (!next.has(e.from)) next.set(e.from, new Set());
      next.get(e.from)!.add(e.to);
    }
    const loops: string[] = [];
    const done = new Set<string>();
    const visit = (node: string, trail: string[]): void => {
      for (const to of next.get(node) ?? []) {
        const at = trail.indexOf(to);
        if (at >= 0) {
          const loop = [...trail.slice(at), to];
          const where = loop.slice(0, -1).map((f, i) => edges.find((e) => e.from === f && e.to === loop[i + 1])!.file);
          loops.push(`${loop.join(' -> ')} (${where.join(', ')})`);
        } else if (!done.has(to)) {
          visit(to, [...trail, to]);
        }
      }
      done.add(node);
    };
    for (const node of next.keys()) if (!done.has(node)) visit(node, [node]);
    assert.deepEqual(loops, []);
  });

  test('within src/cli, admin.ts and admin-webhooks.ts do not import each other both ways', () => {
    const read = (name: string): string[] => specifiers(path.join(SRC, 'cli', name));
    const both = read('admin.ts').includes('./admin-webhooks.js') && read('admin-webhooks.ts').includes('./admin.js');
    assert.equal(both, false);
  });
});
