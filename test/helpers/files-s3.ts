// The S3 backend the files-s3 tests (test/files-s3-*.test.ts) run against: the S3 that
// test/helpers/s3-target.ts picks (s3rver on a free port by default; the real S3 named by
// TEST_S3_ENDPOINT, such as Ceph's RADOS Gateway in `.ci/run`), and the service storing files in
// its own bucket under a prefix, over real sockets. Each test file starts its own pair (its own
// database, its own bucket) from its before hook.
//
// s3rver does not enforce S3's 5 MiB minimum for all parts but the last, which lets the tests use
// 16 KiB parts (TOOLRUN_PART_SIZE_BYTES); a real S3 refuses those with EntityTooSmall, so there
// the parts are its minimum (5 MiB) and the test PNG is a noise image of about 11 MB.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http, { type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { GetObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import sharp from 'sharp';
import { callApi, makeTeam, type TeamFixture } from './fixtures.js';
import { makePng } from './media.js';
import { startS3Target, type S3Target } from './s3-target.js';
import { startTestServer, type TestServer } from './server.js';
import type { PartRef, Upload } from './uploads.js';

export const PREFIX = 'some/prefix';

// Live bindings: set by startS3Service(), read by the tests of the file that started it.
/** The part size: 16 KiB on s3rver, the server's minimum (5 MiB) on a real S3. */
export let PART = 16 * 1024;
export let BUCKET = 'toolrun-test';
export let ACCESS_KEY = 'S3RVER';
export let SECRET_KEY = 'S3RVER';
export let REGION = 'us-east-1';
export let endpoint: string;
/** A client of our own, to look into the bucket independently of the code under test. */
export let inspector: S3Client;
export let target: S3Target;
export let s: TestServer;
export let team: TeamFixture;
/** Spans several parts, the last of them short. */
export let png: Buffer;
export let PNG_SIZE = { width: 320, height: 240 };

let recorder: http.Server | undefined;
const savedEnv: Record<string, string | undefined> = {};

/** A pass-through proxy in front of a real S3 that shows each request to `onRequest` first. */
async function recordingProxy(to: string, onRequest: (req: IncomingMessage) => void): Promise<http.Server> {
  const target = new URL(to);
  const proxy = http.createServer((req, res) => {
    onRequest(req);
    const out = http.request({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    out.on('error', () => res.destroy());
    req.pipe(out);
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  return proxy;
}

/**
 * Starts the S3 and the service on it. `onS3Request` sees every request the S3 receives, from
 * the first on (on a real S3, through a pass-through proxy the service is given as endpoint).
 * `env` adds to (or overrides) the service's environment.
 */
export async function startS3Service(
  opts: { onS3Request?: (req: IncomingMessage) => void; env?: Record<string, string>; bucket?: string } = {},
): Promise<void> {
  for (const name of ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_REGION']) savedEnv[name] = process.env[name];
  target = await startS3Target(opts.bucket ?? 'toolrun-test');
  ({ bucket: BUCKET, region: REGION } = target);
  ({ accessKeyId: ACCESS_KEY, secretAccessKey: SECRET_KEY } = target.credentials);
  // The service's S3Client takes its credentials from the SDK's default chain, i.e. these.
  process.env.AWS_ACCESS_KEY_ID = ACCESS_KEY;
  process.env.AWS_SECRET_ACCESS_KEY = SECRET_KEY;
  process.env.AWS_REGION = REGION;

  endpoint = target.endpoint;
  if (opts.onS3Request && target.httpServer) target.httpServer.on('request', opts.onS3Request);
  else if (opts.onS3Request) {
    recorder = await recordingProxy(target.endpoint, opts.onS3Request);
    endpoint = `http://127.0.0.1:${(recorder.address() as AddressInfo).port}`;
  }
  inspector = target.client;
  PART = Math.max(16 * 1024, target.minPartBytes);

  s = await startTestServer({
    env: {
      TOOLRUN_STORAGE: `s3://${BUCKET}/${PREFIX}`,
      TOOLRUN_S3_ENDPOINT: endpoint,
      TOOLRUN_PART_SIZE_BYTES: String(PART),
      ...(PART < 5 * 1024 * 1024 ? { TOOLRUN_S3_ALLOW_SMALL_PARTS: '1' } : {}),
      AWS_REGION: REGION,
      ...opts.env,
    },
  });
  assert.equal(s.storage.kind, 's3');
  team = await makeTeam(s.database.db);
  if (target.kind === 'real') {
    // Random pixels do not compress: 2.2 bytes a pixel over 5 MiB parts gives two parts and a short one.
    PNG_SIZE = { width: 2048, height: Math.ceil((2.2 * PART) / (2048 * 3)) };
    png = await sharp(randomBytes(PNG_SIZE.width * PNG_SIZE.height * 3), { raw: { ...PNG_SIZE, channels: 3 } }).png().toBuffer();
  } else {
    png = await makePng(PNG_SIZE.width, PNG_SIZE.height);
  }
  assert.ok(png.length > 2 * PART && png.length % PART !== 0, `test PNG must span several parts, the last short (${png.length} bytes)`);
}

/** Stops what startS3Service() started, as far as it got, and restores the environment. */
export async function stopS3Service(): Promise<void> {
  if (s) {
    await s.close();
    fs.rmSync(s.config.dataDir, { recursive: true, force: true });
  }
  if (recorder) {
    recorder.closeAllConnections();
    await new Promise((resolve) => recorder?.close(resolve));
  }
  await target?.close();
  for (const [name, value] of Object.entries(savedEnv)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
}

export function api(method: string, url: string, key: string, body?: unknown): Promise<Response> {
  return callApi(s.url, key, method, url, body);
}

export async function startUpload(size: number, name: string, mime: string): Promise<Upload> {
  const res = await api('POST', '/v1/files/upload-url', team.key, { file_name: name, mime_type: mime, size_bytes: size });
  assert.equal(res.status, 201, await res.clone().text());
  return (await res.json()) as Upload;
}

export async function complete(upload: Upload, parts: PartRef[]): Promise<Response> {
  return api('POST', `/v1/files/${upload.file_id}/complete`, team.key, { upload_id: upload.upload_id, parts });
}

export function objectKey(fileId: string): string {
  return `${PREFIX}/files/${team.teamId}/${fileId}`;
}

export async function readObject(key: string): Promise<Buffer> {
  const out = await inspector.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
  assert.ok(out.Body, `no body for ${key}`);
  return Buffer.from(await out.Body.transformToByteArray());
}
