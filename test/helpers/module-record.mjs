// Test-only: `node --import ./test/helpers/module-record.mjs ...` appends the URL of every module
// the process resolves to the file named by MODULE_RECORD_FILE, one a line, so a test can read
// from outside which modules a real toolrun process loaded. Plain JavaScript: it runs before any
// TypeScript loader does.
import { register } from 'node:module';

const file = process.env.MODULE_RECORD_FILE;
if (!file) throw new Error('module-record.mjs needs MODULE_RECORD_FILE');
register('./module-record-hooks.mjs', import.meta.url, { data: { file } });
