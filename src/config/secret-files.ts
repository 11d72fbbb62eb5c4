import fs from 'node:fs';
import { ConfigError, type Env } from './values.js';

/**
 * The settings that hold credentials. Each may be given instead as `<NAME>_FILE`, the path of a
 * file holding the value: Docker, compose and Kubernetes hand secrets to a container as files, and
 * a value read from a file is not in the process's environment, in `docker inspect` or in a
 * compose file. PGPASSWORD is PostgreSQL's own: the password for a DATABASE_URL that names none.
 */
export const SECRET_SETTINGS = [
  'DATABASE_URL',
  'PGPASSWORD',
  'TOOLRUN_METRICS_TOKEN',
  'AWS_ACCESS_KEY_ID',
  'AWS_SECRET_ACCESS_KEY',
  'AWS_SESSION_TOKEN',
] as const;

export type SecretSetting = (typeof SECRET_SETTINGS)[number];

export interface SecretFiles {
  /** The environment with each `<NAME>_FILE` read into `<NAME>`. */
  env: Env;
  /** The settings whose value came from a file. */
  fromFiles: Set<SecretSetting>;
}

function readSecret(variable: string, file: string): string {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? String(err);
    throw new ConfigError(variable, `cannot read the file "${file}" (${code})`);
  }
  // The line ends an editor or `echo` leaves after the value are not part of it.
  const value = text.replace(/[\r\n]+$/, '');
  if (value === '') throw new ConfigError(variable, `the file "${file}" is empty`);
  return value;
}

/**
 * Reads every `<NAME>_FILE` of a secret setting. Setting both `<NAME>` and `<NAME>_FILE` is refused:
 * which one wins would be a guess, and a stale value left in the environment would go unnoticed.
 */
export function readSecretFiles(env: Env): SecretFiles {
  const fromFiles = new Set<SecretSetting>();
  let out: Env | null = null;
  for (const name of SECRET_SETTINGS) {
    const fileVariable = `${name}_FILE`;
    const file = env[fileVariable];
    if (file === undefined || file === '') continue;
    if (env[name] !== undefined && env[name] !== '') {
      throw new ConfigError(fileVariable, `is set together with ${name}: set only one of them`);
    }
    out ??= { ...env };
    out[name] = readSecret(fileVariable, file);
    fromFiles.add(name);
  }
  return { env: out ?? env, fromFiles };
}

/** DATABASE_URL with PGPASSWORD put in when the URL names no password of its own. */
export function withPassword(databaseUrl: string, password: string | undefined): string {
  if (password === undefined || password === '') return databaseUrl;
  const u = new URL(databaseUrl);
  if (u.password !== '' || u.searchParams.has('password')) return databaseUrl;
  // Encoded whole: the setter alone would leave a % as it is, which the driver then decodes.
  u.password = encodeURIComponent(password);
  // A URL without a host (a Unix socket: postgres:///toolrun?host=/run/postgresql) holds no
  // password before the host; the driver reads one from the query too.
  if (u.password === '') u.searchParams.set('password', password);
  return u.toString();
}

export interface S3Credentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

const AWS_SECRETS: SecretSetting[] = ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_SESSION_TOKEN'];

/**
 * S3 credentials to hand the client when some of them came from files (the AWS SDK reads only the
 * environment itself); null leaves the SDK's usual chain (environment, shared files, roles).
 */
export function s3Credentials(secrets: SecretFiles): S3Credentials | null {
  if (!AWS_SECRETS.some((name) => secrets.fromFiles.has(name))) return null;
  const { AWS_ACCESS_KEY_ID: accessKeyId, AWS_SECRET_ACCESS_KEY: secretAccessKey, AWS_SESSION_TOKEN: sessionToken } = secrets.env;
  const missing = (name: string) => new ConfigError(name, `is needed (or ${name}_FILE) when another AWS credential comes from a file`);
  if (!accessKeyId) throw missing('AWS_ACCESS_KEY_ID');
  if (!secretAccessKey) throw missing('AWS_SECRET_ACCESS_KEY');
  return { accessKeyId, secretAccessKey, ...(sessionToken ? { sessionToken } : {}) };
}
