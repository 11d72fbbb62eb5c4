// The SDK's retry rules, backoff, Retry-After, polling bounds, output_not_ready and pass-through
// of unknown codes and fields, against a real HTTP server that answers from a script.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Toolrun, ToolrunError, type RetryInfo, type Run, type ToolrunOptions } from '@toolrun/sdk';
import { errorBody, ScriptedServer } from './helpers/scripted-http.js';

let api: ScriptedServer;
before(async () => {
  api = await ScriptedServer.start();
});
after(async () => {
  await api.close();
});

/** A fresh path prefix per test, so scripts never mix. */
const prefix = () => `/t${randomUUID().slice(0, 8)}`;

function client(base: string, retries: RetryInfo[] = [], extra: ToolrunOptions = {}): Toolrun {
  return new Toolrun({ apiKey: 'svc_test_fake', baseUrl: base, testing: { backoffBaseMs: 20 }, onRetry: (r) => retries.push(r), ...extra });
}

function fakeRun(id: string, status: Run['status'], extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    object: 'run', id, tool_id: 'test_copy', product_id: 'test_copy', status, progress: status === 'succeeded' ? 1 : 0.5,
    cost_sparks: 3, outputs: [], error: null, api_key_id: null, created_at: null, started_at: null, finished_at: null, ...extra,
  };
}

const me = { object: 'me', team: { id: 't', name: 'T', plan: 'pro' }, api_key: { id: 'k', name: 'k', prefix: 'abcdefgh', scopes: ['read'], rate_limit_per_minute: 60 }, sparks_available: 5 };

describe('retries of idempotent calls', () => {
  test('429 is retried after Retry-After seconds, then the answer is returned', async () => {
    const p = prefix();
    api.on('GET', `${p}/v1/me`, (_r, n) => (n === 1 ? { status: 429, json: errorBody('rate_limited'), headers: { 'retry-after': '1' } } : { status: 200, json: me }));
    const retries: RetryInfo[] = [];
    const got = await client(api.url + p, retries).me();
    assert.equal(got.sparks_available, 5);
    const calls = api.requests('GET', `${p}/v1/me`);
    assert.equal(calls.length, 2);
    assert.ok((calls[1]?.at ?? 0) - (calls[0]?.at ?? 0) >= 950, 'waited the Retry-After second');
    assert.equal(retries.length, 1);
    assert.equal(retries[0]?.delayMs, 1000);
    assert.equal(retries[0]?.error.code, 'rate_limited');
  });

  test('500, 503 and a dropped connection are retried on GET with backoff; the key and user agent are sent', async () => {
    const p = prefix();
    const answers = [{ status: 500, json: errorBody('internal_error') }, { status: 503, json: errorBody('service_unavailable') }, 'drop' as const];
    api.on('GET', `${p}/v1/runs/r1`, (_r, n) => answers[n - 1] ?? { status: 200, json: fakeRun('r1', 'running') });
    const retries: RetryInfo[] = [];
    const run = await client(api.url + p, retries).runs.get('r1');
    assert.equal(run.status, 'running');
    assert.deepEqual(retries.map((r) => r.error.status), [500, 503, 0]);
    const calls = api.requests('GET', `${p}/v1/runs/r1`);
    assert.equal(calls.length, 4);
    assert.equal(calls[0]?.headers.authorization, 'Bearer svc_test_fake');
    assert.match(String(calls[0]?.headers['user-agent']), /^toolrun-sdk\//);
  });

  test('gives up after maxRetries with the last error', async () => {
    const p = prefix();
    api.on('GET', `${p}/v1/tools`, () => ({ status: 500, json: errorBody('internal_error', 'boom') }));
    await assert.rejects(client(api.url + p, [], { maxRetries: 2 }).tools.list(), (err: unknown) => {
      assert.ok(err instanceof ToolrunError);
      assert.equal(err.status, 500);
      assert.equal(err.message, 'boom');
      return true;
    });
    assert.equal(api.requests('GET', `${p}/v1/tools`).length, 3);
  });

  test('start run is retried with the same Idempotency-Key; one is generated when none is given', async () => {
    const p = prefix();
    api.on('POST', `${p}/v1/tools/test_copy/runs`, (_r, n) => (n === 1 ? { status: 503, json: errorBody('service_unavailable') } : n === 2 ? 'drop' : { status: 202, json: fakeRun('r2', 'queued') }));
    const run = await client(api.url + p).runs.start('test_copy', { inputs: { image: ['f'] } });
    assert.equal(run.id, 'r2');
    const keys = api.requests('POST', `${p}/v1/tools/test_copy/runs`).map((r) => r.headers['idempotency-key']);
    assert.equal(keys.length, 3);
    assert.match(String(keys[0]), /^[0-9a-f-]{36}$/);
    assert.ok(keys.every((k) => k === keys[0]), 'every attempt carries the same key');

    api.on('POST', `${p}/v1/tools/other/runs`, () => ({ status: 202, json: fakeRun('r3', 'queued') }));
    await client(api.url + p).runs.start('other', {}, { idempotencyKey: 'my-key' });
    await client(api.url + p).runs.start('other', {});
    const more = api.requests('POST', `${p}/v1/tools/other/runs`).map((r) => r.headers['idempotency-key']);
    assert.equal(more[0], 'my-key');
    assert.notEqual(more[1], 'my-key');
  });

  test('a Retry-After beyond maxRetryAfterSeconds is not waited out: the 429 reaches the caller', async () => {
    const p = prefix();
    api.on('GET', `${p}/v1/me`, () => ({ status: 429, json: errorBody('rate_limited'), headers: { 'retry-after': '3600' } }));
    const t0 = Date.now();
    await assert.rejects(client(api.url + p).me(), (err: unknown) => err instanceof ToolrunError && err.status === 429 && err.retryAfterSeconds === 3600);
    assert.ok(Date.now() - t0 < 1000);
    assert.equal(api.requests('GET', `${p}/v1/me`).length, 1);
  });
});

describe('calls that are not retried blindly', () => {
  test('cancel, upload-url and webhook create are not retried on 500, 503 or a dropped connection', async () => {
    const p = prefix();
    const c = client(api.url + p);
    api.on('POST', `${p}/v1/runs/r4/cancel`, () => ({ status: 500, json: errorBody('internal_error') }));
    await assert.rejects(c.runs.cancel('r4'), (err: unknown) => err instanceof ToolrunError && err.status === 500);
    api.on('POST', `${p}/v1/files/upload-url`, () => 'drop');
    await assert.rejects(c.files.upload(Buffer.from('abc')), (err: unknown) => err instanceof ToolrunError && err.code === 'connection_error');
    api.on('POST', `${p}/v1/webhook-endpoints`, () => ({ status: 503, json: errorBody('service_unavailable') }));
    await assert.rejects(c.webhookEndpoints.create({ url: 'https://example.com/h' }), (err: unknown) => err instanceof ToolrunError && err.status === 503);
    assert.equal(api.requests('POST', `${p}/v1/runs/r4/cancel`).length, 1);
    assert.equal(api.requests('POST', `${p}/v1/files/upload-url`).length, 1);
    assert.equal(api.requests('POST', `${p}/v1/webhook-endpoints`).length, 1);
  });

  test('but a 429 (refused before anything was done) is retried for them too', async () => {
    const p = prefix();
    api.on('POST', `${p}/v1/runs/r5/cancel`, (_r, n) => (n === 1 ? { status: 429, json: errorBody('rate_limited'), headers: { 'retry-after': '1' } } : { status: 200, json: fakeRun('r5', 'canceled') }));
    const run = await client(api.url + p).runs.cancel('r5');
    assert.equal(run.status, 'canceled');
    assert.equal(api.requests('POST', `${p}/v1/runs/r5/cancel`).length, 2);
  });
});

describe('pass-through', () => {
  test('unknown error codes, error fields and response fields are kept, never rejected', async () => {
    const p = prefix();
    api.on('GET', `${p}/v1/runs/r6`, () => ({
      status: 418,
      json: errorBody('brand_new_code', 'Something new', { details: { hint: 1 }, errors: [{ loc: ['body', 'x'], message: 'bad', code: null, extra: true }], future_field: 'kept' }),
    }));
    await assert.rejects(client(api.url + p).runs.get('r6'), (err: unknown) => {
      assert.ok(err instanceof ToolrunError);
      assert.equal(err.status, 418);
      assert.equal(err.code, 'brand_new_code');
      assert.equal(err.message, 'Something new');
      assert.equal(err.requestId, 'req-x');
      assert.deepEqual(err.details, { hint: 1 });
      assert.deepEqual(err.errors, [{ loc: ['body', 'x'], message: 'bad', code: null, extra: true }]);
      assert.deepEqual((err.body as { error: { future_field: string } }).error.future_field, 'kept');
      return true;
    });
    api.on('GET', `${p}/v1/runs/r7`, () => ({ status: 200, json: fakeRun('r7', 'queued', { new_field: { a: 1 } }) }));
    const run = await client(api.url + p).runs.get('r7');
    assert.deepEqual((run as Run & { new_field?: unknown }).new_field, { a: 1 });
  });

  test('a non-JSON error page becomes http_<status> with the X-Request-Id header', async () => {
    const p = prefix();
    api.on('DELETE', `${p}/v1/webhook-endpoints/e1`, () => ({ status: 502, text: '<html>Bad gateway</html>' }));
    await assert.rejects(client(api.url + p).webhookEndpoints.delete('e1'), (err: unknown) => {
      assert.ok(err instanceof ToolrunError);
      assert.equal(err.code, 'http_502');
      assert.match(err.message, /Bad gateway/);
      assert.match(String(err.requestId), /^req-/);
      return true;
    });
  });
});

describe('runs.wait and runs.download', () => {
  test('wait polls no faster than every 2 s without the test option, and resolves on a final status', async () => {
    const p = prefix();
    api.on('GET', `${p}/v1/runs/w1`, (_r, n) => ({ status: 200, json: fakeRun('w1', n < 2 ? 'running' : 'failed', { error: n < 2 ? null : 'it broke' }) }));
    const seen: string[] = [];
    const run = await client(api.url + p).runs.wait('w1', { intervalMs: 10, onProgress: (r) => seen.push(r.status) });
    assert.equal(run.status, 'failed');
    assert.equal(run.error, 'it broke');
    assert.deepEqual(seen, ['running', 'failed']);
    const calls = api.requests('GET', `${p}/v1/runs/w1`);
    assert.ok((calls[1]?.at ?? 0) - (calls[0]?.at ?? 0) >= 1950, 'at least 2 s between polls');
  });

  test('wait waits out a 429 using Retry-After, and stops on abort', async () => {
    const p = prefix();
    api.on('GET', `${p}/v1/runs/w2`, (_r, n) =>
      n === 2 ? { status: 429, json: errorBody('rate_limited'), headers: { 'retry-after': '1' } } : { status: 200, json: fakeRun('w2', n < 3 ? 'queued' : 'succeeded') },
    );
    const c = client(api.url + p, [], { maxRetries: 0, testing: { minPollIntervalMs: 20 } });
    const run = await c.runs.wait('w2', { intervalMs: 20 });
    assert.equal(run.status, 'succeeded');
    const calls = api.requests('GET', `${p}/v1/runs/w2`);
    assert.equal(calls.length, 3);
    assert.ok((calls[2]?.at ?? 0) - (calls[1]?.at ?? 0) >= 950, 'the poll after the 429 waited Retry-After');

    api.on('GET', `${p}/v1/runs/w3`, () => ({ status: 200, json: fakeRun('w3', 'running') }));
    const ac = new AbortController();
    const waiting = c.runs.wait('w3', { intervalMs: 20, signal: ac.signal, onProgress: () => ac.abort() });
    await assert.rejects(waiting, (err: unknown) => err instanceof Error && err.name === 'AbortError');
  });

  test('download asks again while the output answers 409 output_not_ready, and fetches a fresh URL after a refused one', async () => {
    const p = prefix();
    const asset = randomUUID();
    const bytes = Buffer.from('the output bytes');
    api.on('GET', `${p}/v1/runs/d1/outputs/${asset}/url`, (_r, n) =>
      n <= 2 ? { status: 409, json: errorBody('output_not_ready') } : { status: 200, json: { object: 'output_url', asset_id: asset, url: `${api.url}${p}/blob/${n}`, expires_in_seconds: 60 } },
    );
    api.on('GET', `${p}/blob/3`, () => ({ status: 403, json: errorBody('url_expired') }));
    api.on('GET', `${p}/blob/4`, () => ({ status: 200, text: bytes.toString() }));
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sdk-dl-'));
    const run = fakeRun('d1', 'succeeded', { outputs: [{ asset_id: asset, mime_type: 'text/plain', file_name: '../../escape.txt' }] }) as unknown as Run;
    const got = await client(api.url + p).runs.download(run, dir);
    assert.equal(got.length, 1);
    assert.equal(got[0]?.path, path.join(dir, 'escape.txt'), 'the suggested name is reduced to a base name inside dir');
    assert.deepEqual(fs.readFileSync(path.join(dir, 'escape.txt')), bytes);
    assert.equal(got[0]?.size_bytes, bytes.length);
    assert.equal(api.requests('GET', `${p}/v1/runs/d1/outputs/${asset}/url`).length, 4);
    assert.deepEqual(fs.readdirSync(dir), ['escape.txt'], 'no partial files left');
    fs.rmSync(dir, { recursive: true, force: true });
  });
});
