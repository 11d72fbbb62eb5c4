/**
 * A benchmark on withBenchService() (bench/lib/service.ts), for test/bench-service.test.ts to run
 * as a process of its own: `node --import tsx test/helpers/bench-service-driver.ts <ok|fail|hang>`.
 * It sets up the bench database (on DATABASE_URL's server), starts the bare server of bench/http.ts
 * as a real child (NODE_DEBUG=net makes it write to stderr), registers two clean-up steps, prints
 * what it made as one JSON line, then finishes, fails, or waits to be interrupted.
 */
import { startServerChild } from '../../bench/lib/children.js';
import { runBench } from '../../bench/lib/report.js';
import { withBenchService } from '../../bench/lib/service.js';

const mode = process.argv[2] ?? 'ok';

runBench('driver', () =>
  withBenchService('driver', { watchdogMinutes: mode === 'watchdog' ? 10 : null }, async (svc) => {
    const database = await svc.database();
    svc.defer('first', (what) => process.stdout.write(`closed ${what}\n`));
    const child = svc.child('bare', await startServerChild('bare', 'bare', { ...process.env, BENCH_BODY: '{}', NODE_DEBUG: 'net' }));
    svc.defer('second', (what) => process.stdout.write(`closed ${what}\n`));
    process.stdout.write(`${JSON.stringify({ dir: svc.dir, database: database.name, child: child.pid })}\n`);
    if (mode === 'fail') throw new Error('the measurement went wrong');
    if (mode === 'hang' || mode === 'watchdog') await new Promise(() => undefined);
    process.stdout.write('body done\n');
  }),
);
