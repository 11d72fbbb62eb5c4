import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { LockTimeoutError } from './storage.js';

// Who may write part n's range of an upload's data file: one holder at a time, across processes
// and machines sharing the directory (TOOLRUN_STORAGE=file://, NFS included), with no daemon.
// A holder creates its own empty file `.<n>.lock.<expires-ms>.<nonce>`, then lists the directory:
// if another unexpired lock of that part is there, it removes its own and tries again later. Of
// two that overlap, the later to create sees the earlier's file, so at most one goes on (both may
// step back, then one wins on the next try). Files are only ever removed by their holders, and a
// holder that died leaves one that stops counting when it expires; a live holder renews before.

const LOCK = /^\.(\d+)\.lock\.(\d+)\.[0-9a-f]+$/;
/** A lock counts for this long after it was taken or last renewed. */
export const LOCK_TTL_MS = 120_000;
const RENEW_AFTER_MS = LOCK_TTL_MS / 4;

export interface PartLocks {
  /** Keeps the locks counting while held for long (a part still arriving). */
  renewIfDue(): Promise<void>;
  release(): Promise<void>;
}

interface Held {
  partNumber: number;
  name: string;
}

const nameFor = (partNumber: number, expires: number, nonce: string) => `.${partNumber}.lock.${expires}.${nonce}`;

/** Whether someone else holds an unexpired lock of one of the wanted parts now. */
async function contended(dir: string, mine: Set<string>, wanted: Set<number>): Promise<boolean> {
  const now = Date.now();
  for (const entry of await fs.readdir(dir)) {
    const m = LOCK.exec(entry);
    if (!m || mine.has(entry) || !wanted.has(Number(m[1])) || Number(m[2]) <= now) continue;
    return true;
  }
  return false;
}

async function removeAll(dir: string, held: Held[]): Promise<void> {
  await Promise.all(held.map((h) => fs.rm(path.join(dir, h.name), { force: true })));
}

/** One try at locking the parts: null when one of them is held by someone else. */
export function tryLockParts(dir: string, partNumbers: number[]): Promise<PartLocks | null> {
  return lockParts(dir, partNumbers, 0);
}

/** Locks the parts, waiting until `waitUntil` (Date.now() ms), then throwing LockTimeoutError. */
export async function waitForLocks(dir: string, partNumbers: number[], waitUntil: number): Promise<PartLocks> {
  const lock = await lockParts(dir, partNumbers, Math.max(1, waitUntil));
  if (!lock) throw new LockTimeoutError(partNumbers);
  return lock;
}

/**
 * Locks every part in `partNumbers` of the upload whose parts directory is `dir`, waiting until
 * `waitUntil` (Date.now() ms; 0: a single try). Resolves null when a single try found a part
 * locked; throws LockTimeoutError when the wait ran out, and ENOENT when the upload is gone.
 */
async function lockParts(dir: string, partNumbers: number[], waitUntil: number): Promise<PartLocks | null> {
  const nonce = randomBytes(8).toString('hex');
  const wanted = new Set(partNumbers);
  for (let attempt = 0; ; attempt++) {
    const expires = Date.now() + LOCK_TTL_MS;
    let held: Held[] = partNumbers.map((partNumber) => ({ partNumber, name: nameFor(partNumber, expires, nonce) }));
    try {
      await Promise.all(held.map((h) => fs.writeFile(path.join(dir, h.name), '', { flag: 'wx' })));
      if (!(await contended(dir, new Set(held.map((h) => h.name)), wanted))) {
        let renewedAt = Date.now();
        return {
          async renewIfDue() {
            if (Date.now() - renewedAt < RENEW_AFTER_MS) return;
            renewedAt = Date.now();
            const next = held.map((h) => ({ partNumber: h.partNumber, name: nameFor(h.partNumber, renewedAt + LOCK_TTL_MS, nonce) }));
            // rename(2) swaps the name at once: the lock never disappears while renewed.
            await Promise.all(held.map((h, i) => fs.rename(path.join(dir, h.name), path.join(dir, next[i]!.name))));
            held = next;
          },
          release: () => removeAll(dir, held),
        };
      }
    } catch (err) {
      await removeAll(dir, held).catch(() => undefined);
      throw err;
    }
    await removeAll(dir, held);
    if (waitUntil === 0) return null;
    if (Date.now() >= waitUntil) throw new LockTimeoutError(partNumbers);
    // Growing, jittered back-off: contenders that both stepped back do not meet again in step.
    await new Promise((r) => setTimeout(r, Math.min(200, 2 + attempt * 5) * (0.5 + Math.random())));
  }
}
