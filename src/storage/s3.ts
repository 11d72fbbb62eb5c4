import { createReadStream, createWriteStream } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { setTimeout as delay } from 'node:timers/promises';
import type { Readable } from 'node:stream';
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListPartsCommand,
  PutObjectCommand,
  S3Client,
  S3ServiceException,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { PartTooSmallError, UploadGoneError, type LocalCopy, type Storage, type StoredPart } from './storage.js';

export interface S3Options {
  bucket: string;
  prefix: string;
  region: string;
  endpoint: string | null;
  forcePathStyle: boolean;
  /** Absent: the AWS SDK's default chain (environment, shared files, instance roles). */
  credentials?: { accessKeyId: string; secretAccessKey: string; sessionToken?: string };
}

function isNotImplemented(err: unknown): boolean {
  return err instanceof S3ServiceException && (err.name === 'NotImplemented' || err.$metadata.httpStatusCode === 501 || err.$metadata.httpStatusCode === 405);
}

/** Whole-object PUTs are tried this many times when the answer says to try again. */
const PUT_ATTEMPTS = 3;

/** Answers S3 asks clients to retry (internal error, slow down, unavailable) and dropped connections. */
function isTransient(err: unknown): boolean {
  if (err instanceof S3ServiceException) {
    return [500, 502, 503, 504].includes(err.$metadata.httpStatusCode ?? 0) || err.name === 'SlowDown' || err.name === 'InternalError';
  }
  const code = (err as { code?: unknown }).code;
  return code === 'ECONNRESET' || code === 'EPIPE' || code === 'ETIMEDOUT';
}

function isNotFound(err: unknown): boolean {
  return err instanceof S3ServiceException && (err.name === 'NotFound' || err.name === 'NoSuchKey' || err.$metadata.httpStatusCode === 404);
}

/**
 * The store answered that the multipart upload is unknown: aborted, by whatever means. AWS says
 * NoSuchUpload, Ceph's radosgw NoSuchKey. (A missing bucket, NoSuchBucket, is the operator's to fix.)
 */
function isUploadGone(err: unknown): boolean {
  return err instanceof S3ServiceException && (err.name === 'NoSuchUpload' || err.name === 'NoSuchKey');
}

/**
 * Ceph's radosgw answers errors with an empty <Message>, which the SDK turns into the message
 * "UnknownError": a log line would then name neither the code nor the status. Such errors get
 * "<code> (HTTP <status>, request <id>)" as their message instead.
 */
export function explainEmptyMessage(err: unknown): void {
  if (!(err instanceof S3ServiceException)) return;
  if (err.message && err.message !== 'UnknownError') return;
  const code = err.name && err.name !== 'Error' && err.name !== 'S3ServiceException' ? err.name : 'an error without a code';
  const { httpStatusCode, requestId } = err.$metadata;
  err.message = `${code} (HTTP ${httpStatusCode ?? '?'}${requestId ? `, request ${requestId}` : ''})`;
}

/**
 * S3 and S3-compatible servers: real multipart uploads with presigned UploadPart URLs,
 * CompleteMultipartUpload on complete, presigned GETs for downloads. Credentials come from the
 * usual AWS variables through the SDK's default chain, unless the configuration read them from files.
 */
export class S3Storage implements Storage {
  readonly kind = 's3' as const;
  readonly client: S3Client;

  constructor(private readonly opts: S3Options) {
    this.client = new S3Client({
      region: opts.region,
      forcePathStyle: opts.forcePathStyle,
      // Since SDK 3.729 the default (WHEN_SUPPORTED) signs a CRC32 of the *empty* body into presigned
      // UploadPart URLs (x-amz-checksum-crc32=AAAAAA==, x-amz-sdk-checksum-algorithm=CRC32): servers
      // that honour it (R2, SeaweedFS, reportedly AWS) refuse every real part as a checksum mismatch.
      // Clients PUT plain bytes; the part ETags (MD5) checked at completion guard the content.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      ...(opts.endpoint ? { endpoint: opts.endpoint } : {}),
      ...(opts.credentials ? { credentials: opts.credentials } : {}),
    });
    // Outermost step: sees every command's final error, after the SDK's own retries.
    this.client.middlewareStack.add(
      (next) => async (args) => {
        try {
          return await next(args);
        } catch (err) {
          explainEmptyMessage(err);
          throw err;
        }
      },
      { step: 'initialize', name: 'toolrunExplainEmptyMessage' },
    );
  }

  private k(key: string): string {
    return this.opts.prefix ? `${this.opts.prefix}/${key}` : key;
  }

  async createUpload(key: string, contentType: string): Promise<string> {
    const out = await this.client.send(
      new CreateMultipartUploadCommand({ Bucket: this.opts.bucket, Key: this.k(key), ContentType: contentType }),
    );
    if (!out.UploadId) throw new Error('S3 returned no UploadId');
    return out.UploadId;
  }

  /**
   * Content-Length is signed in (X-Amz-SignedHeaders=content-length;host), so S3 refuses a body of
   * any other length (SignatureDoesNotMatch, 403) before storing it: one part URL cannot hold more
   * than its part. Browsers and fetch send Content-Length for a byte body, so plain PUTs still fit.
   */
  async partUrl(key: string, uploadId: string, part: { partNumber: number; sizeBytes: number }, expiresInSeconds: number): Promise<string> {
    return getSignedUrl(
      this.client,
      new UploadPartCommand({
        Bucket: this.opts.bucket,
        Key: this.k(key),
        UploadId: uploadId,
        PartNumber: part.partNumber,
        ContentLength: part.sizeBytes,
      }),
      { expiresIn: expiresInSeconds },
    );
  }

  async listParts(key: string, uploadId: string): Promise<StoredPart[] | null> {
    const parts: StoredPart[] = [];
    let marker: string | undefined;
    try {
      for (;;) {
        const out = await this.client.send(
          new ListPartsCommand({ Bucket: this.opts.bucket, Key: this.k(key), UploadId: uploadId, PartNumberMarker: marker }),
        );
        for (const p of out.Parts ?? []) {
          if (p.PartNumber && p.ETag) parts.push({ partNumber: p.PartNumber, etag: p.ETag, size: p.Size ?? 0 });
        }
        if (!out.IsTruncated || !out.NextPartNumberMarker) break;
        marker = out.NextPartNumberMarker;
      }
    } catch (err) {
      if (isNotImplemented(err)) return null;
      if (isUploadGone(err)) throw new UploadGoneError((err as Error).name);
      throw err;
    }
    return parts.sort((a, b) => a.partNumber - b.partNumber);
  }

  async completeUpload(key: string, uploadId: string, parts: { partNumber: number; etag: string }[]): Promise<void> {
    try {
      await this.sendComplete(key, uploadId, parts);
    } catch (err) {
      if (err instanceof S3ServiceException && err.name === 'EntityTooSmall') throw new PartTooSmallError(err.name);
      if (isUploadGone(err)) throw new UploadGoneError((err as Error).name);
      throw err;
    }
  }

  private async sendComplete(key: string, uploadId: string, parts: { partNumber: number; etag: string }[]): Promise<void> {
    await this.client.send(
      new CompleteMultipartUploadCommand({
        Bucket: this.opts.bucket,
        Key: this.k(key),
        UploadId: uploadId,
        MultipartUpload: {
          Parts: [...parts]
            .sort((a, b) => a.partNumber - b.partNumber)
            .map((p) => ({ PartNumber: p.partNumber, ETag: p.etag.startsWith('"') ? p.etag : `"${p.etag}"` })),
        },
      }),
    );
  }

  async abortUpload(key: string, uploadId: string): Promise<void> {
    try {
      await this.client.send(new AbortMultipartUploadCommand({ Bucket: this.opts.bucket, Key: this.k(key), UploadId: uploadId }));
    } catch (err) {
      if (!isNotImplemented(err) && !isNotFound(err)) throw err;
    }
  }

  async downloadUrl(key: string, opts: { expiresInSeconds: number; fileName: string; contentType: string }): Promise<string> {
    const name = opts.fileName.replace(/["\\\r\n]/g, '_');
    return getSignedUrl(
      this.client,
      new GetObjectCommand({
        Bucket: this.opts.bucket,
        Key: this.k(key),
        ResponseContentType: opts.contentType,
        ResponseContentDisposition: `attachment; filename="${name.replace(/[^\x20-\x7e]/g, '_')}"; filename*=UTF-8''${encodeURIComponent(name)}`,
      }),
      { expiresIn: opts.expiresInSeconds },
    );
  }

  async readHead(key: string, bytes: number): Promise<Buffer> {
    const out = await this.client.send(
      new GetObjectCommand({ Bucket: this.opts.bucket, Key: this.k(key), Range: `bytes=0-${bytes - 1}` }),
    );
    const body = out.Body as Readable;
    const chunks: Buffer[] = [];
    for await (const chunk of body) chunks.push(Buffer.from(chunk as Uint8Array));
    return Buffer.concat(chunks).subarray(0, bytes);
  }

  async localCopy(key: string): Promise<LocalCopy> {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'toolrun-s3-'));
    const file = path.join(dir, 'object');
    try {
      const out = await this.client.send(new GetObjectCommand({ Bucket: this.opts.bucket, Key: this.k(key) }));
      await pipeline(out.Body as Readable, createWriteStream(file));
    } catch (err) {
      await fs.rm(dir, { recursive: true, force: true });
      throw err;
    }
    return { path: file, cleanup: () => fs.rm(dir, { recursive: true, force: true }) };
  }

  async probeSource(key: string): Promise<string> {
    return getSignedUrl(this.client, new GetObjectCommand({ Bucket: this.opts.bucket, Key: this.k(key) }), { expiresIn: 600 });
  }

  /** `move` changes nothing here: the file is uploaded, and the caller deletes it as always. */
  async putFile(key: string, filePath: string, contentType: string, _opts?: { move?: boolean }): Promise<void> {
    const { size } = await fs.stat(filePath);
    // The SDK never retries a request whose body is a stream (it cannot rewind it), so a passing
    // 500 or 503 SlowDown, which S3 asks clients to retry, would fail the whole run. A fresh
    // stream per attempt makes the retry safe.
    for (let attempt = 1; ; attempt++) {
      try {
        await this.client.send(
          new PutObjectCommand({
            Bucket: this.opts.bucket,
            Key: this.k(key),
            Body: createReadStream(filePath),
            ContentLength: size,
            ContentType: contentType,
          }),
        );
        return;
      } catch (err) {
        if (attempt >= PUT_ATTEMPTS || !isTransient(err)) throw err;
        await delay(200 * 2 ** (attempt - 1));
      }
    }
  }

  async size(key: string): Promise<number | null> {
    try {
      const out = await this.client.send(new HeadObjectCommand({ Bucket: this.opts.bucket, Key: this.k(key) }));
      return out.ContentLength ?? null;
    } catch (err) {
      if (isNotFound(err)) return null;
      throw err;
    }
  }

  async delete(key: string): Promise<void> {
    await this.client.send(new DeleteObjectCommand({ Bucket: this.opts.bucket, Key: this.k(key) }));
  }
}
