// The one place that chooses which S3 the S3 tests (files-s3-*, faults-storage's S3 part,
// s3-real-*, the topology's S3 mode) run against:
//
// - TEST_S3_ENDPOINT set: that server, with TEST_S3_ACCESS_KEY_ID, TEST_S3_SECRET_ACCESS_KEY and
//   TEST_S3_REGION (default us-east-1). `.ci/run` points these at Ceph's RADOS Gateway
//   (scripts/ceph-gateway.ts); an operator may point them at their own MinIO, Garage or AWS.
//   Each test file creates its own bucket there and empties and deletes it afterwards.
//   TEST_S3_MIN_PART_BYTES tells the tests the server's minimum part size (default 5 MiB, as S3).
// - otherwise: s3rver on a free port with its own directory, so `npm test` needs nothing installed.
import fs from 'node:fs';
import type http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import {
  AbortMultipartUploadCommand,
  CreateBucketCommand,
  DeleteBucketCommand,
  DeleteObjectsCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  S3Client,
} from '@aws-sdk/client-s3';
import S3rver from 's3rver';

export interface S3Target {
  /** 'real' when TEST_S3_ENDPOINT names a server; 's3rver' for the built-in fake. */
  kind: 's3rver' | 'real';
  endpoint: string;
  bucket: string;
  region: string;
  credentials: { accessKeyId: string; secretAccessKey: string };
  /** The smallest part (but the last) the server accepts at completion; 0 when it checks none. */
  minPartBytes: number;
  /** A client of the tests' own, to look into the bucket independently of the code under test. */
  client: S3Client;
  /** s3rver's own HTTP server (absent on a real S3), for tests that watch its requests. */
  httpServer?: http.Server;
  close(): Promise<void>;
}

const MIB = 1024 * 1024;

/** The real S3 the tests are told to use, or null (then s3rver stands in). */
export function realS3(): { endpoint: string; region: string; credentials: S3Target['credentials']; minPartBytes: number } | null {
  const endpoint = process.env.TEST_S3_ENDPOINT;
  if (!endpoint) return null;
  const accessKeyId = process.env.TEST_S3_ACCESS_KEY_ID;
  const secretAccessKey = process.env.TEST_S3_SECRET_ACCESS_KEY;
  if (!accessKeyId || !secretAccessKey) throw new Error('TEST_S3_ENDPOINT is set: set TEST_S3_ACCESS_KEY_ID and TEST_S3_SECRET_ACCESS_KEY too');
  return {
    endpoint,
    region: process.env.TEST_S3_REGION || 'us-east-1',
    credentials: { accessKeyId, secretAccessKey },
    minPartBytes: Number(process.env.TEST_S3_MIN_PART_BYTES || 5 * MIB),
  };
}

/** For `test(..., { skip })` in tests only a real S3 can answer. */
export const NO_REAL_S3 = realS3()
  ? false
  : 'needs a real S3: set TEST_S3_ENDPOINT and keys (`.ci/run` starts Ceph\'s RADOS Gateway with scripts/ceph-gateway.ts)';

function client(endpoint: string, region: string, credentials: S3Target['credentials']): S3Client {
  return new S3Client({ region, endpoint, forcePathStyle: true, credentials, requestChecksumCalculation: 'WHEN_REQUIRED' });
}

/** Empties (objects and unfinished multipart uploads) and deletes a bucket. */
async function dropBucket(c: S3Client, bucket: string): Promise<void> {
  for (;;) {
    const ups = await c.send(new ListMultipartUploadsCommand({ Bucket: bucket }));
    for (const u of ups.Uploads ?? []) await c.send(new AbortMultipartUploadCommand({ Bucket: bucket, Key: u.Key, UploadId: u.UploadId }));
    if (!ups.IsTruncated) break;
  }
  for (;;) {
    const out = await c.send(new ListObjectsV2Command({ Bucket: bucket }));
    const keys = (out.Contents ?? []).map((o) => ({ Key: o.Key }));
    if (keys.length) await c.send(new DeleteObjectsCommand({ Bucket: bucket, Delete: { Objects: keys, Quiet: true } }));
    if (!out.IsTruncated) break;
  }
  await c.send(new DeleteBucketCommand({ Bucket: bucket }));
}

/**
 * An S3 with an empty bucket named after `name` (on a real S3, made unique per test file and
 * run, since buckets are global there).
 */
export async function startS3Target(name: string, opts: { address?: string } = {}): Promise<S3Target> {
  const real = realS3();
  if (real) {
    const bucket = `${name}-${randomBytes(4).toString('hex')}`.slice(0, 63);
    const c = client(real.endpoint, real.region, real.credentials);
    await c.send(new CreateBucketCommand({ Bucket: bucket }));
    return {
      kind: 'real',
      ...real,
      bucket,
      client: c,
      close: async () => {
        await dropBucket(c, bucket).catch((err: unknown) => console.error(`# could not drop bucket ${bucket}: ${(err as Error).message}`));
        c.destroy();
      },
    };
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'toolrun-s3rver-'));
  const credentials = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };
  const s3 = new S3rver({ port: 0, address: opts.address ?? '127.0.0.1', silent: true, directory: dir, configureBuckets: [{ name }] });
  const { port } = await s3.run();
  const endpoint = `http://${opts.address ?? '127.0.0.1'}:${port}`;
  const c = client(endpoint, 'us-east-1', credentials);
  return {
    kind: 's3rver',
    endpoint,
    bucket: name,
    region: 'us-east-1',
    credentials,
    minPartBytes: 0,
    client: c,
    ...(s3.httpServer ? { httpServer: s3.httpServer } : {}),
    close: async () => {
      c.destroy();
      if (s3.httpServer?.listening) await s3.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
