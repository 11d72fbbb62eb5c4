// The S3 backend the files-s3 tests (test/files-s3-*.test.ts) run against: a real S3-compatible
// server (s3rver 3.7.1) on a free port with its own directory, and the service storing files in
// its bucket under a prefix, over real sockets. Each test file starts its own pair (its own
// database, its own bucket) from its before hook.
//
// s3rver does not enforce S3's 5 MiB minimum for all parts but the last, which lets the tests use
// 16 KiB parts (TOOLRUN_PART_SIZE_BYTES); AWS would refuse those with EntityTooSmall.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import type { IncomingMessage } from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import S3rver from 's3rver';
import { callApi, makeTeam, type TeamFixture } from './fixtures.js';
import { makePng } from './media.js';
import { startTestServer, type TestServer } from './server.js';
import type { PartRef, Upload } from './uploads.js';

export const PART = 16 * 1024;
export const BUCKET = 'toolrun-test';
export const PREFIX = 'some/prefix';
export const ACCESS_KEY = 'S3RVER';
export const SECRET_KEY = 'S3RVER';
export const REGION = 'us-east-1';

// Live bindings: set by startS3Service(), read by the tests of the file that started it.
export let endpoint: string;
/** A client of our own, to look into the bucket independently of the code under test. */
export let inspector: S3Client;
export let s: TestServer;
export let team: TeamFixture;
/** Spans several parts, the last of them short. */
export let png: Buffer;

let s3: S3rver | undefined;
let s3Dir: string | undefined;
const savedEnv: Record<string, string | undefined> = {};

/**
 * Starts s3rver and the service on it. `onS3Request` sees every request s3rver receives, from
 * the first on.
 */
export async function startS3Service(opts: { onS3Request?: (req: IncomingMessage) => void } = {}): Promise<void> {
  for (const name of ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_REGION']) savedEnv[name] = process.env[name];
  // The service's S3Client takes its credentials from the SDK's default chain, i.e. these.
  process.env.AWS_ACCESS_KEY_ID = ACCESS_KEY;
  process.env.AWS_SECRET_ACCESS_KEY = SECRET_KEY;
  process.env.AWS_REGION = REGION;

  s3Dir = fs.mkdtempSync(path.join(os.tmpdir(), 'toolrun-s3rver-'));
  s3 = new S3rver({ port: 0, address: '127.0.0.1', silent: true, directory: s3Dir, configureBuckets: [{ name: BUCKET }] });
  const address = await s3.run();
  endpoint = `http://127.0.0.1:${address.port}`;
  assert.ok(s3.httpServer, 's3rver has no HTTP server after run()');
  if (opts.onS3Request) s3.httpServer.on('request', opts.onS3Request);
  inspector = new S3Client({
    region: REGION,
    endpoint,
    forcePathStyle: true,
    credentials: { accessKeyId: ACCESS_KEY, secretAccessKey: SECRET_KEY },
  });

  s = await startTestServer({
    env: {
      TOOLRUN_STORAGE: `s3://${BUCKET}/${PREFIX}`,
      TOOLRUN_S3_ENDPOINT: endpoint,
      TOOLRUN_PART_SIZE_BYTES: String(PART),
      TOOLRUN_S3_ALLOW_SMALL_PARTS: '1',
      AWS_REGION: REGION,
    },
  });
  assert.equal(s.storage.kind, 's3');
  team = await makeTeam(s.database.db);
  png = await makePng(320, 240);
  assert.ok(png.length > 2 * PART, `test PNG must span several parts (${png.length} bytes)`);
}

/** Stops what startS3Service() started, as far as it got, and restores the environment. */
export async function stopS3Service(): Promise<void> {
  if (s) {
    await s.close();
    fs.rmSync(s.config.dataDir, { recursive: true, force: true });
  }
  inspector?.destroy();
  if (s3?.httpServer?.listening) await s3.close();
  if (s3Dir) fs.rmSync(s3Dir, { recursive: true, force: true });
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
