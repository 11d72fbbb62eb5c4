import fs from 'node:fs/promises';
import path from 'node:path';
import { closePart, copyRange, openPart, partName, recordSlot, withdrawRecord, writeTempPart } from './local-parts.js';
import { LOCK_TTL_MS, tryLockParts, waitForLocks } from './part-locks.js';
import { writeBody } from './part-stream.js';
import { normalizeEtag, PartChangedError } from './storage.js';

// Uploads whose parts are written in place: the upload directory holds `data`, the object to be,
// and each part PUT writes its bytes at the part's offset in it (hashing as it writes), so that
// completing the upload is a rename(2), not a copy. `parts/` holds each part's record (see
// local-parts.ts) and the locks that keep two writers out of one part's range (part-locks.ts).
//
// - The first PUT of a part, when no one else is writing it, streams straight into its range
//   under the part's lock, and records the version when the body is whole. A failed one leaves
//   no record (its range holds nothing anyone will read).
// - A part PUT again (or while its first PUT is still arriving) streams to a temporary file, so
//   a failed or refused PUT leaves the version before it intact; once whole, it takes the lock,
//   withdraws the old record, copies itself into the range, records itself and is deleted. So a
//   replaced version is gone at once, the upload holds at most size_bytes plus the parts still
//   arriving, and the last PUT to finish wins.
// - Completion locks every part, checks each record against the ETag it was given, and renames
//   `data` to the object; no writer is in any range meanwhile, and none can open `data` after.

/** How long completion and a replacing PUT wait for a part's lock by default: past a dead holder's expiry. */
export const LOCK_WAIT_MS = LOCK_TTL_MS + 30_000;

export function dataFile(uploadDir: string): string {
  return path.join(uploadDir, 'data');
}

export async function createSlotUpload(uploadDir: string): Promise<void> {
  await fs.writeFile(dataFile(uploadDir), '', { flag: 'wx' });
}

/** Writes a part PUT into the upload's data file; returns its bare hex MD5. */
export async function writeSlotPart(
  uploadDir: string,
  partNumber: number,
  offset: number,
  body: AsyncIterable<Buffer>,
  maxBytes: number,
  lockWaitMs = LOCK_WAIT_MS,
): Promise<string> {
  const partsDir = path.join(uploadDir, 'parts');
  const recorded = () => fs.readlink(partName(partsDir, partNumber)).then(() => true, (err: { code?: string }) => err.code !== 'ENOENT');
  if (!(await recorded())) {
    const lock = await tryLockParts(partsDir, [partNumber]);
    if (lock) {
      try {
        // Records change only under the lock: looked at again, this is certain.
        if (!(await recorded())) {
          const handle = await fs.open(dataFile(uploadDir), 'r+');
          let written;
          try {
            written = await writeBody(body, handle, offset, maxBytes, () => lock.renewIfDue());
          } finally {
            await handle.close();
          }
          await recordSlot(partsDir, partNumber, written);
          return written.md5;
        }
      } finally {
        await lock.release();
      }
    }
  }
  const temp = await writeTempPart(partsDir, partNumber, body, maxBytes, false);
  try {
    const lock = await waitForLocks(partsDir, [partNumber], Date.now() + lockWaitMs);
    try {
      // Withdrawn first: should this copy stop half-way, the range is left with no record, never
      // with the old one over changed bytes.
      await withdrawRecord(partsDir, partNumber);
      const [from, to] = await Promise.all([fs.open(temp.file, 'r'), fs.open(dataFile(uploadDir), 'r+')]);
      try {
        await copyRange(from, to, temp.size, offset);
      } finally {
        await Promise.all([from.close(), to.close()]);
      }
      await recordSlot(partsDir, partNumber, temp);
    } finally {
      await lock.release();
    }
    return temp.md5;
  } finally {
    await fs.rm(temp.file, { force: true });
  }
}

/**
 * Moves the upload's data file to `dest` once every part is checked against its ETag (a part in
 * its own file, from an upload begun before, is copied into its range first). Throws
 * PartChangedError, leaving the upload as it was, when a part is no longer the version listed.
 */
export async function completeSlots(
  uploadDir: string,
  partSizeBytes: number,
  parts: { partNumber: number; etag: string }[],
  dest: string,
  lockWaitMs = LOCK_WAIT_MS,
): Promise<void> {
  const partsDir = path.join(uploadDir, 'parts');
  const ordered = [...parts].sort((a, b) => a.partNumber - b.partNumber);
  const lock = await waitForLocks(partsDir, ordered.map((p) => p.partNumber), Date.now() + lockWaitMs);
  try {
    const data = await fs.open(dataFile(uploadDir), 'r+');
    let total = 0;
    try {
      for (const part of ordered) {
        const version = await openPart(partsDir, part.partNumber);
        try {
          if (!version || version.etag !== normalizeEtag(part.etag)) throw new PartChangedError(part.partNumber);
          const offset = (part.partNumber - 1) * partSizeBytes;
          if (version.where === 'file') await copyRange(version.handle, data, version.size, offset);
          total = offset + version.size;
        } finally {
          await closePart(version);
        }
      }
      // Only ever shorter if a larger version was once written past the end (never, within bounds).
      await data.truncate(total);
    } finally {
      await data.close();
    }
    try {
      await fs.rename(dataFile(uploadDir), dest);
    } catch (err) {
      // Objects on another file system than uploads: the one copy left.
      if ((err as { code?: unknown }).code !== 'EXDEV') throw err;
      await fs.copyFile(dataFile(uploadDir), dest);
    }
  } finally {
    await lock.release().catch(() => undefined);
  }
}
