import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, test } from 'node:test';
import Fastify, { type FastifyBaseLogger } from 'fastify';
import { createLogger } from '../src/logger.js';
import { lazyRequestLoggers, RequestLogger } from '../src/http/request-logger.js';

function capture(level: string) {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const l of chunk.toString('utf8').split('\n')) if (l) lines.push(JSON.parse(l) as Record<string, unknown>);
      cb();
    },
  });
  return { logger: createLogger(level, stream), lines };
}

const flush = () => new Promise((resolve) => setImmediate(resolve));

describe('request loggers made on first use', () => {
  test('write what the eager pino child would: the request id, the app bindings, redaction', async () => {
    const { logger, lines } = capture('info');
    const log = lazyRequestLoggers()(logger, { request_id: 'r-1' }, {});
    assert.ok(log instanceof RequestLogger);
    log.info({ headers: { authorization: 'Bearer svc_test_secret' } }, 'hello %s', 'there');
    log.debug('not at info');
    logger.child({ request_id: 'r-1' }).info({ headers: { authorization: 'Bearer svc_test_secret' } }, 'hello %s', 'there');
    await flush();
    assert.equal(lines.length, 2);
    const [lazy, eager] = lines.map(({ time: _t, ...rest }) => rest);
    assert.deepEqual(lazy, eager);
    assert.equal(lazy?.request_id, 'r-1');
    assert.equal(lazy?.msg, 'hello there');
    assert.deepEqual(lazy?.headers, { authorization: '[redacted]' });
  });

  test('below the level nothing is written; the level is the app logger\'s until set', async () => {
    const { logger, lines } = capture('warn');
    const log = lazyRequestLoggers()(logger, { request_id: 'r-2' }, {});
    log.info('quiet');
    assert.equal(log.level, 'warn');
    log.warn('loud');
    log.level = 'debug';
    log.debug('now heard');
    assert.equal(logger.level, 'warn', 'the app logger keeps its level');
    await flush();
    assert.deepEqual(lines.map((l) => [l.msg, l.request_id]), [['loud', 'r-2'], ['now heard', 'r-2']]);
  });

  test('a route with its own level gets pino\'s child at once', () => {
    const { logger } = capture('warn');
    const log = lazyRequestLoggers()(logger, { request_id: 'r-3' }, { level: 'debug' });
    assert.ok(!(log instanceof RequestLogger));
    assert.equal(log.level, 'debug');
  });

  test('in a Fastify app, the lines are those of the default child (Fastify\'s serializers, the request id)', async () => {
    const run = async (lazy: boolean) => {
      const { logger, lines } = capture('info');
      const app = Fastify({
        loggerInstance: logger as FastifyBaseLogger,
        genReqId: () => 'req-1',
        requestIdLogLabel: 'request_id',
        ...(lazy ? { childLoggerFactory: lazyRequestLoggers() } : {}),
      });
      app.get('/x', async (request) => {
        request.log.warn({ note: 1 }, 'handler line');
        request.log.debug('not written');
        throw new Error('boom');
      });
      await app.inject('/x');
      await app.close();
      await flush();
      // The time and duration differ from run to run; the error by its message (stacks hold line numbers).
      return lines.map(({ time: _t, responseTime: _r, err, ...rest }): Record<string, unknown> =>
        err === undefined ? rest : { ...rest, err: (err as { message?: unknown }).message });
    };
    const eager = await run(false);
    const lazy = await run(true);
    assert.ok(eager.some((l) => l.msg === 'handler line' && l.request_id === 'req-1'));
    assert.ok(eager.some((l) => typeof l.res === 'object' && l.res !== null), 'the completion line has its serialized res');
    assert.deepEqual(lazy, eager);
  });
});
