#!/usr/bin/env node
// toolrun-cli: runs the TypeScript sources through tsx (as the server does), so there is no build step.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../src/main.ts');
process.exit(await main(process.argv));
