import { randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import fs, { type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { writeBody, type Written } from './part-stream.js';
import { normalizeEtag, PartChangedError, type StoredPart } from './storage.js';

// The part records of one local upload, one name per part number in its `parts` directory:
// - in uploads begun since parts are written in place (local-slots.ts), a symlink whose target
//   `slot.<md5>.<size>` says that the part's range of the upload's data file holds that version
//   (the target names no file; the link is only its record);
// - in uploads begun before, a file holding the part's bytes followed by their 16-byte MD5.
//   Bytes and ETag are one file, so one rename(2) replaces both at once: a PUT streams to a
//   temporary file and renames it over the part's name. The replaced version is gone at once
//   (its bytes are freed when the last reader that opened it closes it), concurrent PUTs of one
//   part leave one file (the last rename wins) without any lock, and a reader that has opened a
//   part reads one whole version of it, whatever PUTs come after;
// - in uploads older still, a symlink named after the part number that points at
//   `N.<md5>.<size>.<nonce>.data`. They are still read, and a new PUT replaces them.

const MD5_BYTES = 16;
const LEGACY_TARGET = /^\d+\.([0-9a-f]{32})\.(\d+)\.[0-9a-f]+\.data$/;
const SLOT_TARGET = /^slot\.([0-9a-f]{32})\.(\d+)$/;
const CHUNK = 1024 * 1024;

export { PartTooLargeError } from './part-stream.js';

/** One version of a part: in the data file's range (`slot`), or opened (its first `size` bytes). */
export type PartVersion =
  | { where: 'slot'; etag: string; size: number }
  | { where: 'file'; handle: FileHandle; etag: string; size: number; legacyTarget: string | null };

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

export function partName(partsDir: string, partNumber: number): string {
  return path.join(partsDir, String(partNumber));
}

export function tempName(partsDir: string, partNumber: number, suffix = 'tmp'): string {
  return path.join(partsDir, `.${partNumber}.${randomBytes(6).toString('hex')}.${suffix}`);
}

/** The current version of part n, or null when there is none (or only a torn one). */
export async function openPart(partsDir: string, partNumber: number): Promise<PartVersion | null> {
  const name = partName(partsDir, partNumber);
  const link = await fs.readlink(name).catch(() => null);
  if (link !== null) {
    const slot = SLOT_TARGET.exec(link);
    if (slot?.[1]) return { where: 'slot', etag: slot[1], size: Number(slot[2]) };
    const m = LEGACY_TARGET.exec(link);
    // The target is never rewritten (its name is unique), so opening it by name is consistent.
    const handle = m ? await openOrNull(path.join(partsDir, link)) : null;
    return handle && m?.[1] ? { where: 'file', handle, etag: m[1], size: Number(m[2]), legacyTarget: link } : null;
  }
  const handle = await openOrNull(name);
  if (!handle) return null;
  try {
    const { size } = await handle.stat();
    const md5 = Buffer.alloc(MD5_BYTES);
    const { bytesRead } = size >= MD5_BYTES ? await handle.read(md5, 0, MD5_BYTES, size - MD5_BYTES) : { bytesRead: 0 };
    if (bytesRead === MD5_BYTES) return { where: 'file', handle, etag: md5.toString('hex'), size: size - MD5_BYTES, legacyTarget: null };
  } catch (err) {
    await handle.close();
    throw err;
  }
  await handle.close();
  return null;
}

export async function closePart(part: PartVersion | null): Promise<void> {
  if (part?.where === 'file') await part.handle.close();
}

/**
 * Streams a part's body into a new temporary file in partsDir, hashing as it writes; with
 * `trailer`, the MD5 follows the bytes (the per-part file layout). The file is removed if
 * anything fails; on success the caller owns it.
 */
export async function writeTempPart(partsDir: string, partNumber: number, body: AsyncIterable<Buffer>, maxBytes: number, trailer: boolean): Promise<Written & { file: string }> {
  const file = tempName(partsDir, partNumber);
  try {
    // Read as well as written: its MD5 is taken by reading the bytes back (part-stream.ts).
    const handle = await fs.open(file, 'wx+');
    try {
      const written = await writeBody(body, handle, 0, maxBytes);
      if (trailer) await handle.write(Buffer.from(written.md5, 'hex'), 0, MD5_BYTES, written.size);
      return { ...written, file };
    } finally {
      await handle.close();
    }
  } catch (err) {
    await fs.rm(file, { force: true });
    throw err;
  }
}

/**
 * Replaces part n's record with `replacement` (a file or a symlink) by rename(2), then deletes
 * the bytes of a legacy version it replaced.
 */
export async function replaceRecord(partsDir: string, partNumber: number, replacement: string): Promise<void> {
  const name = partName(partsDir, partNumber);
  const legacy = await fs.readlink(name).catch(() => null);
  await fs.rename(replacement, name);
  if (legacy !== null && LEGACY_TARGET.test(legacy)) await fs.rm(path.join(partsDir, legacy), { force: true });
}

/** Removes part n's record (and a legacy version's bytes): the part then has no version. */
export async function withdrawRecord(partsDir: string, partNumber: number): Promise<void> {
  const name = partName(partsDir, partNumber);
  const legacy = await fs.readlink(name).catch(() => null);
  await fs.rm(name, { force: true });
  if (legacy !== null && LEGACY_TARGET.test(legacy)) await fs.rm(path.join(partsDir, legacy), { force: true });
}

/** Records that part n's range of the data file holds the version with this MD5 and size. */
export async function recordSlot(partsDir: string, partNumber: number, written: Written): Promise<void> {
  const link = tempName(partsDir, partNumber, 'link');
  await fs.symlink(`slot.${written.md5}.${written.size}`, link);
  try {
    await replaceRecord(partsDir, partNumber, link);
  } catch (err) {
    await fs.rm(link, { force: true });
    throw err;
  }
}

/**
 * Streams one part to its own file in the per-part layout (never buffering it whole) and returns
 * its bare hex MD5. A part over maxBytes is cut off there; a refused or failed part leaves nothing
 * behind.
 */
export async function writePartFile(partsDir: string, partNumber: number, body: AsyncIterable<Buffer>, maxBytes: number): Promise<string> {
  const written = await writeTempPart(partsDir, partNumber, body, maxBytes, true);
  try {
    await replaceRecord(partsDir, partNumber, written.file);
  } catch (err) {
    await fs.rm(written.file, { force: true });
    throw err;
  }
  return written.md5;
}

/** Every part stored so far (one version each), by part number. */
export async function listPartFiles(partsDir: string): Promise<StoredPart[]> {
  const parts: StoredPart[] = [];
  for (const name of await fs.readdir(partsDir)) {
    if (!/^\d+$/.test(name)) continue;
    const part = await openPart(partsDir, Number(name));
    if (!part) continue;
    await closePart(part);
    parts.push({ partNumber: Number(name), etag: `"${part.etag}"`, size: part.size });
  }
  return parts.sort((a, b) => a.partNumber - b.partNumber);
}

/**
 * Writes the parts of a per-part-file upload, in order, to `dest`. Each part is opened, checked
 * against the ETag it was listed with and read through that one handle, so a PUT replacing it
 * meanwhile cannot mix its bytes in: the part is either read whole as checked, or
 * PartChangedError is thrown.
 */
export async function assembleParts(partsDir: string, parts: { partNumber: number; etag: string }[], dest: string): Promise<void> {
  const ordered = [...parts].sort((a, b) => a.partNumber - b.partNumber);
  // One pipeline over all parts (not one per part onto a shared stream) with large writes.
  await pipeline(
    async function* () {
      for (const part of ordered) {
        const open = await openPart(partsDir, part.partNumber);
        if (!open || open.where !== 'file' || open.etag !== normalizeEtag(part.etag)) {
          await closePart(open);
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

/** Copies `size` bytes from the start of `from` into `to` at `position`, in 8 MiB reads. */
export async function copyRange(from: FileHandle, to: FileHandle, size: number, position: number): Promise<void> {
  const buf = Buffer.allocUnsafe(Math.min(size, 8 * CHUNK));
  for (let done = 0; done < size; ) {
    const { bytesRead } = await from.read(buf, 0, Math.min(buf.length, size - done), done);
    if (bytesRead === 0) throw new Error('a part ended before its recorded size');
    let off = 0;
    while (off < bytesRead) off += (await to.write(buf, off, bytesRead - off, position + done + off)).bytesWritten;
    done += bytesRead;
  }
}
