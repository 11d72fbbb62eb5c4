import os from 'node:os';
import path from 'node:path';
import { retentionConfig, type RetentionConfig } from './retention.js';
import { readSecretFiles, s3Credentials, withPassword, type S3Credentials } from './secret-files.js';
import { bool, browserPath, ConfigError, type Env, int, str, trustProxy, url } from './values.js';

export { ConfigError } from './values.js';
export type { RetentionConfig } from './retention.js';

/** Parsed, typed configuration. Built once at start-up from the environment. */
export interface Config {
  env: string;
  production: boolean;
  keyEnvPrefix: 'svc_live_' | 'svc_test_';
  host: string;
  port: number;
  publicBaseUrl: string;
  /** Where publicBaseUrl came from: the variable, or the default http://HOST:PORT. */
  publicBaseUrlSource: 'PUBLIC_BASE_URL' | 'default';
  dataDir: string;
  databaseUrl: string | null;
  logLevel: string;
  bodyLimitBytes: number;
  /** Bounds on slow clients (slow-loris): see HttpTimeoutsConfig. */
  httpTimeouts: HttpTimeoutsConfig;
  /** How long a process keeps rate-limit tokens it took from a key's shared bucket. */
  rateReservationMs: number;
  /** The longest an API key's context is answered from memory without reading it again (0: never). */
  keyCacheMaxAgeMs: number;
  /** Lookups a second, per process, of keys not seen authenticate recently (0: no limit); see UnrecognisedKeyGate. */
  unrecognisedKeysPerSecond: number;
  /** Open event streams a process holds, in all and per team (the per-key bound is fixed: 10). */
  streams: HeldRequestBounds;
  /** `Prefer: wait` requests a process holds waiting, in all and per team (per key: 10). */
  waiters: HeldRequestBounds;
  /**
   * Which proxies in front of the service to believe about the client's address
   * (X-Forwarded-For), as Fastify's `trustProxy` takes it: false (none: the client is the peer of
   * the connection), a number of hops, or proxy addresses and CIDR blocks.
   */
  trustProxy: false | number | string[];
  workerConcurrency: number;
  allowPrivateNetwork: boolean;
  /** Chromium for brand_kit_extract's render mode (TOOLRUN_BROWSER_PATH); null: pages are read without a browser. */
  browserPath: string | null;
  /** The most memory one render (its child process and every Chromium process) may use, in MB (TOOLRUN_BROWSER_MEMORY_MB). */
  browserMemoryMb: number;
  demoSeed: boolean;
  storage: StorageConfig;
  files: FilesConfig;
  runs: RunsConfig;
  webhooks: WebhooksConfig;
  metrics: MetricsConfig;
  /** How long rows that only grow are kept (src/config/retention.ts). */
  retention: RetentionConfig;
}

export interface HeldRequestBounds {
  perProcess: number;
  /** One team's share of perProcess (a quarter unless set), so no team can take every place. */
  perTeam: number;
}

export interface MetricsConfig {
  /** Bearer token that GET /metrics requires; null: the endpoint answers 404 (off). */
  token: string | null;
  /** `toolrun worker` only: serve /metrics on this port of HOST (0: any free port); null: no listener. */
  port: number | null;
}

/** How long a client may take over each part of an HTTP exchange before its connection is closed. */
export interface HttpTimeoutsConfig {
  /** From the connection (or the end of the previous response) to the last request header. */
  headersMs: number;
  /** From the first request header to the last byte of a JSON body. */
  requestMs: number;
  /** A part PUT to local storage: several MiB over a slow link, so it has its own, larger bound. */
  partMs: number;
  /** How long an idle keep-alive connection is kept open for its next request. */
  keepAliveMs: number;
}

export interface WebhooksConfig {
  /** Seconds to wait before each retry after a failed attempt; then the delivery is given up. */
  retryDelaysSeconds: number[];
  /** An attempt succeeds only with a 2xx within this time. */
  timeoutMs: number;
  /** Deliveries one worker process sends at once. */
  concurrency: number;
  /**
   * An endpoint whose every delivery attempt has failed for this long (since the first failure
   * after its last success) is paused, reason "failing"; 0 never pauses for that (410 Gone still does).
   */
  pauseAfterFailingSeconds: number;
}

export interface RunsConfig {
  /** A worker renews its lease every third of this; a run whose lease lapses is taken back. */
  leaseSeconds: number;
  /** Workers also look for work this often, in case a notification was missed. */
  pollMs: number;
  /** Time limit for tools that do not set their own. */
  timeoutSeconds: number;
  maxOutputBytes: number;
  outputRetentionSeconds: number;
  /** On SIGTERM, how long running work may go on before it is stopped and handed back. */
  shutdownGraceSeconds: number;
  /** Threads one ffmpeg job may use (decoder, filters and encoder each). */
  ffmpegThreads: number;
  /** Runs of one team running at once, by plan, unless the team has its own value (issue 20). */
  teamConcurrency: TeamConcurrency;
}

export interface TeamConcurrency {
  free: number;
  plus: number;
  pro: number;
  team: number;
}

const TEAM_CONCURRENCY_DEFAULT = 'free=1,plus=2,pro=4,team=8';

/** `plan=n,...` for every plan, each n from 1 to 1000; a plan left out keeps its default. */
function teamConcurrency(env: Env): TeamConcurrency {
  const name = 'TOOLRUN_TEAM_CONCURRENCY';
  const out: TeamConcurrency = { free: 1, plus: 2, pro: 4, team: 8 };
  const raw = str(env, name, TEAM_CONCURRENCY_DEFAULT);
  for (const item of raw.split(',').map((s) => s.trim()).filter(Boolean)) {
    const m = /^(free|plus|pro|team)=(\d{1,4})$/.exec(item);
    const n = m ? Number(m[2]) : 0;
    if (!m || n < 1 || n > 1000) {
      throw new ConfigError(name, `must be plan=n pairs separated by commas (plans free, plus, pro, team; n from 1 to 1000), e.g. "${TEAM_CONCURRENCY_DEFAULT}"; got "${raw}"`);
    }
    out[m[1] as keyof TeamConcurrency] = n;
  }
  return out;
}

export type StorageConfig =
  | {
      kind: 'local';
      root: string;
      /** How long a replacing part PUT or a completion waits for another PUT of the same part (then 409 part_in_progress). */
      partLockWaitMs: number;
    }
  | {
      kind: 's3';
      bucket: string;
      prefix: string;
      region: string;
      endpoint: string | null;
      forcePathStyle: boolean;
      /** Set when credentials came from files (AWS_*_FILE); otherwise the AWS SDK's own chain. */
      credentials?: S3Credentials;
    };

export interface FilesConfig {
  maxFileBytes: number;
  partSizeBytes: number;
  partUrlTtlSeconds: number;
  downloadUrlTtlSeconds: number;
  uploadExpirySeconds: number;
  retentionSeconds: number;
}

const GIB = 1024 ** 3;
const MIB = 1024 ** 2;

function storageConfig(env: Env, dataDir: string, credentials: S3Credentials | null): StorageConfig {
  const raw = str(env, 'TOOLRUN_STORAGE', '');
  // Past a dead holder's lock expiry (2 minutes), so only a PUT still being written holds it longer.
  const partLockWaitMs = int(env, 'TOOLRUN_PART_LOCK_WAIT_MS', 150_000, 1_000, 3_600_000);
  if (raw === '' || raw === 'local') return { kind: 'local', root: path.join(dataDir, 'storage'), partLockWaitMs };
  if (raw.startsWith('file://')) return { kind: 'local', root: path.resolve(raw.slice('file://'.length)), partLockWaitMs };
  const m = /^s3:\/\/([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])(?:\/(.*))?$/.exec(raw);
  if (!m || !m[1]) {
    throw new ConfigError('TOOLRUN_STORAGE', `must be "local", file:///path or s3://bucket/prefix, got "${raw}"`);
  }
  const endpointRaw = env.TOOLRUN_S3_ENDPOINT || env.AWS_ENDPOINT_URL_S3 || env.AWS_ENDPOINT_URL || '';
  const endpoint = endpointRaw ? url(env, env.TOOLRUN_S3_ENDPOINT ? 'TOOLRUN_S3_ENDPOINT' : env.AWS_ENDPOINT_URL_S3 ? 'AWS_ENDPOINT_URL_S3' : 'AWS_ENDPOINT_URL', '', ['http:', 'https:']) : null;
  return {
    kind: 's3',
    bucket: m[1],
    prefix: (m[2] ?? '').replace(/^\/+|\/+$/g, ''),
    region: str(env, 'AWS_REGION', str(env, 'AWS_DEFAULT_REGION', 'us-east-1')),
    endpoint,
    // MinIO-like servers usually want path-style addressing; AWS itself does not.
    forcePathStyle: bool(env, 'TOOLRUN_S3_FORCE_PATH_STYLE', endpoint !== null),
    ...(credentials ? { credentials } : {}),
  };
}

function metricsConfig(env: Env): MetricsConfig {
  const raw = env.TOOLRUN_METRICS_TOKEN;
  let token: string | null = null;
  if (raw !== undefined && raw !== '') {
    // The characters of an RFC 6750 bearer token; long enough that it cannot be guessed.
    if (!/^[A-Za-z0-9._~+/=-]{16,512}$/.test(raw)) {
      throw new ConfigError(
        'TOOLRUN_METRICS_TOKEN',
        `must be 16 to 512 characters of A-Z a-z 0-9 . _ ~ + / = - (e.g. from "openssl rand -hex 32"), got ${raw.length} characters${/[^A-Za-z0-9._~+/=-]/.test(raw) ? ' with others among them' : ''}`,
      );
    }
    token = raw;
  }
  const portRaw = env.TOOLRUN_METRICS_PORT;
  const port = portRaw === undefined || portRaw === '' ? null : int(env, 'TOOLRUN_METRICS_PORT', 0, 0, 65535);
  if (port !== null && token === null) {
    // Without a token /metrics answers 404, so such a listener could only ever say "not found".
    throw new ConfigError('TOOLRUN_METRICS_PORT', 'needs TOOLRUN_METRICS_TOKEN: without a token /metrics is off');
  }
  return { token, port };
}

function httpTimeouts(env: Env): HttpTimeoutsConfig {
  const headersMs = int(env, 'TOOLRUN_HEADERS_TIMEOUT_MS', 20_000, 100, 600_000);
  const requestMs = int(env, 'TOOLRUN_REQUEST_TIMEOUT_MS', 30_000, 100, 3_600_000);
  if (requestMs < headersMs) {
    throw new ConfigError('TOOLRUN_REQUEST_TIMEOUT_MS', `must be at least TOOLRUN_HEADERS_TIMEOUT_MS (${headersMs}), got ${requestMs}`);
  }
  return {
    headersMs,
    requestMs,
    partMs: int(env, 'TOOLRUN_PART_TIMEOUT_MS', 600_000, 100, 86_400_000),
    keepAliveMs: int(env, 'TOOLRUN_KEEPALIVE_TIMEOUT_MS', 72_000, 100, 3_600_000),
  };
}

function heldRequestBounds(env: Env, processVar: string, teamVar: string): HeldRequestBounds {
  const perProcess = int(env, processVar, 1000, 1, 1_000_000);
  return { perProcess, perTeam: int(env, teamVar, Math.max(1, Math.floor(perProcess / 4)), 1, perProcess) };
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/**
 * Reads the environment once; a bad value throws a ConfigError naming the variable and what is
 * allowed. Secret settings may come from files instead (`<NAME>_FILE`, see secret-files.ts).
 */
export function loadConfig(rawEnv: Env = process.env, cwd: string = process.cwd()): Config {
  const secrets = readSecretFiles(rawEnv);
  const env = secrets.env;
  const envName = str(env, 'TOOLRUN_ENV', 'development');
  if (!/^[a-z][a-z0-9_-]*$/.test(envName)) {
    throw new ConfigError('TOOLRUN_ENV', `must be a lower-case name such as production or development, got "${envName}"`);
  }
  const production = envName === 'production';
  const host = str(env, 'HOST', '127.0.0.1');
  const port = int(env, 'PORT', 8080, 0, 65535);
  const defaultBase = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  const publicBaseUrl = url(env, 'PUBLIC_BASE_URL', defaultBase, ['http:', 'https:']).replace(/\/+$/, '');
  const databaseUrl = env.DATABASE_URL ? withPassword(url(env, 'DATABASE_URL', '', ['postgres:', 'postgresql:']), env.PGPASSWORD) : null;
  const logLevel = str(env, 'LOG_LEVEL', 'info');
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new ConfigError('LOG_LEVEL', `must be one of ${LOG_LEVELS.join(', ')}, got "${logLevel}"`);
  }
  const allowPrivateNetwork = bool(env, 'TOOLRUN_ALLOW_PRIVATE_NETWORK', false);
  if (allowPrivateNetwork && production) {
    throw new ConfigError('TOOLRUN_ALLOW_PRIVATE_NETWORK', 'is refused when TOOLRUN_ENV=production; unset it');
  }
  const dataDir = path.resolve(cwd, str(env, 'TOOLRUN_DATA_DIR', './data'));
  const maxFileBytes = int(env, 'TOOLRUN_MAX_FILE_BYTES', 5 * GIB, 1, 5 * 1024 * GIB);
  const partSizeBytes = int(env, 'TOOLRUN_PART_SIZE_BYTES', 8 * MIB, 1024, 5 * GIB);
  const storage = storageConfig(env, dataDir, s3Credentials(secrets));
  // S3 refuses parts under 5 MiB (all but the last) at completion; s3rver-style test servers do not.
  if (storage.kind === 's3' && partSizeBytes < 5 * MIB && !(bool(env, 'TOOLRUN_S3_ALLOW_SMALL_PARTS', false) && !production)) {
    throw new ConfigError('TOOLRUN_PART_SIZE_BYTES', `must be at least ${5 * MIB} (5 MiB) with S3 storage, got ${partSizeBytes}`);
  }
  // Where the store's minimum is known (AWS itself: no endpoint, or an amazonaws.com one), small
  // parts could never be assembled: refuse the test-only switch rather than every completion.
  if (storage.kind === 's3' && partSizeBytes < 5 * MIB && (storage.endpoint === null || /(^|\.)amazonaws\.com(\.cn)?$/.test(new URL(storage.endpoint).hostname))) {
    throw new ConfigError(
      'TOOLRUN_S3_ALLOW_SMALL_PARTS',
      `cannot take effect on AWS S3, whose minimum part size is ${5 * MIB} (5 MiB); set TOOLRUN_PART_SIZE_BYTES to at least that, got ${partSizeBytes}`,
    );
  }
  const retryRaw = env.TOOLRUN_WEBHOOK_RETRY_DELAYS;
  let retryDelaysSeconds = [60, 300, 1800, 7200, 43200];
  if (retryRaw !== undefined && retryRaw !== '') {
    if (production) throw new ConfigError('TOOLRUN_WEBHOOK_RETRY_DELAYS', 'is refused when TOOLRUN_ENV=production (the schedule is 60,300,1800,7200,43200 s); unset it');
    if (!/^\d+(,\d+)*$/.test(retryRaw.replace(/\s+/g, ''))) {
      throw new ConfigError('TOOLRUN_WEBHOOK_RETRY_DELAYS', `must be comma-separated whole seconds such as 1,2,3, got "${retryRaw}"`);
    }
    retryDelaysSeconds = retryRaw.replace(/\s+/g, '').split(',').map(Number);
  }
  const cores = typeof os.availableParallelism === 'function' ? os.availableParallelism() : os.cpus().length;
  return {
    env: envName,
    production,
    keyEnvPrefix: production ? 'svc_live_' : 'svc_test_',
    host,
    port,
    publicBaseUrl,
    publicBaseUrlSource: str(env, 'PUBLIC_BASE_URL', '') === '' ? 'default' : 'PUBLIC_BASE_URL',
    dataDir,
    databaseUrl,
    logLevel,
    bodyLimitBytes: int(env, 'TOOLRUN_BODY_LIMIT_BYTES', 1024 * 1024, 1024, 64 * 1024 * 1024),
    httpTimeouts: httpTimeouts(env),
    rateReservationMs: int(env, 'TOOLRUN_RATE_RESERVATION_MS', 1000, 1, 60_000),
    keyCacheMaxAgeMs: int(env, 'TOOLRUN_KEY_CACHE_MAX_AGE_MS', 5000, 0, 60_000),
    unrecognisedKeysPerSecond: int(env, 'TOOLRUN_UNRECOGNISED_KEYS_PER_SECOND', 500, 0, 1_000_000),
    streams: heldRequestBounds(env, 'TOOLRUN_STREAMS_PER_PROCESS', 'TOOLRUN_STREAMS_PER_TEAM'),
    waiters: heldRequestBounds(env, 'TOOLRUN_WAITERS_PER_PROCESS', 'TOOLRUN_WAITERS_PER_TEAM'),
    trustProxy: trustProxy(env),
    workerConcurrency: int(env, 'TOOLRUN_WORKER_CONCURRENCY', Math.max(1, cores - 1), 1, 256),
    allowPrivateNetwork,
    browserPath: browserPath(env),
    browserMemoryMb: int(env, 'TOOLRUN_BROWSER_MEMORY_MB', 1024, 256, 64 * 1024),
    demoSeed: bool(env, 'TOOLRUN_DEMO_SEED', !production),
    storage,
    webhooks: {
      retryDelaysSeconds,
      timeoutMs: 10_000,
      concurrency: int(env, 'TOOLRUN_WEBHOOK_CONCURRENCY', 16, 1, 256),
      pauseAfterFailingSeconds: int(env, 'TOOLRUN_WEBHOOK_PAUSE_AFTER_FAILING_SECONDS', 5 * 86400, 0, 365 * 86400),
    },
    runs: {
      leaseSeconds: int(env, 'TOOLRUN_LEASE_SECONDS', 30, 3, 3600),
      pollMs: int(env, 'TOOLRUN_WORKER_POLL_MS', 5000, 50, 60_000),
      timeoutSeconds: int(env, 'TOOLRUN_RUN_TIMEOUT_SECONDS', 900, 1, 86_400),
      maxOutputBytes: int(env, 'TOOLRUN_MAX_OUTPUT_BYTES', 4 * GIB, 1024, 5 * 1024 * GIB),
      outputRetentionSeconds: int(env, 'TOOLRUN_OUTPUT_RETENTION_SECONDS', 7 * 86400, 60, 365 * 86400),
      shutdownGraceSeconds: int(env, 'TOOLRUN_SHUTDOWN_GRACE_SECONDS', 30, 0, 3600),
      ffmpegThreads: int(env, 'TOOLRUN_FFMPEG_THREADS', 2, 1, 16),
      teamConcurrency: teamConcurrency(env),
    },
    files: {
      maxFileBytes,
      partSizeBytes,
      partUrlTtlSeconds: int(env, 'TOOLRUN_PART_URL_TTL_SECONDS', 3600, 60, 7 * 86400),
      downloadUrlTtlSeconds: int(env, 'TOOLRUN_DOWNLOAD_URL_TTL_SECONDS', 300, 10, 86400),
      uploadExpirySeconds: int(env, 'TOOLRUN_UPLOAD_EXPIRY_SECONDS', 86400, 60, 30 * 86400),
      retentionSeconds: int(env, 'TOOLRUN_FILE_RETENTION_SECONDS', 7 * 86400, 60, 365 * 86400),
    },
    metrics: metricsConfig(env),
    retention: retentionConfig(env),
  };
}
