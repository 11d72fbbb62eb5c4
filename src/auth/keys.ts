import { createHash, hash, randomInt, timingSafeEqual } from 'node:crypto';

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
export const KEY_PREFIX_LENGTH = 8;
export const KEY_SECRET_LENGTH = 32;
const KEY_PATTERN = /^svc_(live|test)_([A-Za-z0-9]{8})([A-Za-z0-9]{32})$/;
const BEARER = 'Bearer ';
const CANONICAL = /^Bearer svc_(?:live|test)_[A-Za-z0-9]{40}$/;
const CANONICAL_LENGTH = BEARER.length + 'svc_live_'.length + 40;

export type EnvPrefix = 'svc_live_' | 'svc_test_';

function randomString(length: number): string {
  let out = '';
  for (let i = 0; i < length; i++) out += ALPHABET[randomInt(ALPHABET.length)];
  return out;
}

/** SHA-256 is enough: keys carry ~190 random bits, so there is nothing to brute-force. */
export function hashKey(key: string): Buffer {
  return createHash('sha256').update(key, 'utf8').digest();
}

/**
 * The same hash in hex, as the request path uses it (the key cache and the unseen-key gate are
 * keyed by it). The one-shot `crypto.hash` with a text digest costs about a fifth of
 * createHash().update().digest() plus toString('hex'), and leaves no Hash object to collect.
 */
export function hashKeyHex(key: string): string {
  return hash('sha256', key, 'hex');
}

export interface NewKey {
  key: string;
  prefix: string;
  hash: Buffer;
}

export function generateKey(envPrefix: EnvPrefix): NewKey {
  const prefix = randomString(KEY_PREFIX_LENGTH);
  const key = `${envPrefix}${prefix}${randomString(KEY_SECRET_LENGTH)}`;
  return { key, prefix, hash: hashKey(key) };
}

export type ParsedToken =
  | { kind: 'none' }
  | { kind: 'not_a_key' }
  | { kind: 'malformed' }
  | { kind: 'wrong_env' }
  /** hashHex: the hex of the key's SHA-256 (hashKeyHex), what the request path looks keys up by. */
  | { kind: 'key'; hashHex: string };

/**
 * Classifies an Authorization header before any database work. Another scheme (Basic, ...) or a
 * Bearer token that is not an `svc_` key (a session token) means no API key was sent; a Bearer
 * credential that starts like a key but is not exactly one key is a malformed key.
 */
export function parseAuthorization(header: string | undefined, envPrefix: EnvPrefix): ParsedToken {
  if (header === undefined) return { kind: 'none' };
  // What clients send: exactly "Bearer <key>" of this environment. Decided with one test that
  // allocates nothing; any other shape takes the general path below, which gives it the same answer.
  if (header.length === CANONICAL_LENGTH && header.startsWith(envPrefix, BEARER.length) && CANONICAL.test(header)) {
    return { kind: 'key', hashHex: hashKeyHex(header.slice(BEARER.length)) };
  }
  const match = /^Bearer(?:[ \t]+(.*))?$/i.exec(header.trim());
  if (!match) return { kind: 'none' };
  const token = (match[1] ?? '').trim();
  if (token === '') return { kind: 'none' };
  if (!token.startsWith('svc_')) return { kind: 'not_a_key' };
  const parts = KEY_PATTERN.exec(token);
  if (!parts) return { kind: 'malformed' };
  if (`svc_${parts[1]}_` !== envPrefix) return { kind: 'wrong_env' };
  return { kind: 'key', hashHex: hashKeyHex(token) };
}

export function sameHash(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}
