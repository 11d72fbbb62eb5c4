/**
 * Errors that say PostgreSQL is away (stopped, restarting, frozen, out of connections), not that it
 * refused what was asked. pg reports a server shutting down as a DatabaseError (SQLSTATE 57P01
 * "terminating connection due to administrator command", 57P03 "the database system is shutting
 * down"), so the class of the error alone does not tell the two apart.
 */
const UNAVAILABLE_CODES = new Set(['57P01', '57P02', '57P03', '53300', 'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT']);

// Also pg's own: a query past the pool's query_timeout, a client whose connection already failed.
const UNAVAILABLE_MESSAGE =
  /ECONNREFUSED|ECONNRESET|ETIMEDOUT|Connection terminated|timeout exceeded when trying to connect|Query read timeout|is not queryable|the database system is (starting up|shutting down)|terminating connection due to administrator command/i;

export function isDbUnavailable(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return false;
  const e = err as { code?: unknown; message?: unknown };
  return (typeof e.code === 'string' && UNAVAILABLE_CODES.has(e.code)) || (typeof e.message === 'string' && UNAVAILABLE_MESSAGE.test(e.message));
}

/** An admin command found no Toolrun database where it was pointed (it never makes one). */
export class NoDatabaseError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'NoDatabaseError';
  }
}
