#!/usr/bin/env node
// `npm test`: runs every test file with node's test runner against a real PostgreSQL.
// TEST_DATABASE_URL (or DATABASE_URL) names a server to use; otherwise an embedded server is
// started for the run. Each test file makes its own database; they are dropped when the run
// passes and kept (names printed) when it fails, for a look at what the failing test left.
// Every test process also copies its logs to one directory (TEST_LOG_DIR); after the tests they
// are scanned for credentials (keys, webhook secrets, URL signatures, Authorization values), and
// any found fails the run, naming the file and line with the secret masked.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { register } from 'tsx/esm/api';

register();
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { startEmbeddedPostgres } = await import('../src/db/embedded.ts');
const { dropTestDatabases } = await import('../test/helpers/cleanup.ts');
const { scanLogDir, formatFindings } = await import('../test/helpers/log-scan.ts');
const pino = (await import('pino')).default;

function findTests(dir) {
  const out = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...findTests(p));
    else if (entry.name.endsWith('.test.ts')) out.push(p);
  }
  return out.sort();
}

/** Per-file time (the sum of its top-level tests) from the file-times reporter, slowest first. */
function slowestFiles(file, n) {
  let lines = [];
  try {
    lines = fs.readFileSync(file, 'utf8').split('\n').filter(Boolean);
  } catch {
    return '# no per-file timings (the reporter wrote none)';
  }
  const byFile = new Map();
  for (const line of lines) {
    const { file: f, ms } = JSON.parse(line);
    const key = f ? path.relative(root, f) : '(unknown file)';
    byFile.set(key, (byFile.get(key) ?? 0) + ms);
  }
  const rows = [...byFile].map(([f, ms]) => ({ f, ms })).sort((a, b) => b.ms - a.ms);
  const total = rows.reduce((s, r) => s + r.ms, 0);
  return [
    `# ${rows.length} files, ${(total / 1000).toFixed(0)} s of tests summed; the slowest:`,
    ...rows.slice(0, n).map((r) => `#   ${(r.ms / 1000).toFixed(1).padStart(7)} s  ${r.f}`),
  ].join('\n');
}

// `npm test -- a b` runs the files whose path contains a or b; `!c` leaves out those containing c
// (alone: every file but those). Matched against the path from the repository
// (test/me.test.ts), not the absolute one: a checkout under /home/me/ must not make
// `npm test -- me` match every file.
const args = process.argv.slice(2);
const filter = args.filter((a) => !a.startsWith('!'));
const excluded = args.filter((a) => a.startsWith('!')).map((a) => a.slice(1));
const repoPath = (f) => path.relative(root, f).split(path.sep).join('/');
let files = findTests(path.join(root, 'test'));
if (filter.length) files = files.filter((f) => filter.some((x) => repoPath(f).includes(x)));
if (excluded.length) files = files.filter((f) => !excluded.some((x) => repoPath(f).includes(x)));
if (!files.length) {
  console.error(`npm test: no test file matches ${args.join(' ')}`);
  process.exit(1);
}

let adminUrl = process.env.TEST_DATABASE_URL || process.env.DATABASE_URL || '';
let embedded = null;
let tmp = null;
if (!adminUrl) {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'toolrun-test-'));
  fs.chmodSync(tmp, 0o755);
  embedded = await startEmbeddedPostgres({ dataDir: tmp, logger: pino({ level: 'warn' }) });
  adminUrl = embedded.connectionString;
  console.log(`# embedded PostgreSQL for tests at ${new URL(adminUrl).host}`);
} else {
  console.log(`# tests against ${new URL(adminUrl).host}${new URL(adminUrl).pathname}`);
}
const runId = `${Date.now().toString(36)}${process.pid.toString(36)}`;

// A certificate for HTTPS test receivers (webhooks), trusted by every test process through
// NODE_EXTRA_CA_CERTS exactly as an operator would trust a private CA.
const tlsDir = fs.mkdtempSync(path.join(os.tmpdir(), 'toolrun-tls-'));
const selfsigned = (await import('selfsigned')).default;
const pems = await selfsigned.generate([{ name: 'commonName', value: 'localhost' }], {
  keySize: 2048,
  algorithm: 'sha256',
  extensions: [
    { name: 'basicConstraints', cA: true },
    { name: 'subjectAltName', altNames: [{ type: 2, value: 'localhost' }, { type: 7, ip: '127.0.0.1' }, { type: 7, ip: '::1' }] },
  ],
});
fs.writeFileSync(path.join(tlsDir, 'cert.pem'), pems.cert);
fs.writeFileSync(path.join(tlsDir, 'key.pem'), pems.private);
const logDir = fs.mkdtempSync(path.join(os.tmpdir(), 'toolrun-test-logs-'));

const env = {
  ...process.env,
  TEST_DATABASE_URL: adminUrl,
  TEST_RUN_ID: runId,
  NODE_EXTRA_CA_CERTS: path.join(tlsDir, 'cert.pem'),
  TEST_TLS_CERT_FILE: path.join(tlsDir, 'cert.pem'),
  TEST_TLS_KEY_FILE: path.join(tlsDir, 'key.pem'),
  TEST_LOG_DIR: logDir,
};
delete env.DATABASE_URL;
const concurrency = process.env.TEST_CONCURRENCY || '2';
const timesFile = path.join(logDir, 'file-times.jsonl');
const child = spawn(
  process.execPath,
  [
    '--import', 'tsx', '--test', `--test-concurrency=${concurrency}`,
    '--test-reporter=spec', '--test-reporter-destination=stdout',
    // A second, machine-readable copy: the slowest files are named after the run, so CI time
    // stays something one can see and act on.
    `--test-reporter=${path.join(root, 'scripts/file-times-reporter.mjs')}`, `--test-reporter-destination=${timesFile}`,
    ...files,
  ],
  { stdio: 'inherit', env, cwd: root },
);
const testsCode = await new Promise((resolve) => child.on('exit', (c, s) => resolve(c ?? (s ? 1 : 0))));

console.log(slowestFiles(timesFile, 12));
fs.rmSync(timesFile, { force: true });
const scan = scanLogDir(logDir);
console.log(`# log scan: ${scan.files} log files, ${(scan.bytes / 1048576).toFixed(1)} MiB, ${scan.findings.length} credentials found`);
if (scan.findings.length) {
  console.log(`# credentials in the test logs (secrets masked; logs kept in ${logDir}):`);
  console.log(formatFindings(scan.findings.slice(0, 50)).replace(/^/gm, '#   '));
  if (scan.findings.length > 50) console.log(`#   ... and ${scan.findings.length - 50} more`);
}
const code = testsCode !== 0 ? testsCode : scan.findings.length ? 1 : 0;

if (code === 0) {
  await dropTestDatabases(adminUrl, runId);
} else {
  console.log(`# run failed: databases of run ${runId} kept (toolrun_t_${runId}_*) for inspection`);
}
if (embedded) {
  await embedded.stop();
  if (code === 0) fs.rmSync(tmp, { recursive: true, force: true });
  else console.log(`# embedded data directory kept at ${tmp}`);
}
fs.rmSync(tlsDir, { recursive: true, force: true });
if (code === 0) fs.rmSync(logDir, { recursive: true, force: true });
else if (!scan.findings.length) console.log(`# test logs kept in ${logDir}`);
process.exit(code);
