// A real worker process for the crash tests: `node --import tsx test/helpers/worker-process.ts`.
// It reads its configuration from the environment exactly like `toolrun worker` does (DATABASE_URL,
// TOOLRUN_DATA_DIR for the shared local storage root, TOOLRUN_LEASE_SECONDS, ...), runs a RunWorker
// with the test tools, prints one JSON line {"event":"ready",...} on stdout once it listens, logs
// JSON to stderr, and on SIGTERM stops gracefully (TOOLRUN_SHUTDOWN_GRACE_SECONDS, as `toolrun
// worker` does) and exits 0. `toolrun worker` itself cannot be used: it has no test tools.
import pino from 'pino';
import { loadConfig } from '../../src/config/config.js';
import { createDb } from '../../src/db/pool.js';
import { resolveMediaBinaries } from '../../src/media/binaries.js';
import { RunWorker } from '../../src/runs/worker.js';
import { createStorage } from '../../src/storage/create.js';
import { testLogger } from './test-logs.js';
import { testRegistry } from './test-tools.js';

const config = loadConfig();
if (!config.databaseUrl) {
  process.stderr.write('worker-process: DATABASE_URL is not set\n');
  process.exit(2);
}
// Its logs also go to TEST_LOG_DIR (passed on by worker-processes.ts) for the suite's credential scan.
const logger = testLogger(config.logLevel, pino.destination({ dest: 2, sync: true }));
const db = createDb({ connectionString: config.databaseUrl, logger, max: 4, applicationName: 'toolrun-test-worker' });
const storage = await createStorage(config, db.pool);
const worker = new RunWorker({
  config,
  db,
  storage,
  tools: testRegistry(),
  media: resolveMediaBinaries(),
  logger,
  concurrency: config.workerConcurrency,
});
await worker.start();
process.stdout.write(`${JSON.stringify({ event: 'ready', worker: worker.id, pid: process.pid })}\n`);

let stopping = false;
async function shutdown(code: number): Promise<void> {
  if (stopping) return;
  stopping = true;
  await worker.stop(config.runs.shutdownGraceSeconds * 1000);
  await db.close();
  process.stdout.write(`${JSON.stringify({ event: 'stopped' })}\n`);
  process.exit(code);
}
process.on('SIGTERM', () => void shutdown(0));

// Never outlive the test process that started us (it kills us in its after hooks; this covers
// the case where it died before it could).
const parent = Number(process.env.TEST_PARENT_PID ?? 0);
if (parent) {
  setInterval(() => {
    try {
      process.kill(parent, 0);
    } catch {
      process.exit(3);
    }
  }, 1000).unref();
}
