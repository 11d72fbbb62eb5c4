#!/usr/bin/env node
// `npm run build -w @toolrun/sdk` (and prepack, so `npm pack` and `npm publish` always pack fresh
// files): the published form of the SDK in dist/:
// - dist/*.js and dist/*.d.ts: tsc (tsconfig.build.json), ESM, one file per source file;
// - dist/index.cjs: the same code for require(), one file bundled by esbuild from the sources;
// - dist/*.d.cts: the declarations again for require() (TypeScript must not read an ESM .d.ts as
//   the types of a CommonJS entry), with their relative imports pointing at .cjs.
// Declarations keep no `.ts` import extensions (tsc leaves them in .d.ts files; older TypeScript
// versions and other tools resolve `.js` only). Built beside dist/ and swapped in at the end.
// The repository never runs dist/: its tests, the CLI and the docs samples use src/ (see the root
// tsconfig.json `paths`).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const pkgDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(path.join(pkgDir, 'package.json'));
const outDir = path.join(pkgDir, 'dist');
const tmp = `${outDir}.tmp-${process.pid}`;

function fail(message) {
  fs.rmSync(tmp, { recursive: true, force: true });
  console.error(`# @toolrun/sdk build: ${message}`);
  process.exit(1);
}

function tscPath() {
  const pkgFile = require.resolve('typescript/package.json');
  const pkg = JSON.parse(fs.readFileSync(pkgFile, 'utf8'));
  return path.join(path.dirname(pkgFile), typeof pkg.bin === 'string' ? pkg.bin : pkg.bin.tsc);
}

function* walk(dir) {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) yield* walk(p);
    else yield p;
  }
}

/** Relative module specifiers in a declaration file, with their extension replaced. */
const RELATIVE_SPECIFIER = /((?:from\s+|import\s*\(\s*|import\s+)['"])(\.{1,2}\/[^'"]+?)\.(?:ts|js)(['"])/g;
const withExtension = (code, ext) => code.replace(RELATIVE_SPECIFIER, (_, head, spec, tail) => `${head}${spec}${ext}${tail}`);

fs.rmSync(tmp, { recursive: true, force: true });
const tsc = spawnSync(process.execPath, [tscPath(), '-p', path.join(pkgDir, 'tsconfig.build.json'), '--outDir', tmp], { cwd: pkgDir, stdio: 'inherit' });
if (tsc.status !== 0) fail(`tsc failed (exit ${tsc.status ?? tsc.signal})`);

for (const file of [...walk(tmp)]) {
  if (!file.endsWith('.d.ts')) continue;
  const code = fs.readFileSync(file, 'utf8');
  fs.writeFileSync(file, withExtension(code, '.js'));
  fs.writeFileSync(file.replace(/\.d\.ts$/, '.d.cts'), withExtension(code, '.cjs'));
}

try {
  const esbuild = await import('esbuild');
  await esbuild.build({
    entryPoints: [path.join(pkgDir, 'src', 'index.ts')],
    outfile: path.join(tmp, 'index.cjs'),
    bundle: true,
    format: 'cjs',
    platform: 'node',
    target: 'node20',
    legalComments: 'none',
    logLevel: 'warning',
  });
} catch (err) {
  fail(`esbuild (CommonJS bundle) failed: ${err instanceof Error ? err.message : String(err)}`);
}

const old = `${outDir}.old-${process.pid}`;
if (fs.existsSync(outDir)) fs.renameSync(outDir, old);
fs.renameSync(tmp, outDir);
fs.rmSync(old, { recursive: true, force: true });
console.error(`# @toolrun/sdk build: ${path.relative(process.cwd(), outDir) || outDir} (ESM + .d.ts by tsc, CommonJS by esbuild)`);
