import pino, { type Logger } from 'pino';

/** Structured JSON logs. Credentials never reach them: headers are not logged and query strings are cut. */
export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'toolrun' },
      redact: {
        paths: ['req.headers.authorization', 'headers.authorization', '*.key', 'key', 'signing_secret', '*.signing_secret', 'password'],
        censor: '[redacted]',
      },
      serializers: {
        req: (req: { method?: string; url?: string; ip?: string }) => ({
          method: req.method,
          url: req.url?.split('?')[0],
          ip: req.ip,
        }),
      },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    destination,
  );
}
