import pino, { type Logger } from 'pino';

/** A request's URL without its query string: signed storage URLs carry their signature there. */
export function pathOnly(url: string | undefined): string | undefined {
  if (url === undefined) return undefined;
  const cut = url.search(/[?#]/);
  return cut === -1 ? url : url.slice(0, cut);
}

/**
 * pino's error serializer, minus what pg hangs on its errors: `client` (the whole connection object,
 * with its parameters and buffers) would fill a line with internals no operator can use.
 */
function serializeError(err: unknown): unknown {
  const out = pino.stdSerializers.err(err as Error) as unknown as Record<string, unknown>;
  if (out && typeof out === 'object' && 'client' in out) delete out.client;
  return out;
}

/**
 * Structured JSON logs. Credentials never reach them: request headers are not serialised (the
 * Authorization header is redacted should a header object be logged anyway), request URLs are
 * logged without their query, and fields named like secrets are redacted wherever they appear
 * one level down. `npm test` scans the logs of the whole suite for anything that slips through.
 */
export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'toolrun' },
      redact: {
        paths: [
          'authorization',
          '*.authorization',
          'headers.authorization',
          'req.headers.authorization',
          'headers.cookie',
          'req.headers.cookie',
          'key',
          '*.key',
          'signing_secret',
          '*.signing_secret',
          'signature',
          '*.signature',
          'password',
          '*.password',
        ],
        censor: '[redacted]',
      },
      serializers: {
        err: serializeError,
        req: (req: { method?: string; url?: string; ip?: string }) => ({
          method: req.method,
          url: pathOnly(req.url),
          ip: req.ip,
        }),
      },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    destination,
  );
}
