import { InvalidArgumentError } from 'commander';
import type { Db } from '../db/pool.js';

/** Runs an admin action against an opened database and returns what to print. */
export type WithDb = (fn: (db: Db) => Promise<unknown>) => Promise<void>;

// Option parsers: a bad value is a usage error (exit 64), found before the database is opened.

export function integer(name: string, opts: { min?: number } = {}) {
  return (raw: string): number => {
    if (!/^-?\d+$/.test(raw)) throw new InvalidArgumentError(`${name} must be a whole number`);
    const n = Number(raw);
    if (!Number.isSafeInteger(n) || (opts.min !== undefined && n < opts.min)) {
      throw new InvalidArgumentError(`${name} must be a whole number${opts.min !== undefined ? ` >= ${opts.min}` : ''}`);
    }
    return n;
  };
}

export function oneOf<T extends string>(name: string, values: readonly T[]) {
  return (raw: string): T => {
    if (!values.includes(raw as T)) throw new InvalidArgumentError(`${name} must be one of ${values.join(', ')}`);
    return raw as T;
  };
}

export const uuid = (name: string) => (raw: string) => {
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(raw)) {
    throw new InvalidArgumentError(`${name} must be an id (a UUID), got "${raw}"`);
  }
  return raw.toLowerCase();
};
