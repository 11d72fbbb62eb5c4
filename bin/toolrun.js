#!/usr/bin/env node
// Runs the compiled build in dist/ when it was built from exactly the current src/ (`npm start`
// builds it first: less memory, faster start); otherwise the TypeScript sources through tsx, so a
// stale build never runs and there is no build step to remember. TOOLRUN_FROM_SOURCE=1 forces
// the sources.
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { freshBuild } from '../scripts/build-state.js';

// onnxruntime-node's Linux library (the learned upscaler) carries usage telemetry to Microsoft's
// collector: a self-hosted service sends nothing anywhere it was not asked to (docs/decisions.md).
process.env.ORT_DISABLE_TELEMETRY ??= '1';
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dist = process.env.TOOLRUN_FROM_SOURCE === '1' ? null : freshBuild(root);
let main;
if (dist) {
  // Stack traces name the TypeScript lines.
  process.setSourceMapsEnabled(true);
  ({ main } = await import(pathToFileURL(path.join(dist, 'cli', 'main.js')).href));
} else {
  const { register } = await import('tsx/esm/api');
  register();
  ({ main } = await import('../src/cli/main.ts'));
}
await main(process.argv);
