import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';

/**
 * The readers of single settings: each takes the environment and a variable's name, and throws a
 * ConfigError naming the variable and what it allows when the value is bad.
 */

export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    message: string,
  ) {
    super(`${variable}: ${message}`);
    this.name = 'ConfigError';
  }
}

export type Env = Record<string, string | undefined>;

export function str(env: Env, name: string, fallback: string): string {
  const value = env[name];
  return value === undefined || value === '' ? fallback : value;
}

export function int(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw.trim())) {
    throw new ConfigError(name, `must be a whole number from ${min} to ${max}, got "${raw}"`);
  }
  const value = Number(raw.trim());
  if (value < min || value > max) {
    throw new ConfigError(name, `must be a whole number from ${min} to ${max}, got ${value}`);
  }
  return value;
}

export function bool(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (['1', 'true', 'yes', 'on'].includes(raw.toLowerCase())) return true;
  if (['0', 'false', 'no', 'off'].includes(raw.toLowerCase())) return false;
  throw new ConfigError(name, `must be 1/true/yes/on or 0/false/no/off, got "${raw}"`);
}

export function url(env: Env, name: string, fallback: string, protocols: string[]): string {
  const raw = str(env, name, fallback);
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new ConfigError(name, `must be a URL (${protocols.join(' or ')}), got "${raw}"`);
  }
  if (!protocols.includes(parsed.protocol)) {
    throw new ConfigError(name, `must use ${protocols.join(' or ')}, got "${parsed.protocol}"`);
  }
  return raw;
}

const PROXY_NAMES = ['loopback', 'linklocal', 'uniquelocal'];

export function trustProxy(env: Env): false | number | string[] {
  const name = 'TOOLRUN_TRUST_PROXY';
  const raw = str(env, name, '').trim();
  if (raw === '') return false;
  if (/^\d+$/.test(raw)) return int(env, name, 0, 1, 20);
  if (/^(true|all|\*)$/i.test(raw)) {
    throw new ConfigError(
      name,
      `"${raw}" would believe X-Forwarded-For from anyone, letting a client pick its own address; give the number of proxies in front (e.g. 1) or their addresses (e.g. 10.0.0.0/8)`,
    );
  }
  const entries = raw.split(',').map((e) => e.trim());
  for (const entry of entries) {
    if (PROXY_NAMES.includes(entry)) continue;
    const [address = '', bits, extra] = entry.split('/');
    const family = net.isIP(address);
    const maxBits = family === 6 ? 128 : 32;
    const bitsOk = bits === undefined || (/^\d+$/.test(bits) && Number(bits) <= maxBits);
    if (!family || !bitsOk || extra !== undefined) {
      throw new ConfigError(
        name,
        `must be a number of proxy hops (1 to 20) or a comma-separated list of proxy addresses, CIDR blocks and ${PROXY_NAMES.join(', ')}; "${entry}" is none of these`,
      );
    }
  }
  return entries;
}

/** An executable file, checked at start-up so a wrong path stops the service instead of every render. */
export function browserPath(env: Env): string | null {
  const name = 'TOOLRUN_BROWSER_PATH';
  const raw = str(env, name, '');
  if (raw === '') return null;
  if (!path.isAbsolute(raw)) throw new ConfigError(name, `must be the absolute path of a Chromium executable (e.g. /usr/bin/chromium), got "${raw}"`);
  try {
    if (!fs.statSync(raw).isFile()) throw new Error('not a file');
    fs.accessSync(raw, fs.constants.X_OK);
  } catch {
    throw new ConfigError(name, `must be the path of an executable Chromium (e.g. /usr/bin/chromium); "${raw}" is not an executable file`);
  }
  return raw;
}
