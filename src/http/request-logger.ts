import type { FastifyBaseLogger } from 'fastify';
import type { Bindings, ChildLoggerOptions, Level, Logger } from 'pino';

/** What a request logger needs of the app's logger (Fastify's own pino child of ours). */
type Parent = Pick<Logger, 'child' | 'isLevelEnabled' | 'level'>;

/**
 * A request's logger (request.log, reply.log) that makes its pino child, bound to the request id,
 * only when something is logged at a level the logger writes. pino's child costs about 2 µs and a
 * few objects per request (its bindings go through the redaction of `*.authorization` and the
 * other wildcard paths), and at LOG_LEVEL=warn most requests log nothing, so most requests never
 * pay it. What is written is exactly what the eager child would have written: same bindings,
 * same parent, made at the first line.
 */
export class RequestLogger implements FastifyBaseLogger {
  private made: FastifyBaseLogger | null = null;

  constructor(
    private readonly parent: Parent,
    private readonly bindings: Bindings,
  ) {}

  /** The pino child, made on first need. */
  private real(): FastifyBaseLogger {
    return (this.made ??= this.parent.child(this.bindings));
  }

  private write(level: Level, args: unknown[]): void {
    // The parent's level is the child's until someone sets the child's own (then it exists).
    if (this.made === null && !this.parent.isLevelEnabled(level)) return;
    const real = this.real();
    Reflect.apply(real[level], real, args);
  }

  get level(): string {
    return this.made ? this.made.level : this.parent.level;
  }

  set level(level: string) {
    this.real().level = level;
  }

  fatal(...args: unknown[]): void {
    this.write('fatal', args);
  }

  error(...args: unknown[]): void {
    this.write('error', args);
  }

  warn(...args: unknown[]): void {
    this.write('warn', args);
  }

  info(...args: unknown[]): void {
    this.write('info', args);
  }

  debug(...args: unknown[]): void {
    this.write('debug', args);
  }

  trace(...args: unknown[]): void {
    this.write('trace', args);
  }

  silent(): void {}

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.real().child(bindings, options);
  }
}

/**
 * Fastify's childLoggerFactory: lazy request loggers under the app's logger (`logger`, which
 * Fastify made as a pino child of ours with its own serializers), or under `parent` when Fastify
 * was given no logger (see buildApp: below info it gets none). A route with its own log level or
 * serializers (none today), or a logger that is not pino, gets the eager child, as by default.
 */
export function lazyRequestLoggers(parent?: FastifyBaseLogger & Parent) {
  return function childLoggerFactory(given: FastifyBaseLogger, bindings: Bindings, opts: ChildLoggerOptions): FastifyBaseLogger {
    const logger = parent ?? given;
    const ownLevel = opts.level !== undefined && opts.level !== logger.level;
    if (ownLevel || opts.serializers !== undefined || !isPino(logger)) return logger.child(bindings, opts);
    return new RequestLogger(logger, bindings);
  };
}

function isPino(logger: FastifyBaseLogger): logger is FastifyBaseLogger & Parent {
  return 'isLevelEnabled' in logger && typeof logger.isLevelEnabled === 'function';
}
