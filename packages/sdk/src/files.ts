import { ToolrunError, errorFromResponse } from './errors.ts';
import { fetchOnce, isRetryable, retryDelayMs, sleep, type Transport } from './http.ts';
import { extensionFor, guessMimeType } from './mime.ts';
import type { CompleteUploadBody, FileObject, FileUpload, UploadUrlBody } from './types.ts';

export interface UploadProgress {
  uploadedBytes: number;
  totalBytes: number;
  partsDone: number;
  partsTotal: number;
}

export interface UploadOptions {
  /** Defaults to the path's base name or the File's name, else `upload` plus an extension for the sniffed type. */
  fileName?: string;
  /** Defaults to the type the bytes announce (PNG, JPEG, MP4, ...), then the name's extension, then a Blob's `type`. */
  mimeType?: string;
  /** Called after each part is stored. */
  onProgress?: (progress: UploadProgress) => void;
  /** Parts PUT at once (default 4). */
  concurrency?: number;
  /** Attempts per part before the upload fails (default 4). */
  partAttempts?: number;
  /** Time limit of one part's PUT in ms (default 600000: parts are large). */
  partTimeoutMs?: number;
  signal?: AbortSignal;
}

/** Where the bytes come from: a path read part by part, a Blob sliced part by part, or bytes in memory. */
interface Source {
  size: number;
  head: Uint8Array;
  /** The name the input suggests (a path's base name, a File's name), when it has one. */
  name: string | undefined;
  read(offset: number, length: number): Promise<Uint8Array<ArrayBuffer>>;
  close(): Promise<void>;
}

/** What `files.upload` takes: a local path, bytes (a Buffer is a Uint8Array), or a Blob (or File). */
export type UploadInput = string | Uint8Array | Blob;

async function openSource(input: UploadInput): Promise<Source> {
  if (input instanceof Uint8Array) {
    const bytes = input;
    return {
      size: bytes.byteLength,
      head: bytes.subarray(0, 64),
      name: undefined,
      // A copy (slice): fetch needs a body backed by a plain ArrayBuffer.
      read: async (offset, length) => bytes.slice(offset, offset + length),
      close: async () => undefined,
    };
  }
  if (typeof input !== 'string') {
    const blob = input;
    const name = 'name' in blob && typeof blob.name === 'string' && blob.name ? blob.name : undefined;
    const slice = async (offset: number, length: number) => new Uint8Array(await blob.slice(offset, offset + length).arrayBuffer());
    return { size: blob.size, head: await slice(0, 64), name, read: slice, close: async () => undefined };
  }
  // Imported here, not at the top: reading a path is the only part of an upload that needs node:fs.
  const [{ open }, { basename }] = await Promise.all([import('node:fs/promises'), import('node:path')]);
  const handle = await open(input, 'r');
  try {
    const { size } = await handle.stat();
    const head = new Uint8Array(Math.min(64, size));
    await handle.read(head, 0, head.length, 0);
    return {
      size,
      head,
      name: basename(input),
      read: async (offset, length) => {
        const buf = new Uint8Array(length);
        const { bytesRead } = await handle.read(buf, 0, length, offset);
        if (bytesRead !== length) throw new Error(`${input} changed while it was being uploaded`);
        return buf;
      },
      close: () => handle.close(),
    };
  } catch (err) {
    await handle.close();
    throw err;
  }
}

export class Files {
  constructor(private readonly http: Transport) {}

  /**
   * The whole upload: asks for part URLs, PUTs the parts in parallel (a failed part is sent
   * again, with backoff), keeps each part's ETag, and completes. Resolves with the file; its
   * `status` is `ready` (usable in media inputs) or `rejected` (not a decodable media file; `problem` says why).
   */
  async upload(input: UploadInput, opts: UploadOptions = {}): Promise<FileObject> {
    const source = await openSource(input);
    try {
      if (source.size === 0) throw new Error('Cannot upload an empty file');
      let mimeType = opts.mimeType ?? guessMimeType(opts.fileName ?? source.name, source.head);
      // A Blob's own type is the caller's word, but weaker than what the bytes say they are.
      if (!opts.mimeType && mimeType === 'application/octet-stream' && input instanceof Blob && input.type) mimeType = input.type;
      const fileName = opts.fileName ?? source.name ?? `upload${extensionFor(mimeType)}`;
      const body: UploadUrlBody = { file_name: fileName, mime_type: mimeType, size_bytes: source.size };
      const upload = await this.http.request<FileUpload>('POST', '/v1/files/upload-url', { body, retry: 'refused-only', signal: opts.signal });
      const parts = await this.putParts(upload, source, opts);
      const complete: CompleteUploadBody = { upload_id: upload.upload_id, parts };
      return await this.http.request<FileObject>('POST', `/v1/files/${encodeURIComponent(upload.file_id)}/complete`, {
        body: complete,
        retry: 'refused-only',
        signal: opts.signal,
      });
    } finally {
      await source.close();
    }
  }

  private async putParts(upload: FileUpload, source: Source, opts: UploadOptions): Promise<CompleteUploadBody['parts']> {
    const queue = [...upload.parts].sort((a, b) => a.part_number - b.part_number);
    const etags = new Map<number, string>();
    const progress: UploadProgress = { uploadedBytes: 0, totalBytes: source.size, partsDone: 0, partsTotal: queue.length };
    opts.onProgress?.({ ...progress });
    // One failed part stops the others from starting; those in flight finish or fail on their own.
    const failed = new AbortController();
    const signal = opts.signal ? AbortSignal.any([opts.signal, failed.signal]) : failed.signal;
    const worker = async () => {
      for (let part = queue.shift(); part; part = queue.shift()) {
        if (signal.aborted) return;
        const offset = (part.part_number - 1) * upload.part_size_bytes;
        const length = Math.max(0, Math.min(upload.part_size_bytes, source.size - offset));
        const bytes = await source.read(offset, length);
        etags.set(part.part_number, await this.putPart(part.url, part.part_number, bytes, opts, signal));
        progress.uploadedBytes += length;
        progress.partsDone++;
        opts.onProgress?.({ ...progress });
      }
    };
    const workers = Array.from({ length: Math.max(1, Math.min(opts.concurrency ?? 4, queue.length)) }, () =>
      worker().catch((err: unknown) => {
        failed.abort(err);
        throw err;
      }),
    );
    const results = await Promise.allSettled(workers);
    opts.signal?.throwIfAborted();
    const firstFailure = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (firstFailure) throw firstFailure.reason;
    return [...etags].sort(([a], [b]) => a - b).map(([part_number, etag]) => ({ part_number, etag }));
  }

  /** PUTs one part, again after a connection failure, 408, 429 or 5xx; returns its ETag. */
  private async putPart(url: string, partNumber: number, bytes: Uint8Array<ArrayBuffer>, opts: UploadOptions, signal: AbortSignal): Promise<string> {
    const attempts = opts.partAttempts ?? 4;
    const timeoutMs = opts.partTimeoutMs ?? 600_000;
    for (let attempt = 1; ; attempt++) {
      let error: ToolrunError;
      try {
        const res = await fetchOnce(this.http.opts.fetch, url, { method: 'PUT', body: bytes }, timeoutMs, signal);
        const text = await res.text();
        const etag = res.headers.get('etag');
        if (res.ok && etag) return etag;
        error = res.ok
          ? new ToolrunError({ status: res.status, code: 'missing_etag', message: `Part ${partNumber} was stored but its answer has no ETag header` })
          : errorFromResponse(res.status, res.headers, text);
      } catch (err) {
        if (!(err instanceof ToolrunError)) throw err;
        error = err;
      }
      if (attempt >= attempts || !isRetryable('idempotent', error)) {
        throw new ToolrunError({
          status: error.status,
          code: error.code,
          message: `Part ${partNumber} failed after ${attempt} attempt(s): ${error.message}`,
          requestId: error.requestId,
          errors: error.errors,
          details: { ...error.details, part_number: partNumber, attempts: attempt },
          body: error.body,
          cause: error,
        });
      }
      const delayMs = retryDelayMs(error, attempt - 1, this.http.opts) ?? 1000;
      this.http.opts.onRetry?.({ method: 'PUT', path: `(part ${partNumber})`, attempt, delayMs, error });
      await sleep(delayMs, signal);
    }
  }
}
