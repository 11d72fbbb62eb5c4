#!/usr/bin/env node
// toolrun-cli. Installed from npm, the package holds no sources: it runs dist/toolrun-cli.js, one
// ESM file bundled with @toolrun/sdk, commander and cli-progress (no dependencies, no tsx).
// In the repository (src/ beside bin/) it runs the TypeScript sources through tsx, as the server
// does, so there is no build step; the repository's tsconfig.json maps @toolrun/sdk to its
// sources (`paths`), which tsx follows, so a stale or missing packages/sdk/dist is never used.
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';

const sources = new URL('../src/main.ts', import.meta.url);
let main;
if (fs.existsSync(sources)) {
  const { register } = await import('tsx/esm/api');
  register({ tsconfig: fileURLToPath(new URL('../../../tsconfig.json', import.meta.url)) });
  ({ main } = await import(sources.href));
} else {
  ({ main } = await import('../dist/toolrun-cli.js'));
}
process.exit(await main(process.argv));
