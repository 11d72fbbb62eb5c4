/**
 * The S3 side of `npm run bench:upload` (BENCH_UPLOAD_STORAGE=s3): the same synthetic file in the
 * same parts, uploaded through the service (upload-url, presigned part PUTs straight to S3,
 * complete: ListParts, CompleteMultipartUpload, the probe's ranged GET) against a plain multipart
 * upload with the AWS SDK to the same S3 (CreateMultipartUpload, UploadPart, Complete), rounds
 * alternating which goes first, medians. The S3 is the one TEST_S3_ENDPOINT names (with
 * TEST_S3_ACCESS_KEY_ID, TEST_S3_SECRET_ACCESS_KEY, TEST_S3_REGION), or else a Ceph RADOS Gateway
 * this starts with scripts/ceph-gateway.ts (its OSD keeps objects in memory: keep the file small).
 *
 * Environment: BENCH_ROUNDS (5), BENCH_WARMUP (1), BENCH_S3_FILE_MIB (256), BENCH_PART_MIB (8),
 * BENCH_IN_FLIGHT (4), BENCH_LOG_LEVEL (warn), DATABASE_URL.
 */
import { randomBytes } from 'node:crypto';
import {
  CompleteMultipartUploadCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  DeleteObjectsCommand,
  ListObjectsV2Command,
  S3Client,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { startGateway } from '../../scripts/ceph-gateway.js';
import { startApiChild } from './children.js';
import { envInt, figure, finish, loadNote, median, MIB, type BenchResult, resultHeader } from './report.js';
import type { BenchService } from './service.js';
import { uploadOnce, type UploadRun } from './upload-client.js';
import { inFlight, machineLoad, procCpuSeconds, SyntheticFile } from './upload-io.js';

const settings = {
  rounds: envInt('BENCH_ROUNDS', 5, 1),
  warmup: envInt('BENCH_WARMUP', 1, 0),
  fileBytes: envInt('BENCH_S3_FILE_MIB', 256, 1) * MIB,
  partBytes: envInt('BENCH_PART_MIB', 8, 5) * MIB,
  inFlight: envInt('BENCH_IN_FLIGHT', 4, 1),
  rssEveryMs: 100,
  apiLogLevel: process.env.BENCH_LOG_LEVEL || 'warn',
};

const mbps = (bytes: number, s: number) => (s > 0 ? bytes / 1e6 / s : 0);

interface PlainRun {
  round: number;
  totalS: number;
  clientCpuS: number;
}

/** The same parts, the same number in flight, straight to S3 with the SDK: what the service is set against. */
async function plainMultipart(client: S3Client, bucket: string, data: SyntheticFile, round: number): Promise<PlainRun> {
  const key = `plain/${round}-${randomBytes(4).toString('hex')}`;
  const cpu0 = procCpuSeconds(process.pid);
  const t0 = performance.now();
  const { UploadId } = await client.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: key, ContentType: 'application/octet-stream' }));
  const etags = await inFlight(data.partCount, settings.inFlight, async (i) => {
    const out = await client.send(
      new UploadPartCommand({ Bucket: bucket, Key: key, UploadId, PartNumber: i + 1, Body: Buffer.concat(data.part(i + 1, round)) }),
    );
    return out.ETag ?? '';
  });
  await client.send(
    new CompleteMultipartUploadCommand({
      Bucket: bucket,
      Key: key,
      UploadId,
      MultipartUpload: { Parts: etags.map((ETag, i) => ({ PartNumber: i + 1, ETag })) },
    }),
  );
  return { round, totalS: (performance.now() - t0) / 1000, clientCpuS: procCpuSeconds(process.pid) - cpu0 };
}

/** Deletes every object of the bucket, so a memory-backed OSD does not fill up over the rounds. */
async function emptyBucket(client: S3Client, bucket: string): Promise<void> {
  for (;;) {
    const out = await client.send(new ListObjectsV2Command({ Bucket: bucket }));
    const keys = (out.Contents ?? []).map((o) => ({ Key: o.Key }));
    if (keys.length) await client.send(new DeleteObjectsCommand({ Bucket: bucket, Delete: { Objects: keys, Quiet: true } }));
    if (!out.IsTruncated) return;
  }
}

export async function s3UploadMain(svc: BenchService): Promise<void> {
  const loadBefore = loadNote();
  let s3 = process.env.TEST_S3_ENDPOINT
    ? {
        endpoint: process.env.TEST_S3_ENDPOINT,
        accessKeyId: process.env.TEST_S3_ACCESS_KEY_ID ?? '',
        secretAccessKey: process.env.TEST_S3_SECRET_ACCESS_KEY ?? '',
        region: process.env.TEST_S3_REGION || 'us-east-1',
        what: `the S3 at ${process.env.TEST_S3_ENDPOINT} (TEST_S3_ENDPOINT)`,
      }
    : null;
  if (!s3) {
    process.stdout.write('starting a Ceph RADOS Gateway (scripts/ceph-gateway.ts)...\n');
    const gateway = svc.defer(await startGateway(), (g) => g.stop());
    s3 = { ...gateway, what: `Ceph RADOS Gateway (one memstore OSD) at ${gateway.endpoint}` };
  }
  const bucket = `toolrun-bench-${randomBytes(4).toString('hex')}`;
  const client = svc.defer(new S3Client({
    region: s3.region,
    endpoint: s3.endpoint,
    forcePathStyle: true,
    credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
    requestChecksumCalculation: 'WHEN_REQUIRED',
    // Like with like: the part PUTs of the service's side send no `Expect: 100-continue` (the
    // SDK's default for bodies of 2 MB or more waits a round trip for the go-ahead on each part).
    expectContinueHeader: false,
  }), (c) => c.destroy());
  // And the presigned part URLs leave the payload unsigned, as the SDK does over HTTPS; over plain
  // HTTP (a gateway on loopback) it would hash every byte with SHA-256 first.
  client.middlewareStack.add(
    (next) => async (args) => {
      const request = args.request as { headers?: Record<string, string> };
      if (request.headers) request.headers['x-amz-content-sha256'] = 'UNSIGNED-PAYLOAD';
      return next(args);
    },
    { step: 'build', name: 'benchUnsignedPayload' },
  );
  await client.send(new CreateBucketCommand({ Bucket: bucket }));
  const database = await svc.database();
  const child = svc.child('api', await startApiChild(database.url, settings.apiLogLevel, {
    TOOLRUN_STORAGE: `s3://${bucket}/bench`,
    TOOLRUN_S3_ENDPOINT: s3.endpoint,
    TOOLRUN_PART_SIZE_BYTES: String(settings.partBytes),
    AWS_ACCESS_KEY_ID: s3.accessKeyId,
    AWS_SECRET_ACCESS_KEY: s3.secretAccessKey,
    AWS_REGION: s3.region,
  }));
  const data = new SyntheticFile(settings.fileBytes, settings.partBytes);
  process.stdout.write(
    `S3: ${s3.what}; ${(settings.fileBytes / 1e6).toFixed(0)} MB in ${data.partCount} parts of ${settings.partBytes / MIB} MiB, ` +
      `${settings.inFlight} in flight; ${settings.rounds} round(s), alternating order\n`,
  );
  const uploads: UploadRun[] = [];
  const plains: PlainRun[] = [];
  const loadAtStart = machineLoad();
  for (let round = 1 - settings.warmup; round <= settings.rounds; round++) {
    const label = round < 1 ? 'warm-up' : `round ${round}`;
    for (const side of round % 2 === 1 ? ['plain', 'upload'] : ['upload', 'plain']) {
      await emptyBucket(client, bucket);
      if (side === 'plain') {
        const run = await plainMultipart(client, bucket, data, round);
        if (round >= 1) plains.push(run);
        process.stdout.write(`  ${label.padEnd(8)} plain SDK multipart ${mbps(data.totalBytes, run.totalS).toFixed(0).padStart(5)} MB/s  ${run.totalS.toFixed(2)} s\n`);
      } else {
        const run = await uploadOnce(child, database.key, data, round, settings);
        if (round >= 1) uploads.push(run);
        process.stdout.write(
          `  ${label.padEnd(8)} service upload      ${mbps(data.totalBytes, run.totalS).toFixed(0).padStart(5)} MB/s  ${run.totalS.toFixed(2)} s` +
            ` (PUTs ${run.putS.toFixed(2)} s, complete ${run.completeS.toFixed(2)} s)\n`,
        );
      }
    }
  }
  await emptyBucket(client, bucket);
  const loadAtEnd = machineLoad();
  const bytes = data.totalBytes;
  const [totalS, putS, completeS] = [median(uploads.map((r) => r.totalS)), median(uploads.map((r) => r.putS)), median(uploads.map((r) => r.completeS))];
  const plainS = median(plains.map((r) => r.totalS));
  const baseline = { label: 'plain AWS SDK multipart upload to the same S3', value: mbps(bytes, plainS) };
  const result: BenchResult = {
    ...resultHeader('upload-s3',
      `Upload to S3: ${(bytes / 1e6).toFixed(0)} MB in ${settings.partBytes / MIB} MiB parts, ${settings.inFlight} in flight, through the service against a plain SDK multipart upload`,
      { before: loadBefore, after: loadNote() }, database, { ...settings, s3: s3.what }),
    figures: [
      figure({ name: 's3_upload_throughput', figure: 'upload to S3 through the service, first part PUT -> complete response', unit: 'MB/s', value: mbps(bytes, totalS), baseline }),
      figure({ name: 's3_put_phase_throughput', figure: `PUT phase alone (presigned, straight to S3, ${settings.inFlight} in flight)`, unit: 'MB/s', value: mbps(bytes, putS), baseline }),
      figure({ name: 's3_complete_seconds', figure: 'complete (ListParts, CompleteMultipartUpload, probe)', unit: 's', value: completeS }),
    ],
    charts: [],
    notes: [
      `S3: ${s3.what}. Client, API server, PostgreSQL and the S3 share this machine's cores.`,
      `${settings.rounds} round(s) alternating which side goes first${settings.warmup ? `, after ${settings.warmup} untimed warm-up round(s)` : ''}; medians; the bucket is emptied before every upload.`,
      `Service: PUTs ${putS.toFixed(2)} s + complete ${completeS.toFixed(2)} s; plain SDK: ${plainS.toFixed(2)} s (create, parts, complete). Parts go to S3 directly either way; the service adds upload-url, the checks at completion and the probe.`,
      `Machine load: ${loadAtStart.load1.toFixed(2)} -> ${loadAtEnd.load1.toFixed(2)}. MB = 10^6 bytes.`,
    ],
    details: { uploads: uploads.map(({ partMs: _p, ...r }) => r), plains },
  };
  await svc.cleanup();
  finish(result);
}
