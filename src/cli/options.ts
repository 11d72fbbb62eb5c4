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

/** An http(s) base URL such as PUBLIC_BASE_URL: no credentials, query or fragment; without trailing slashes. */
export const baseUrl = (name: string) => (raw: string) => {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new InvalidArgumentError(`${name} must be an http(s) URL such as https://toolrun.example.com, got "${raw}"`);
  }
  if (!['http:', 'https:'].includes(url.protocol) || url.username || url.password || url.search || url.hash) {
    throw new InvalidArgumentError(`${name} must be an http(s) URL such as https://toolrun.example.com (no credentials, query or fragment), got "${raw}"`);
  }
  return url.toString().replace(/\/+$/, '');
};
