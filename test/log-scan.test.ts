// Secrets never in logs. The scanner `npm test` runs over the logs of the whole suite finds each
// kind of credential (and nothing in redacted or harmless text); a logger that writes a key is
// caught with file and line; and the service's own request logs, at debug level, carry neither
// the Authorization header nor the signatures of signed storage URLs, yet still name each request.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { finished } from 'node:stream/promises';
import { after, before, describe, test } from 'node:test';
import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import pino from 'pino';
import { generateKey } from '../src/auth/keys.js';
import { createLogger } from '../src/logger.js';
import { UrlSigner } from '../src/storage/signing.js';
import { newSigningSecret } from '../src/webhooks/signing.js';
import { bearer, callApi, makeTeam, type TeamFixture } from './helpers/fixtures.js';
import { formatFindings, scanLogDir, scanText } from './helpers/log-scan.js';
import { makePng } from './helpers/media.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { captureChildLogs } from './helpers/test-logs.js';

const tmpDirs: string[] = [];
function tmpDir(): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'toolrun-logscan-'));
  tmpDirs.push(d);
  return d;
}
after(() => {
  for (const d of tmpDirs) fs.rmSync(d, { recursive: true, force: true });
});

async function s3PresignedUrl(): Promise<string> {
  // The real presigner, offline: signing needs credentials, not a server.
  const client = new S3Client({
    region: 'us-east-1',
    endpoint: 'http://127.0.0.1:9',
    forcePathStyle: true,
    credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY', sessionToken: 'FQoGZXIvYXdzEXAMPLETOKEN123' },
  });
  try {
    return await getSignedUrl(client, new GetObjectCommand({ Bucket: 'b', Key: 'outputs/x.png' }), { expiresIn: 60 });
  } finally {
    client.destroy();
  }
}

describe('the log scanner', { timeout: 60_000 }, () => {
  test('finds every kind of credential, with its line, and masks the secret in the report', async () => {
    const key = generateKey('svc_test_').key;
    const live = generateKey('svc_live_').key;
    const whsec = newSigningSecret();
    const local = new UrlSigner(Buffer.alloc(32, 7)).sign('GET', 'http://127.0.0.1:8080', '/storage/objects/a/b.png', 300, { filename: 'b.png', type: 'image/png' });
    const s3 = await s3PresignedUrl();
    const localSig = new URL(local).searchParams.get('signature') ?? '';
    const s3Sig = new URL(s3).searchParams.get('X-Amz-Signature') ?? '';
    assert.match(localSig, /^[0-9a-f]{64}$/);
    assert.match(s3Sig, /^[0-9a-f]{64}$/);
    const sample = [
      JSON.stringify({ level: 30, msg: 'request completed', req: { method: 'GET', url: '/v1/me' } }),
      JSON.stringify({ level: 30, msg: 'oops', key }),
      `plain text with ${live} inside`,
      JSON.stringify({ level: 40, msg: 'created', secret: whsec }),
      JSON.stringify({ level: 20, msg: 'download', url: local }),
      JSON.stringify({ level: 20, msg: 'probe', source: s3 }),
      JSON.stringify({ level: 20, headers: { authorization: 'Basic dXNlcjpwYXNzd29yZA==' } }),
      'Authorization: Bearer some-session-token-1234',
      `nested https://hooks.example/x?next=${encodeURIComponent(local)}`,
    ].join('\n');
    const findings = scanText(sample, 'sample.log');
    const summary = findings.map((f) => `${f.line}:${f.kind}`);
    assert.deepEqual(summary, [
      '2:api_key',
      '3:api_key',
      '4:webhook_secret',
      '5:url_signature',
      '6:url_signature',
      '6:url_signature',
      '7:authorization',
      '8:authorization',
      '9:url_signature',
    ]);
    const report = formatFindings(findings);
    for (const secret of [key.slice(17), live.slice(17), whsec.slice(6), localSig, s3Sig, 'dXNlcjpwYXNzd29yZA==', 'some-session-token-1234', 'FQoGZXIvYXdzEXAMPLETOKEN123']) {
      assert.ok(!report.includes(secret), `the report shows a secret: ${report}`);
    }
    // What is not secret stays readable: the key prefix tells which key leaked.
    assert.match(report, new RegExp(`^sample\\.log:2: api_key: ${key.slice(0, 17)}\\[masked 32 chars\\]$`, 'm'));
    assert.match(report, /^sample\.log:5: url_signature: &signature=\[masked 64 chars\]$/m);
  });

  test('finds nothing in redacted or harmless text', () => {
    const key = generateKey('svc_test_');
    const harmless = [
      JSON.stringify({ level: 30, req: { method: 'PUT', url: '/storage/uploads/u1/parts/1' }, res: { statusCode: 200 } }),
      JSON.stringify({ level: 30, msg: 'key made', prefix: key.prefix, shown: `svc_test_${key.prefix}` }),
      JSON.stringify({ headers: { authorization: '[redacted]' }, signing_secret: '[redacted]', signature: '[redacted]' }),
      'Send the header "Authorization: Bearer svc_..." with the key (whsec_ secrets are shown once).',
      'Service-Signature: t=1700000000,v1=' + 'ab'.repeat(32),
      `sha256 ${key.hash.toString('hex')}`,
    ].join('\n');
    assert.deepEqual(scanText(harmless), []);
  });

  test('a logger that writes a key is caught, naming the file and line', async () => {
    const dir = tmpDir();
    const key = generateKey('svc_test_').key;
    const dest = pino.destination({ dest: path.join(dir, 'leaky.log'), sync: true });
    const logger = createLogger('info', dest);
    logger.info('starting');
    // A careless log line: the key as a message argument is not a redactable field.
    logger.info(`using ${key} for the call`);
    dest.flushSync();
    const scan = scanLogDir(dir);
    assert.equal(scan.files, 1);
    assert.deepEqual(scan.findings.map((f) => [f.file, f.line, f.kind]), [['leaky.log', 2, 'api_key']]);
  });

  test('a child process: only its JSON log lines are kept, not its printed answer', async () => {
    const dir = tmpDir();
    const before = process.env.TEST_LOG_DIR;
    process.env.TEST_LOG_DIR = dir;
    try {
      const out = new PassThrough();
      const err = new PassThrough();
      captureChildLogs('toolrun-serve', 4242, [out, err]);
      const key = generateKey('svc_test_').key;
      // `serve` prints the demo key once, on purpose; `admin key create` answers with it.
      out.write(`\nDemo team created. Its API key, shown only now:\n\n  ${key}\n\n`);
      out.write(`${JSON.stringify({ key, api_key: { id: 'x' } })}\n`);
      // A log line split across chunks, and a last line without a newline.
      const listening = JSON.stringify({ level: 30, time: 1, msg: 'toolrun API listening' });
      out.write(listening.slice(0, 20));
      out.end(`${listening.slice(20)}\n`);
      await finished(out);
      err.end(JSON.stringify({ level: 50, time: 2, msg: `leaked ${key}` }));
      await finished(err);
      const text = fs.readFileSync(path.join(dir, 'toolrun-serve-4242.log'), 'utf8');
      assert.deepEqual(text.trim().split('\n').map((l) => (JSON.parse(l) as { msg: string }).msg.slice(0, 6)), ['toolru', 'leaked']);
      assert.deepEqual(scanLogDir(dir).findings.map((f) => [f.line, f.kind]), [[2, 'api_key']]);
    } finally {
      if (before === undefined) delete process.env.TEST_LOG_DIR;
      else process.env.TEST_LOG_DIR = before;
    }
  });
});

describe("the service's request logs at debug level", { timeout: 120_000 }, () => {
  let s: TestServer;
  let team: TeamFixture;
  before(async () => {
    s = await startTestServer({ env: { LOG_LEVEL: 'debug', TOOLRUN_PART_SIZE_BYTES: String(16 * 1024) } });
    team = await makeTeam(s.database.db);
  });
  after(() => s.close());

  test('carry no key, Authorization value or URL signature, and still say what each request was', async () => {
    const me = await callApi(s.url, team.key, 'GET', '/v1/me');
    assert.equal(me.status, 200);
    const bad = await fetch(`${s.url}/v1/me`, { headers: bearer(`${team.key.slice(0, -4)}zzzz`) });
    assert.equal(bad.status, 401);
    const basic = await fetch(`${s.url}/v1/tools`, { headers: { authorization: 'Basic dXNlcjpwYXNzd29yZA==' } });
    assert.equal(basic.status, 401);

    const png = await makePng(64, 48);
    const up = await callApi(s.url, team.key, 'POST', '/v1/files/upload-url', { file_name: 'a.png', mime_type: 'image/png', size_bytes: png.length });
    assert.equal(up.status, 201);
    const upload = (await up.json()) as { parts: { part_number: number; url: string }[] };
    const partUrl = upload.parts[0]?.url ?? '';
    assert.match(partUrl, /[?&]signature=[0-9a-f]{64}/);
    const put = await fetch(partUrl, { method: 'PUT', body: Uint8Array.from(png) });
    assert.equal(put.status, 200);
    // A download URL whose signature is wrong: refused, and logged without the query either way.
    const download = s.localStorage().signer.sign('GET', s.url, '/storage/objects/nope/x.png', 60, { filename: 'x.png', type: 'image/png' });
    const forged = download.replace(/signature=[0-9a-f]{4}/, 'signature=0000');
    assert.equal((await fetch(forged)).status, 403);

    const text = s.logs.text();
    assert.deepEqual(scanText(text), [], formatFindings(scanText(text)));
    assert.ok(!text.includes(team.key.slice(17)), 'the key secret is in the logs');
    const lines = s.logs.lines.map((l) => JSON.parse(l) as { msg?: string; req?: { method?: string; url?: string }; res?: { statusCode?: number }; request_id?: string });
    const completed = lines.filter((l) => l.msg === 'request completed');
    const seen = completed.map((l) => `${l.req?.method} ${l.req?.url} ${l.res?.statusCode}`);
    const partPath = new URL(partUrl).pathname;
    for (const want of ['GET /v1/me 200', 'GET /v1/me 401', 'GET /v1/tools 401', 'POST /v1/files/upload-url 201', `PUT ${partPath} 200`, 'GET /storage/objects/nope/x.png 403']) {
      assert.ok(seen.includes(want), `no completion line "${want}" in ${JSON.stringify(seen)}`);
    }
    for (const l of completed) assert.match(String(l.request_id), /^[0-9a-f-]{36}$/);
    // The arrival lines (debug) are as bare of queries as the completion lines.
    const incoming = lines.filter((l) => l.msg === 'incoming request').map((l) => l.req?.url ?? '');
    assert.ok(incoming.includes(partPath));
    assert.ok(incoming.every((u) => !u.includes('?')), JSON.stringify(incoming));
  });
});
