// The scale-out topology of `npm run topology` with a smaller load: 2 API processes
// (`toolrun serve --no-workers`) and 2 worker processes (`toolrun worker`), each in its own
// network namespace where the machine allows (else plain processes on loopback, said in the
// report), sharing this file's database and an s3rver. About 200 runs of all five tools go
// through both APIs; the checks (scripts/topology/checks.ts) must all pass: every run final once,
// each kind of run ending as it should, the ledger balanced, every webhook once per subscribed
// endpoint, per-key rate limits (30 and 120/min) and the hourly ceiling held across both APIs, outputs
// downloadable through the other API, no process failing, each stopping cleanly on SIGTERM.
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { runScaleOut, type ScaleOutReport } from '../scripts/topology/scaleout.js';
import { formatReport } from '../scripts/topology/summary.js';
import { createTestDatabase, type TestDatabase } from './helpers/db.js';

let database: TestDatabase | null = null;
after(async () => {
  await database?.db.close();
});

const TOOLS = ['brand_kit_extract', 'image_color_grade', 'image_upscale', 'video_transition', 'video_upscale'];

test('2 API + 2 worker processes share only PostgreSQL and S3, and keep every promise under a mixed load', { timeout: 420_000 }, async (t) => {
  database = await createTestDatabase();
  const seed = Math.floor(Math.random() * 1_000_000);
  const lines: string[] = [];
  let report: ScaleOutReport;
  try {
    report = await runScaleOut({
      databaseUrl: database.url,
      runs: 200,
      concurrency: 16,
      seed,
      pollMs: 1000,
      forceLoopback: false,
      workerConcurrency: 2,
      loadDeadlineMs: 240_000,
      rateLimit: { limits: [30, 120], durationMs: 5000 },
      ceiling: { limit: 12, attempts: 20 },
      log: (line) => lines.push(line),
    });
  } catch (err) {
    throw new Error(`the topology failed (seed ${seed}): ${(err as Error).message}\n${lines.join('\n')}`);
  }
  const summary = formatReport(report);
  for (const line of [...lines, ...summary.split('\n')]) t.diagnostic(line);

  for (const c of report.checks) assert.ok(c.ok, `${c.name} (seed ${seed}; replay: npm run topology -- --seed ${seed}):\n  ${c.failures.join('\n  ')}\n${summary}`);
  assert.equal(report.checks.length, 11);

  if (report.mode === 'netns') {
    // Reached over the veth addresses: each API on its own host address, none on loopback.
    const hosts = report.apis.map((a) => new URL(a.url).hostname);
    assert.equal(new Set([...hosts, ...report.workers.map((w) => w.ip)]).size, 4, `four hosts: ${JSON.stringify(report.apis)} ${JSON.stringify(report.workers)}`);
    for (const h of hosts) assert.doesNotMatch(h, /^127\./);
  } else {
    assert.ok(report.reason.length > 0);
    t.diagnostic(`network namespaces not used: ${report.reason}`);
  }

  // The load is what it claims: 200 runs plus the ceiling's 12, every tool succeeding, and runs
  // failed for real reasons and canceled both while queued and while running.
  assert.equal(report.runs.length, 200 + 12);
  for (const tool of TOOLS) assert.ok(report.runs.some((r) => r.tool_id === tool && r.status === 'succeeded'), `a ${tool} run succeeded`);
  assert.ok(report.runs.some((r) => r.status === 'failed'));
  assert.ok(report.records.some((r) => r.kind === 'cancel_running' && r.cancel?.status === 200), 'a run canceled while running');
  assert.ok(report.records.some((r) => r.kind === 'cancel_queued' && r.cancel?.status === 200), 'a run canceled right after its start');
  // Both APIs took starts, and retries happened and were counted once.
  for (const api of report.apis) assert.ok((report.requests[api.name]?.['202'] ?? 0) > 10, `${api.name} accepted starts: ${JSON.stringify(report.requests)}`);
  assert.ok((report.webhooks.answered_500 ?? 0) > 0, 'some first attempts failed and were retried');
});
