import { Command, CommanderError } from 'commander';
import pino from 'pino';
import { ConfigError, loadConfig, type Config } from '../config/config.js';
import { createLogger } from '../logger.js';
import { isDbUnavailable, NoDatabaseError } from '../db/errors.js';
import { describeDatabase, openDatabase, openExistingDatabase } from '../service/database.js';
import { AdminError } from '../teams/repository.js';
import { adminCommand } from './admin.js';

function fail(message: string, code = 1): never {
  process.stderr.write(`toolrun: ${message}\n`);
  process.exit(code);
}

function describeError(err: unknown): string {
  if (err instanceof AdminError || err instanceof ConfigError || err instanceof NoDatabaseError) return err.message;
  const e = err as { code?: string; detail?: string; message?: string };
  if (e.code === '22P02') return 'an id is not a valid UUID';
  return e.message ?? String(err);
}

/**
 * One Ctrl-C can arrive twice: the terminal signals the whole foreground group, and `npm start`
 * (npm's run-script) forwards the signal it got to its child as well. Signals this close to the
 * first are that same keypress, not an operator insisting.
 */
const SAME_SIGNAL_MS = 1000;

/**
 * Stops on SIGTERM/SIGINT and exits 0 once everything has stopped; a second signal (later than
 * SAME_SIGNAL_MS) exits at once (status 1), leaving running runs to be taken back when their
 * leases lapse.
 */
function onShutdown(stop: () => Promise<void>, logger: pino.Logger): void {
  let stopping = false;
  let firstAt = 0;
  const handler = (signal: string) => {
    if (stopping) {
      if (performance.now() - firstAt < SAME_SIGNAL_MS) return;
      logger.warn({ signal }, 'second signal: exiting now');
      logger.flush();
      process.exit(1);
    }
    stopping = true;
    firstAt = performance.now();
    logger.info({ signal }, 'shutting down');
    // Said once a further signal is no longer taken for this one (a stop that takes longer).
    setTimeout(() => logger.info('still shutting down; another Ctrl-C or SIGTERM exits at once'), SAME_SIGNAL_MS).unref();
    stop().then(
      () => process.exit(0),
      (err: unknown) => {
        logger.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', handler);
  process.on('SIGINT', handler);
}

export async function main(argv: string[]): Promise<void> {
  let config: Config;
  try {
    config = loadConfig();
  } catch (err) {
    fail(`configuration error: ${describeError(err)}`, 78);
  }
  const program = new Command('toolrun').description('Toolrun: a self-hostable Tool-Run API service').exitOverride();

  program
    .command('serve')
    .description('run the API with in-process workers')
    .option('--no-workers', 'serve the API only; run `toolrun worker` processes for the runs and deliveries')
    .action(async (opts: { workers: boolean }) => {
      const logger = createLogger(config.logLevel);
      // Loaded only here: the HTTP stack is most of the start-up time the admin commands do without.
      const { startService } = await import('../service/serve.js');
      // Handlers first: a SIGTERM during start-up waits for the start, then stops cleanly.
      const starting = startService(config, logger, process.stdout, { workers: opts.workers });
      onShutdown(async () => {
        const service = await starting.catch(() => null);
        await service?.stop();
      }, logger);
      await starting;
    });

  program
    .command('worker')
    .description('run workers only, against the same database')
    .action(async () => {
      const logger = createLogger(config.logLevel);
      const { startWorkerProcess } = await import('../service/workers.js');
      // Handlers first, as for serve: a SIGTERM during start-up waits for the start, then stops.
      const starting = startWorkerProcess(config, logger);
      onShutdown(async () => {
        const worker = await starting.catch(() => null);
        await worker?.stop();
      }, logger);
      await starting;
    });

  program
    .command('migrate')
    .description('apply pending database migrations and exit')
    .action(async () => {
      // stdout carries only the JSON result; logs go to stderr.
      const logger = createLogger(config.logLevel, pino.destination(2));
      const database = await openDatabase(config, logger);
      await database.close();
      process.stdout.write(JSON.stringify({ migrated: true }) + '\n');
    });

  program.addCommand(
    adminCommand(config, async (fn) => {
      // Admin output is JSON on stdout; stderr says which database is used (an operator pointed at
      // the wrong one sees it), then logs only when something is wrong.
      process.stderr.write(`toolrun: database: ${describeDatabase(config)}\n`);
      const logger = createLogger('warn', pino.destination(2));
      let database: Awaited<ReturnType<typeof openExistingDatabase>>;
      try {
        database = await openExistingDatabase(config, logger, { poolSize: 2, applicationName: 'toolrun-admin' });
      } catch (err) {
        // EX_UNAVAILABLE: nothing wrong with the command; there is no database to run it against.
        if (err instanceof NoDatabaseError) fail(err.message, 69);
        const where = describeDatabase(config);
        // 3D000: the server answers but has no database of that name.
        if ((err as { code?: unknown }).code === '3D000') fail(`${describeError(err)}: point DATABASE_URL at the database the service uses`, 69);
        if (isDbUnavailable(err)) fail(`cannot reach ${where} (${describeError(err)}): check that PostgreSQL runs there and the address is right`, 69);
        throw err;
      }
      try {
        const result = await fn(database.db);
        process.stdout.write(JSON.stringify(result) + '\n');
      } finally {
        await database.close();
      }
    }),
  );

  // Usage errors exit 64 (EX_USAGE) everywhere, also in subcommands added as whole trees.
  const overrideAll = (cmd: Command): void => {
    cmd.exitOverride();
    cmd.commands.forEach(overrideAll);
  };
  overrideAll(program);
  try {
    await program.parseAsync(argv);
  } catch (err) {
    if (err instanceof CommanderError) {
      if (err.exitCode === 0) return;
      process.exit(err.exitCode === 1 ? 64 : err.exitCode);
    }
    fail(describeError(err));
  }
}
