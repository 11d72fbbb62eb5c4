import os from 'node:os';
import path from 'node:path';

/** Parsed, typed configuration. Built once at start-up from the environment. */
export interface Config {
  env: string;
  production: boolean;
  keyEnvPrefix: 'svc_live_' | 'svc_test_';
  host: string;
  port: number;
  publicBaseUrl: string;
  dataDir: string;
  databaseUrl: string | null;
  logLevel: string;
  bodyLimitBytes: number;
  workerConcurrency: number;
  allowPrivateNetwork: boolean;
  demoSeed: boolean;
}

export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    message: string,
  ) {
    super(`${variable}: ${message}`);
    this.name = 'ConfigError';
  }
}

type Env = Record<string, string | undefined>;

function str(env: Env, name: string, fallback: string): string {
  const value = env[name];
  return value === undefined || value === '' ? fallback : value;
}

function int(env: Env, name: string, fallback: number, min: number, max: number): number {
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

function bool(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (['1', 'true', 'yes', 'on'].includes(raw.toLowerCase())) return true;
  if (['0', 'false', 'no', 'off'].includes(raw.toLowerCase())) return false;
  throw new ConfigError(name, `must be 1/true/yes/on or 0/false/no/off, got "${raw}"`);
}

function url(env: Env, name: string, fallback: string, protocols: string[]): string {
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

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/** Reads the environment once; a bad value throws a ConfigError naming the variable and what is allowed. */
export function loadConfig(env: Env = process.env, cwd: string = process.cwd()): Config {
  const envName = str(env, 'TOOLRUN_ENV', 'development');
  if (!/^[a-z][a-z0-9_-]*$/.test(envName)) {
    throw new ConfigError('TOOLRUN_ENV', `must be a lower-case name such as production or development, got "${envName}"`);
  }
  const production = envName === 'production';
  const host = str(env, 'HOST', '127.0.0.1');
  const port = int(env, 'PORT', 8080, 0, 65535);
  const defaultBase = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  const publicBaseUrl = url(env, 'PUBLIC_BASE_URL', defaultBase, ['http:', 'https:']).replace(/\/+$/, '');
  const databaseUrl = env.DATABASE_URL ? url(env, 'DATABASE_URL', '', ['postgres:', 'postgresql:']) : null;
  const logLevel = str(env, 'LOG_LEVEL', 'info');
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new ConfigError('LOG_LEVEL', `must be one of ${LOG_LEVELS.join(', ')}, got "${logLevel}"`);
  }
  const allowPrivateNetwork = bool(env, 'TOOLRUN_ALLOW_PRIVATE_NETWORK', false);
  if (allowPrivateNetwork && production) {
    throw new ConfigError('TOOLRUN_ALLOW_PRIVATE_NETWORK', 'is refused when TOOLRUN_ENV=production; unset it');
  }
  const cores = typeof os.availableParallelism === 'function' ? os.availableParallelism() : os.cpus().length;
  return {
    env: envName,
    production,
    keyEnvPrefix: production ? 'svc_live_' : 'svc_test_',
    host,
    port,
    publicBaseUrl,
    dataDir: path.resolve(cwd, str(env, 'TOOLRUN_DATA_DIR', './data')),
    databaseUrl,
    logLevel,
    bodyLimitBytes: int(env, 'TOOLRUN_BODY_LIMIT_BYTES', 1024 * 1024, 1024, 64 * 1024 * 1024),
    workerConcurrency: int(env, 'TOOLRUN_WORKER_CONCURRENCY', Math.max(1, cores - 1), 1, 256),
    allowPrivateNetwork,
    demoSeed: bool(env, 'TOOLRUN_DEMO_SEED', !production),
  };
}
