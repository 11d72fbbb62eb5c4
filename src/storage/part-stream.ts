import type { FileHandle } from 'node:fs/promises';
import { beginMd5 } from './md5-worker.js';

/** Bytes gathered into one write(2): 16 socket chunks of 64 KiB. */
const BATCH_BYTES = 1024 * 1024;

export class PartTooLargeError extends Error {
  constructor(readonly limit: number) {
    super(`part exceeds ${limit} bytes`);
  }
}

export interface Written {
  /** Bare hex MD5 of the bytes written. */
  md5: string;
  size: number;
}

/** writev(2) of every byte of `buffers` at `position`, carrying on after a short write (bench:upload's baseline writes with it too). */
export async function writeAll(handle: FileHandle, buffers: Buffer[], position: number): Promise<void> {
  let at = position;
  let rest = buffers;
  while (rest.length) {
    const { bytesWritten } = await handle.writev(rest, at);
    // Never again from the same place: a file system that takes nothing would loop for ever.
    if (bytesWritten === 0) throw new Error('the file system accepted no bytes');
    at += bytesWritten;
    // A short write (rare on a regular file): carry on from where it stopped.
    let skip = bytesWritten;
    const next: Buffer[] = [];
    for (const b of rest) {
      if (skip >= b.length) skip -= b.length;
      else {
        next.push(skip ? b.subarray(skip) : b);
        skip = 0;
      }
    }
    if (next.length && bytesWritten === 0) throw Object.assign(new Error('the file system accepted no bytes'), { code: 'EIO' });
    rest = next;
  }
}

/**
 * Writes a part's body into `handle` from `position`: one pass over the bytes, no stream pipeline
 * in between. Chunks are gathered into writes of about 1 MiB, and the next batch is read while
 * the previous one is written. Each batch, once written, is hashed (MD5) by a worker thread that
 * reads it back (md5-worker.ts), off the event loop's thread. A body over maxBytes is refused
 * before its extra bytes are written. `onBatch` runs after each batch is handed to the file.
 * `handle` must be open for reading too.
 */
export async function writeBody(
  body: AsyncIterable<Buffer>,
  handle: FileHandle,
  position: number,
  maxBytes: number,
  onBatch?: () => Promise<void>,
): Promise<Written> {
  const md5 = beginMd5();
  let size = 0;
  let batch: Buffer[] = [];
  let batchBytes = 0;
  let at = position;
  let writing: Promise<void> = Promise.resolve();
  const flush = async () => {
    await writing;
    const [from, length] = [at, batchBytes];
    // Written batches are hashed in the order they are written (one write at a time).
    const p = writeAll(handle, batch, from).then(() => md5.update(handle.fd, from, length));
    // Awaited at the next flush or at the end; until then a failure must not go unhandled.
    p.catch(() => undefined);
    writing = p;
    at += batchBytes;
    batch = [];
    batchBytes = 0;
    await onBatch?.();
  };
  try {
    for await (const chunk of body) {
      size += chunk.length;
      if (size > maxBytes) throw new PartTooLargeError(maxBytes);
      batch.push(chunk);
      batchBytes += chunk.length;
      if (batchBytes >= BATCH_BYTES) await flush();
    }
    if (batchBytes) await flush();
    await writing;
  } catch (err) {
    // No write, and no read of the hashing thread, may still be under way once the caller
    // closes or removes the file.
    await writing.catch(() => undefined);
    await md5.abort();
    throw err;
  }
  return { md5: await md5.digest(), size };
}
