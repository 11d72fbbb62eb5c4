import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, test } from 'node:test';
import { ConfigError, loadConfig } from '../src/config/config.js';

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
