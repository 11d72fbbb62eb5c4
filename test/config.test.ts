import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { parse as parseConnectionString } from 'pg-connection-string';
import { ConfigError, loadConfig } from '../src/config/config.js';
import { SECRET_SETTINGS } from '../src/config/secret-files.js';
import { S3Storage } from '../src/storage/s3.js';

function configError(env: Record<string, string>): ConfigError {
  try {
    loadConfig(env, '/srv/app');
  } catch (err) {
    assert.ok(err instanceof ConfigError, `expected a ConfigError, got ${String(err)}`);
    return err;
  }
  assert.fail(`expected ${JSON.stringify(env)} to be refused`);
}

describe('configuration', () => {
  test('defaults serve on 127.0.0.1:8080 with data under ./data and test keys', () => {
    const c = loadConfig({}, '/srv/app');
    assert.equal(c.host, '127.0.0.1');
    assert.equal(c.port, 8080);
    assert.equal(c.dataDir, path.resolve('/srv/app', 'data'));
    assert.equal(c.databaseUrl, null);
    assert.equal(c.env, 'development');
    assert.equal(c.production, false);
    assert.equal(c.keyEnvPrefix, 'svc_test_');
    assert.equal(c.publicBaseUrl, 'http://127.0.0.1:8080');
    assert.equal(c.demoSeed, true);
    assert.ok(c.workerConcurrency >= 1);
  });

  test('production issues and accepts live keys and never seeds a demo team', () => {
    const c = loadConfig({ TOOLRUN_ENV: 'production', PUBLIC_BASE_URL: 'https://api.example.com/' }, '/srv/app');
    assert.equal(c.keyEnvPrefix, 'svc_live_');
    assert.equal(c.demoSeed, false);
    assert.equal(c.publicBaseUrl, 'https://api.example.com');
  });

  test('reads every documented variable', () => {
    const c = loadConfig(
      {
        PORT: '9000',
        HOST: '0.0.0.0',
        TOOLRUN_DATA_DIR: '/var/lib/toolrun',
        DATABASE_URL: 'postgres://u@db:5432/toolrun',
        PUBLIC_BASE_URL: 'https://tools.example.com',
        LOG_LEVEL: 'debug',
        TOOLRUN_WORKER_CONCURRENCY: '4',
        TOOLRUN_ALLOW_PRIVATE_NETWORK: '1',
      },
      '/srv/app',
    );
    assert.equal(c.port, 9000);
    assert.equal(c.host, '0.0.0.0');
    assert.equal(c.dataDir, '/var/lib/toolrun');
    assert.equal(c.databaseUrl, 'postgres://u@db:5432/toolrun');
    assert.equal(c.publicBaseUrl, 'https://tools.example.com');
    assert.equal(c.logLevel, 'debug');
    assert.equal(c.workerConcurrency, 4);
    assert.equal(c.allowPrivateNetwork, true);
  });

  test('S3 storage from TOOLRUN_STORAGE with an endpoint', () => {
    const c = loadConfig({ TOOLRUN_STORAGE: 's3://media-bucket/tool/run/', TOOLRUN_S3_ENDPOINT: 'http://127.0.0.1:9000', AWS_REGION: 'eu-west-1' }, '/srv/app');
    assert.deepEqual(c.storage, {
      kind: 's3',
      bucket: 'media-bucket',
      prefix: 'tool/run',
      region: 'eu-west-1',
      endpoint: 'http://127.0.0.1:9000',
      forcePathStyle: true,
    });
    assert.deepEqual(loadConfig({}, '/srv/app').storage, { kind: 'local', root: '/srv/app/data/storage', partLockWaitMs: 150_000 });
    assert.equal(loadConfig({}, '/srv/app').files.maxFileBytes, 5 * 1024 ** 3);
    assert.equal(loadConfig({}, '/srv/app').files.partSizeBytes, 8 * 1024 ** 2);
  });

  test('TOOLRUN_TRUST_PROXY: unset believes no proxy; a hop count or a list of proxies, production included', () => {
    assert.equal(loadConfig({}, '/srv/app').trustProxy, false);
    assert.equal(loadConfig({ TOOLRUN_TRUST_PROXY: '2' }, '/srv/app').trustProxy, 2);
    assert.deepEqual(loadConfig({ TOOLRUN_ENV: 'production', TOOLRUN_TRUST_PROXY: ' 10.0.0.0/8, fd00::/8,loopback ,192.0.2.7' }, '/srv/app').trustProxy, [
      '10.0.0.0/8',
      'fd00::/8',
      'loopback',
      '192.0.2.7',
    ]);
  });

  const refused: [Record<string, string>, string, RegExp][] = [
    [{ PORT: 'abc' }, 'PORT', /whole number from 0 to 65535/],
    [{ PORT: '70000' }, 'PORT', /whole number from 0 to 65535/],
    [{ DATABASE_URL: 'mysql://x' }, 'DATABASE_URL', /postgres: or postgresql:/],
    [{ DATABASE_URL: 'not a url' }, 'DATABASE_URL', /must be a URL/],
    [{ PUBLIC_BASE_URL: 'ftp://x' }, 'PUBLIC_BASE_URL', /http: or https:/],
    [{ LOG_LEVEL: 'loud' }, 'LOG_LEVEL', /one of fatal, error/],
    [{ TOOLRUN_ENV: 'Prod uction' }, 'TOOLRUN_ENV', /lower-case name/],
    [{ TOOLRUN_WORKER_CONCURRENCY: '0' }, 'TOOLRUN_WORKER_CONCURRENCY', /from 1 to 256/],
    [{ TOOLRUN_ALLOW_PRIVATE_NETWORK: 'maybe' }, 'TOOLRUN_ALLOW_PRIVATE_NETWORK', /1\/true/],
    [{ TOOLRUN_ENV: 'production', TOOLRUN_ALLOW_PRIVATE_NETWORK: '1' }, 'TOOLRUN_ALLOW_PRIVATE_NETWORK', /refused when TOOLRUN_ENV=production/],
    [{ TOOLRUN_STORAGE: 'ftp://x' }, 'TOOLRUN_STORAGE', /s3:\/\/bucket\/prefix/],
    [{ TOOLRUN_STORAGE: 's3://b' }, 'TOOLRUN_STORAGE', /s3:\/\/bucket\/prefix/],
    [{ TOOLRUN_STORAGE: 's3://bucket', TOOLRUN_PART_SIZE_BYTES: '1048576' }, 'TOOLRUN_PART_SIZE_BYTES', /at least 5242880/],
    [
      { TOOLRUN_ENV: 'production', TOOLRUN_STORAGE: 's3://bucket', TOOLRUN_PART_SIZE_BYTES: '1048576', TOOLRUN_S3_ALLOW_SMALL_PARTS: '1' },
      'TOOLRUN_PART_SIZE_BYTES',
      /at least 5242880/,
    ],
    [{ TOOLRUN_PART_SIZE_BYTES: '100' }, 'TOOLRUN_PART_SIZE_BYTES', /from 1024/],
    [{ TOOLRUN_S3_ENDPOINT: 'nope', TOOLRUN_STORAGE: 's3://bucket' }, 'TOOLRUN_S3_ENDPOINT', /must be a URL/],
    [{ TOOLRUN_TRUST_PROXY: 'true' }, 'TOOLRUN_TRUST_PROXY', /believe X-Forwarded-For from anyone/],
    [{ TOOLRUN_TRUST_PROXY: '*' }, 'TOOLRUN_TRUST_PROXY', /believe X-Forwarded-For from anyone/],
    [{ TOOLRUN_TRUST_PROXY: '0' }, 'TOOLRUN_TRUST_PROXY', /from 1 to 20/],
    [{ TOOLRUN_TRUST_PROXY: '10.0.0.0/33' }, 'TOOLRUN_TRUST_PROXY', /"10\.0\.0\.0\/33" is none of these/],
    [{ TOOLRUN_TRUST_PROXY: '10.0.0.1,lb.internal' }, 'TOOLRUN_TRUST_PROXY', /"lb\.internal" is none of these/],
    [{ TOOLRUN_TRUST_PROXY: '10.0.0.1,' }, 'TOOLRUN_TRUST_PROXY', /"" is none of these/],
  ];
  for (const [env, variable, pattern] of refused) {
    test(`refuses ${JSON.stringify(env)} naming ${variable}`, () => {
      const err = configError(env);
      assert.equal(err.variable, variable);
      assert.match(err.message, new RegExp(`^${variable}: `));
      assert.match(err.message, pattern);
    });
  }
});

describe('secret settings from files (<NAME>_FILE)', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'toolrun-config-secrets-'));
  after(() => fs.rmSync(dir, { recursive: true, force: true }));
  let n = 0;
  /** A file holding `content`, as a compose or Kubernetes secret is mounted. */
  const secretFile = (content: string): string => {
    const file = path.join(dir, `secret-${++n}`);
    fs.writeFileSync(file, content, { mode: 0o600 });
    return file;
  };
  const s3 = { TOOLRUN_STORAGE: 's3://media-bucket/p', TOOLRUN_S3_ENDPOINT: 'http://127.0.0.1:9000' };

  test('DATABASE_URL_FILE and TOOLRUN_METRICS_TOKEN_FILE give what DATABASE_URL and TOOLRUN_METRICS_TOKEN give; line ends after the value are dropped', () => {
    const fromEnv = loadConfig({ DATABASE_URL: 'postgres://toolrun:s3cret@db:5432/toolrun', TOOLRUN_METRICS_TOKEN: 'a'.repeat(32) }, '/srv/app');
    const fromFiles = loadConfig(
      { DATABASE_URL_FILE: secretFile('postgres://toolrun:s3cret@db:5432/toolrun\n'), TOOLRUN_METRICS_TOKEN_FILE: secretFile(`${'a'.repeat(32)}\r\n`) },
      '/srv/app',
    );
    assert.equal(fromFiles.databaseUrl, 'postgres://toolrun:s3cret@db:5432/toolrun');
    assert.equal(fromFiles.metrics.token, 'a'.repeat(32));
    assert.deepEqual(fromFiles, fromEnv);
  });

  test('PGPASSWORD_FILE: the password of a DATABASE_URL that names none, any characters kept as they are', () => {
    const password = 'p@ss:w/rd% é#?&+';
    const c = loadConfig({ DATABASE_URL: 'postgres://toolrun@db:5432/toolrun', PGPASSWORD_FILE: secretFile(`${password}\n`) }, '/srv/app');
    assert.ok(c.databaseUrl);
    const parsed = parseConnectionString(c.databaseUrl);
    assert.equal(parsed.password, password);
    assert.equal(parsed.user, 'toolrun');
    assert.equal(parsed.host, 'db');
    assert.equal(parsed.database, 'toolrun');
    // A socket URL has no place for a password before the host: it goes in the query.
    const socket = loadConfig({ DATABASE_URL: 'postgres:///toolrun?host=/run/postgresql', PGPASSWORD_FILE: secretFile(password) }, '/srv/app');
    assert.ok(socket.databaseUrl);
    assert.equal(parseConnectionString(socket.databaseUrl).password, password);
    assert.equal(parseConnectionString(socket.databaseUrl).host, '/run/postgresql');
    // A password in the URL wins, as it does for PostgreSQL's own PGPASSWORD.
    const own = loadConfig({ DATABASE_URL: 'postgres://toolrun:mine@db/toolrun', PGPASSWORD_FILE: secretFile(password) }, '/srv/app');
    assert.equal(own.databaseUrl, 'postgres://toolrun:mine@db/toolrun');
  });

  test('AWS_*_FILE: S3 credentials handed to the client; without files the SDK keeps its own chain', () => {
    const c = loadConfig(
      { ...s3, AWS_ACCESS_KEY_ID_FILE: secretFile('AKIDEXAMPLE\n'), AWS_SECRET_ACCESS_KEY_FILE: secretFile('wJalrXUtnFEMI/K7MDENG\n'), AWS_SESSION_TOKEN_FILE: secretFile('token\n') },
      '/srv/app',
    );
    assert.equal(c.storage.kind, 's3');
    assert.deepEqual(c.storage.kind === 's3' && c.storage.credentials, { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG', sessionToken: 'token' });
    // One from a file, one from the environment: both go to the client.
    const mixed = loadConfig({ ...s3, AWS_ACCESS_KEY_ID: 'AKIDEXAMPLE', AWS_SECRET_ACCESS_KEY_FILE: secretFile('secret') }, '/srv/app');
    assert.deepEqual(mixed.storage.kind === 's3' && mixed.storage.credentials, { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret' });
    const plain = loadConfig({ ...s3, AWS_ACCESS_KEY_ID: 'AKIDEXAMPLE', AWS_SECRET_ACCESS_KEY: 'secret' }, '/srv/app');
    assert.equal(plain.storage.kind === 's3' && 'credentials' in plain.storage, false);
    const err = configError({ ...s3, AWS_SECRET_ACCESS_KEY_FILE: secretFile('secret') });
    assert.equal(err.variable, 'AWS_ACCESS_KEY_ID');
    assert.match(err.message, /AWS_ACCESS_KEY_ID_FILE\) when another AWS credential comes from a file/);
  });

  test('AWS keys from files are the ones the S3 client signs with, whatever the environment holds', async () => {
    const c = loadConfig({ ...s3, AWS_ACCESS_KEY_ID_FILE: secretFile('AKIDFROMFILE\n'), AWS_SECRET_ACCESS_KEY_FILE: secretFile('secret-from-file\n') }, '/srv/app');
    assert.equal(c.storage.kind, 's3');
    if (c.storage.kind !== 's3') return;
    const storage = new S3Storage(c.storage);
    const saved = { id: process.env.AWS_ACCESS_KEY_ID, secret: process.env.AWS_SECRET_ACCESS_KEY };
    // The SDK's own chain would find these first.
    process.env.AWS_ACCESS_KEY_ID = 'AKIDFROMENV';
    process.env.AWS_SECRET_ACCESS_KEY = 'secret-from-env';
    try {
      const used = await storage.client.config.credentials();
      assert.equal(used.accessKeyId, 'AKIDFROMFILE');
      assert.equal(used.secretAccessKey, 'secret-from-file');
    } finally {
      for (const [name, value] of [['AWS_ACCESS_KEY_ID', saved.id], ['AWS_SECRET_ACCESS_KEY', saved.secret]] as const) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
      storage.client.destroy();
    }
  });

  test('every secret setting takes <NAME>_FILE, and refuses both at once naming <NAME>_FILE', () => {
    assert.deepEqual([...SECRET_SETTINGS].sort(), ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_SESSION_TOKEN', 'DATABASE_URL', 'PGPASSWORD', 'TOOLRUN_METRICS_TOKEN']);
    const values: Record<string, string> = {
      DATABASE_URL: 'postgres://toolrun@db:5432/toolrun',
      PGPASSWORD: 'pw',
      TOOLRUN_METRICS_TOKEN: 'b'.repeat(32),
      AWS_ACCESS_KEY_ID: 'AKIDEXAMPLE',
      AWS_SECRET_ACCESS_KEY: 'secret',
      AWS_SESSION_TOKEN: 'token',
    };
    for (const name of SECRET_SETTINGS) {
      const value = values[name] ?? '';
      const err = configError({ ...s3, [name]: value, [`${name}_FILE`]: secretFile(value) });
      assert.equal(err.variable, `${name}_FILE`);
      assert.equal(err.message, `${name}_FILE: is set together with ${name}: set only one of them`);
      // An empty variable counts as unset, as it does everywhere else.
      assert.doesNotThrow(() => loadConfig({ ...s3, ...values, [name]: '', [`${name}_FILE`]: secretFile(value) }, '/srv/app'));
    }
  });

  test('a file that cannot be read or is empty stops start-up naming the variable and the path', () => {
    const missing = path.join(dir, 'missing');
    const unreadable = configError({ TOOLRUN_METRICS_TOKEN_FILE: missing });
    assert.equal(unreadable.variable, 'TOOLRUN_METRICS_TOKEN_FILE');
    assert.equal(unreadable.message, `TOOLRUN_METRICS_TOKEN_FILE: cannot read the file "${missing}" (ENOENT)`);
    const directory = configError({ DATABASE_URL_FILE: dir });
    assert.match(directory.message, /^DATABASE_URL_FILE: cannot read the file ".*" \(EISDIR\)$/);
    const empty = secretFile('\n');
    const blank = configError({ PGPASSWORD_FILE: empty });
    assert.equal(blank.variable, 'PGPASSWORD_FILE');
    assert.equal(blank.message, `PGPASSWORD_FILE: the file "${empty}" is empty`);
    // The value read is checked as the variable's own would be, and the message never shows it.
    const token = configError({ TOOLRUN_METRICS_TOKEN_FILE: secretFile('short secret') });
    assert.equal(token.variable, 'TOOLRUN_METRICS_TOKEN');
    assert.doesNotMatch(token.message, /short secret/);
  });
});
