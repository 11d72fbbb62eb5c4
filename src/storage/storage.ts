import { ApiError } from '../core/errors.js';

/** One stored part of a multipart upload. `etag` is the quoted hex MD5, as S3 gives it. */
export interface StoredPart {
  partNumber: number;
  etag: string;
  size: number;
}

export interface LocalCopy {
  path: string;
  cleanup(): Promise<void>;
}

/**
 * Where file bytes live. Clients PUT parts and GET downloads straight to URLs this hands out;
 * the service itself only creates, checks, completes and deletes.
 */
export interface Storage {
  readonly kind: 'local' | 's3';
  /** sizeBytes: the file's declared size, so a backend that takes the parts itself can bound each. */
  createUpload(key: string, contentType: string, partSizeBytes: number, sizeBytes?: number): Promise<string>;
  /**
   * The URL part n is PUT to. `sizeBytes` is that part's exact size (the last part: the remainder),
   * so a backend that cannot bound the body itself (S3) can have the URL refuse any other length.
   */
  partUrl(key: string, uploadId: string, part: { partNumber: number; sizeBytes: number }, expiresInSeconds: number): Promise<string>;
  /**
   * Parts stored so far, or null when the backend cannot list them (then completion checks less).
   * Throws UploadGoneError when the store no longer holds the upload.
   */
  listParts(key: string, uploadId: string): Promise<StoredPart[] | null>;
  /**
   * Throws PartChangedError when a listed part is no longer the one stored (replaced meanwhile),
   * UploadGoneError when the store no longer holds the upload, PartTooSmallError when it refuses
   * parts under its minimum size.
   */
  completeUpload(key: string, uploadId: string, parts: { partNumber: number; etag: string }[]): Promise<void>;
  abortUpload(key: string, uploadId: string): Promise<void>;
  downloadUrl(key: string, opts: { expiresInSeconds: number; fileName: string; contentType: string }): Promise<string>;
  /** The first bytes of an object, for sniffing its type. */
  readHead(key: string, bytes: number): Promise<Buffer>;
  /** The object's bytes as a local file, for probing and tools. */
  localCopy(key: string): Promise<LocalCopy>;
  /** A URL the probe (ffprobe) may read the object from: a local path or a presigned GET. */
  probeSource(key: string): Promise<string>;
  /**
   * Stores the file's bytes under key. With `move` the caller gives the file up: a backend on the
   * same file system takes it by rename(2) instead of copying it (the path is gone afterwards).
   */
  putFile(key: string, filePath: string, contentType: string, opts?: { move?: boolean }): Promise<void>;
  size(key: string): Promise<number | null>;
  delete(key: string): Promise<void>;
}

/** S3-style ETags are quoted; clients may send them with or without the quotes. */
export function normalizeEtag(etag: string): string {
  return etag.trim().replace(/^W\//, '').replace(/^"+|"+$/g, '').toLowerCase();
}

/**
 * A part was PUT again after completion had checked it, so what storage holds no longer has the
 * ETag completion was given. Nothing was assembled; completing with the new ETag works.
 */
export class LockTimeoutError extends Error {
  constructor(readonly partNumbers: number[]) {
    super(`part ${partNumbers.join(', ')} stayed locked`);
  }
}

/**
 * What a client is told when a part's lock outlived the wait: another PUT of it was still being
 * written (a live writer keeps its lock; a dead one's expires within the wait).
 */
export function partInProgress(err: LockTimeoutError, doing: 'put' | 'complete'): ApiError {
  const parts = err.partNumbers.join(', ');
  return new ApiError(
    'part_in_progress',
    doing === 'put'
      ? `Another PUT of part ${parts} is still being written; retry once it has finished.`
      : `Part ${parts} is still being written by another PUT; complete the upload once every part PUT has finished.`,
    { details: { part_numbers: err.partNumbers } },
  );
}

export class PartChangedError extends Error {
  constructor(readonly partNumber: number) {
    super(`part ${partNumber} changed during completion`);
  }
}

/**
 * The store no longer knows the multipart upload: it was aborted underneath the service (a bucket
 * lifecycle rule, an operator). AWS answers NoSuchUpload; Ceph's radosgw NoSuchKey. Its parts are
 * gone, so only a new upload can bring the file.
 */
export class UploadGoneError extends Error {
  constructor(readonly storeCode: string) {
    super(`the store no longer holds this multipart upload (${storeCode})`);
  }
}

/**
 * The store refused to assemble parts under its minimum part size (S3: EntityTooSmall, 5 MiB for
 * every part but the last). Only a part size below the store's, possible with the test-only
 * TOOLRUN_S3_ALLOW_SMALL_PARTS, leads here; the same parts can never be assembled.
 */
export class PartTooSmallError extends Error {
  constructor(readonly storeCode: string) {
    super(`the store refused parts under its minimum part size (${storeCode})`);
  }
}
