#!/usr/bin/env node
// `npm run build -w @toolrun/cli` (and prepack, so `npm pack` and `npm publish` always pack fresh
// files): bundles src/main.ts with esbuild into dist/toolrun-cli.js, one ESM file holding the CLI,
// @toolrun/sdk (from its sources, so the SDK needs no build first), commander and cli-progress.
// The published package therefore has no dependencies and needs no tsx; bin/toolrun-cli.js runs
// this file when there is no src/ beside it. Node built-ins stay imports. cli-progress is
// CommonJS and require()s Node built-ins, which an ESM bundle can only do through a real
// `require`: the banner makes one with createRequire.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const pkgDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const outFile = path.join(pkgDir, 'dist', 'toolrun-cli.js');
const tmp = `${outFile}.tmp-${process.pid}`;

try {
  const esbuild = await import('esbuild');
  await esbuild.build({
    entryPoints: [path.join(pkgDir, 'src', 'main.ts')],
    outfile: tmp,
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    alias: { '@toolrun/sdk': path.join(pkgDir, '..', 'sdk', 'src', 'index.ts') },
    banner: { js: "import { createRequire as __toolrunCreateRequire } from 'node:module';\nconst require = __toolrunCreateRequire(import.meta.url);" },
    legalComments: 'eof',
    logLevel: 'warning',
  });
} catch (err) {
  fs.rmSync(tmp, { force: true });
  console.error(`# @toolrun/cli build: esbuild failed: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
}
fs.renameSync(tmp, outFile);
console.error(`# @toolrun/cli build: ${path.relative(process.cwd(), outFile) || outFile} (${(fs.statSync(outFile).size / 1024).toFixed(0)} KiB)`);
