import { createHash, randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import fs, { type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { Readable } from 'node:stream';
import { normalizeEtag, PartChangedError, type StoredPart } from './storage.js';

// The parts of one local upload: one file per part number, named after it, holding the part's
// bytes followed by their 16-byte MD5. Bytes and ETag are one file, so one rename(2) replaces both
// at once: a PUT streams to a temporary file and renames it over the part's name. The replaced
// version is gone at once (its bytes are freed when the last reader that opened it closes it),
// concurrent PUTs of one part leave one file (the last rename wins) without any lock, and a
// reader that has opened a part reads one whole version of it, whatever PUTs come after.
//
// Uploads begun before this layout hold, per part, a symlink named after the part number that
// points at `N.<md5>.<size>.<nonce>.data`. They are still read, and a new PUT replaces them.

const MD5_BYTES = 16;
const LEGACY_TARGET = /^\d+\.([0-9a-f]{32})\.(\d+)\.[0-9a-f]+\.data$/;
const CHUNK = 1024 * 1024;

export class PartTooLargeError extends Error {
  constructor(readonly limit: number) {
    super(`part exceeds ${limit} bytes`);
  }
}

/** One version of a part, opened: its first `size` bytes are the part; `etag` is bare hex. */
interface OpenPart {
  handle: FileHandle;
  etag: string;
  size: number;
}

function errorCode(err: unknown): unknown {
  return (err as { code?: unknown }).code;
}

async function openOrNull(file: string): Promise<FileHandle | null> {
  try {
    return await fs.open(file, 'r');
  } catch (err) {
    if (errorCode(err) === 'ENOENT') return null;
    throw err;
  }
}

/** The current version of part n, or null when there is none (or only a torn one). */
async function openPart(partsDir: string, partNumber: number): Promise<OpenPart | null> {
  const name = path.join(partsDir, String(partNumber));
  const legacy = await fs.readlink(name).catch(() => null);
  if (legacy !== null) {
    const m = LEGACY_TARGET.exec(legacy);
    // The target is never rewritten (its name is unique), so opening it by name is consistent.
    const handle = m ? await openOrNull(path.join(partsDir, legacy)) : null;
    return handle && m?.[1] ? { handle, etag: m[1], size: Number(m[2]) } : null;
  }
  const handle = await openOrNull(name);
  if (!handle) return null;
  try {
    const { size } = await handle.stat();
    const md5 = Buffer.alloc(MD5_BYTES);
    const { bytesRead } = size >= MD5_BYTES ? await handle.read(md5, 0, MD5_BYTES, size - MD5_BYTES) : { bytesRead: 0 };
    if (bytesRead === MD5_BYTES) return { handle, etag: md5.toString('hex'), size: size - MD5_BYTES };
  } catch (err) {
    await handle.close();
    throw err;
  }
  await handle.close();
  return null;
}

/**
 * Streams one part to disk (never buffering it whole) and returns its bare hex MD5. A part over
 * maxBytes is cut off there; a refused or failed part leaves nothing behind.
 */
export async function writePartFile(partsDir: string, partNumber: number, body: Readable, maxBytes: number): Promise<string> {
  const tmp = path.join(partsDir, `.${partNumber}.${randomBytes(6).toString('hex')}.tmp`);
  const md5 = createHash('md5');
  // Set by the stream once the whole body has passed (closures defeat narrowing of a plain let).
  const done = { hex: '' };
  let size = 0;
  try {
    await pipeline(
      body,
      async function* (source: AsyncIterable<Buffer>) {
        for await (const chunk of source) {
          size += chunk.length;
          if (size > maxBytes) throw new PartTooLargeError(maxBytes);
          md5.update(chunk);
          yield chunk;
        }
        const digest = md5.digest();
        done.hex = digest.toString('hex');
        yield digest;
      },
      createWriteStream(tmp, { flags: 'wx', highWaterMark: CHUNK }),
    );
    if (!done.hex) throw new Error('part digest missing after the body ended');
    const name = path.join(partsDir, String(partNumber));
    const legacy = await fs.readlink(name).catch(() => null);
    await fs.rename(tmp, name);
    if (legacy !== null && LEGACY_TARGET.test(legacy)) await fs.rm(path.join(partsDir, legacy), { force: true });
    return done.hex;
  } catch (err) {
    await fs.rm(tmp, { force: true });
    throw err;
  }
}

/** Every part stored so far (one version each), by part number. */
export async function listPartFiles(partsDir: string): Promise<StoredPart[]> {
  const parts: StoredPart[] = [];
  for (const name of await fs.readdir(partsDir)) {
    if (!/^\d+$/.test(name)) continue;
    const part = await openPart(partsDir, Number(name));
    if (!part) continue;
    await part.handle.close();
    parts.push({ partNumber: Number(name), etag: `"${part.etag}"`, size: part.size });
  }
  return parts.sort((a, b) => a.partNumber - b.partNumber);
}

/**
 * Writes the parts, in order, to `dest`. Each part is opened, checked against the ETag it was
 * listed with and read through that one handle, so a PUT replacing it meanwhile cannot mix its
 * bytes in: the part is either read whole as checked, or PartChangedError is thrown.
 */
export async function assembleParts(partsDir: string, parts: { partNumber: number; etag: string }[], dest: string): Promise<void> {
  const ordered = [...parts].sort((a, b) => a.partNumber - b.partNumber);
  // One pipeline over all parts (not one per part onto a shared stream) with large writes.
  await pipeline(
    async function* () {
      for (const part of ordered) {
        const open = await openPart(partsDir, part.partNumber);
        if (!open || open.etag !== normalizeEtag(part.etag)) {
          await open?.handle.close();
          throw new PartChangedError(part.partNumber);
        }
        if (open.size === 0) {
          await open.handle.close();
          continue;
        }
        yield* open.handle.createReadStream({ start: 0, end: open.size - 1, highWaterMark: CHUNK });
      }
    },
    createWriteStream(dest, { highWaterMark: CHUNK }),
  );
}
