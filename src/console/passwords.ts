import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';

export const MIN_PASSWORD_LENGTH = 12;
/** Longer passwords add nothing but hashing work an attacker could ask for. */
export const MAX_PASSWORD_LENGTH = 1024;

export interface ScryptParams {
  N: number;
  r: number;
  p: number;
}

/**
 * scrypt with N = 2^15, r = 8, p = 1 (32 MiB, about 85 ms on the reference machine), a 16-byte
 * random salt per password and a 32-byte result: OWASP's floor is N = 2^17 at r = 8 only for
 * interactive logins that can afford 128 MiB; 2^15 keeps concurrent sign-ins within memory while
 * costing an offline guesser 85 ms a try. The parameters are stored with each hash, so raising
 * them later only changes new hashes.
 */
export const CURRENT_PARAMS: ScryptParams = { N: 2 ** 15, r: 8, p: 1 };
const SALT_BYTES = 16;
const KEY_BYTES = 32;

function derive(password: string, salt: Buffer, params: ScryptParams): Promise<Buffer> {
  const opts: ScryptOptions = { N: params.N, r: params.r, p: params.p, maxmem: 128 * params.N * params.r * 2 };
  return new Promise((resolve, reject) => {
    scrypt(password.normalize('NFC'), salt, KEY_BYTES, opts, (err, key) => (err ? reject(err) : resolve(key)));
  });
}

/** `scrypt:N:r:p:<salt base64url>:<hash base64url>`. */
export async function hashPassword(password: string, params: ScryptParams = CURRENT_PARAMS): Promise<string> {
  const salt = randomBytes(SALT_BYTES);
  const key = await derive(password, salt, params);
  return ['scrypt', params.N, params.r, params.p, salt.toString('base64url'), key.toString('base64url')].join(':');
}

interface Parsed {
  params: ScryptParams;
  salt: Buffer;
  key: Buffer;
}

function parse(stored: string): Parsed | null {
  const parts = stored.split(':');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return null;
  const [N, r, p] = parts.slice(1, 4).map(Number);
  if (!N || !r || !p) return null;
  return { params: { N, r, p }, salt: Buffer.from(parts[4] ?? '', 'base64url'), key: Buffer.from(parts[5] ?? '', 'base64url') };
}

/** Compares in constant time; a stored hash this code cannot read matches nothing. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parsed = parse(stored);
  if (!parsed) return false;
  const key = await derive(password, parsed.salt, parsed.params);
  return key.length === parsed.key.length && timingSafeEqual(key, parsed.key);
}

/**
 * A hash of nothing anyone knows, with the current parameters: sign-in with an unknown email runs
 * scrypt against it, so it does the same work, and takes the same time, as a wrong password.
 */
export class DummyHash {
  private value: Promise<string> | null = null;
  get(): Promise<string> {
    return (this.value ??= hashPassword(randomBytes(32).toString('base64url')));
  }
}
