import { resolveMediaBinaries } from '../../src/media/binaries.js';
import { testLogger } from './test-logs.js';
import { RunWorker } from '../../src/runs/worker.js';
import type { ToolRegistry } from '../../src/tools/registry.js';
import type { TestApp } from './app.js';

/** An in-process worker on the same database, storage and tools as a test app. */
export async function startTestWorker(t: TestApp, tools: ToolRegistry, opts: { concurrency?: number } = {}): Promise<RunWorker> {
  const worker = new RunWorker({
    config: t.config,
    db: t.database.db,
    storage: t.storage,
    tools,
    media: resolveMediaBinaries(),
    logger: testLogger('warn', t.logs),
    concurrency: opts.concurrency ?? 2,
  });
  await worker.start();
  return worker;
}

/** Polls until check() returns a value (not undefined), or fails after the deadline. */
export async function waitFor<T>(what: string, check: () => Promise<T | undefined>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
