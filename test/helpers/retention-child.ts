// One janitor process for the retention test: deletes every row past its retention from the
// database given (argv: url, the RetentionConfig as JSON) with its own pool, then prints the rows
// it deleted per table as one JSON line.
import pino from 'pino';
import type { RetentionConfig } from '../../src/config/retention.js';
import { createDb } from '../../src/db/pool.js';
import { deleteExpiredRows } from '../../src/retention/janitor.js';

const [url, config] = process.argv.slice(2);
const logger = pino({ level: 'silent' });
const db = createDb({ connectionString: url ?? '', logger, max: 2 });
try {
  const deleted = await deleteExpiredRows(db.pool, JSON.parse(config ?? '{}') as RetentionConfig, logger);
  process.stdout.write(`${JSON.stringify(deleted)}\n`);
} finally {
  await db.close();
}
