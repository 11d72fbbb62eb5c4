import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { assembleParts, listPartFiles, writePartFile } from './local-parts.js';
import { completeSlots, createSlotUpload, LOCK_WAIT_MS, writeSlotPart } from './local-slots.js';
import { UrlSigner } from './signing.js';
import type { LocalCopy, Storage, StoredPart } from './storage.js';

interface UploadMeta {
  key: string;
  contentType: string;
  partSizeBytes: number;
  /** The declared file size (absent in uploads begun before it was recorded). */
  sizeBytes?: number;
  /** 'slots': parts are written in place in the upload's data file (local-slots.ts); else one file per part. */
  layout?: 'slots';
}

export class UploadNotFoundError extends Error {}

/**
 * The most bytes part n may hold: the part size, and no more than the declared file size leaves
 * for it (the last part is the remainder; a part past the end may hold nothing).
 */
function limitOf(meta: UploadMeta, partNumber: number): number {
  if (meta.sizeBytes === undefined) return meta.partSizeBytes;
  return Math.max(0, Math.min(meta.partSizeBytes, meta.sizeBytes - (partNumber - 1) * meta.partSizeBytes));
}

/**
 * Files on local disk under the data directory. An upload is a directory holding its metadata,
 * the object to be, into which each part PUT writes its bytes at the part's offset, and a record
 * per part (see local-slots.ts: the last PUT of a part wins, and replaces the previous one at
 * once); completion checks the records and renames the file into place. Uploads begun before
 * (one file per part, local-parts.ts) are still completed, by concatenating their parts.
 */
export class LocalStorage implements Storage {
  readonly kind = 'local' as const;
  private readonly objects: string;
  private readonly uploads: string;

  constructor(
    root: string,
    private readonly publicBaseUrl: string,
    readonly signer: UrlSigner,
    /** How long a replacing part PUT or a completion waits for another PUT of the same part. */
    private readonly lockWaitMs = LOCK_WAIT_MS,
  ) {
    this.objects = path.join(root, 'objects');
    this.uploads = path.join(root, 'uploads');
  }

  objectPath(key: string): string {
    const p = path.resolve(this.objects, key);
    if (!p.startsWith(this.objects + path.sep)) throw new Error(`object key escapes the storage root: ${key}`);
    return p;
  }

  private uploadDir(uploadId: string): string {
    if (!/^[0-9a-f]{32}$/.test(uploadId)) throw new UploadNotFoundError(uploadId);
    return path.join(this.uploads, uploadId);
  }

  async createUpload(key: string, contentType: string, partSizeBytes: number, sizeBytes?: number): Promise<string> {
    this.objectPath(key);
    const uploadId = randomBytes(16).toString('hex');
    const dir = this.uploadDir(uploadId);
    await fs.mkdir(path.join(dir, 'parts'), { recursive: true });
    // Parts can be placed at their offsets only when every part's bound is known.
    const layout = sizeBytes === undefined ? {} : { sizeBytes, layout: 'slots' as const };
    if (layout.layout) await createSlotUpload(dir);
    const meta: UploadMeta = { key, contentType, partSizeBytes, ...layout };
    await fs.writeFile(path.join(dir, 'meta.json'), JSON.stringify(meta));
    return uploadId;
  }

  /** The part's size is not signed in: the upload's recorded sizes bound each part (partLimit). */
  async partUrl(_key: string, uploadId: string, part: { partNumber: number }, expiresInSeconds: number): Promise<string> {
    return this.signer.sign('PUT', this.publicBaseUrl, `/storage/uploads/${uploadId}/parts/${part.partNumber}`, expiresInSeconds);
  }

  private async uploadMeta(uploadId: string): Promise<UploadMeta> {
    try {
      return JSON.parse(await fs.readFile(path.join(this.uploadDir(uploadId), 'meta.json'), 'utf8')) as UploadMeta;
    } catch {
      throw new UploadNotFoundError(uploadId);
    }
  }

  /** The most bytes part n may hold (limitOf). */
  async partLimit(uploadId: string, partNumber: number): Promise<number> {
    return limitOf(await this.uploadMeta(uploadId), partNumber);
  }

  /**
   * Streams one part to disk and returns its quoted MD5 ETag; it replaces the part's previous
   * version, whose bytes are deleted at once. A part may not be larger than partLimit(); a refused
   * or failed part leaves nothing behind.
   */
  async writePart(uploadId: string, partNumber: number, body: AsyncIterable<Buffer>): Promise<string> {
    const meta = await this.uploadMeta(uploadId);
    const maxBytes = limitOf(meta, partNumber);
    const dir = this.uploadDir(uploadId);
    try {
      const md5 =
        meta.layout === 'slots'
          ? await writeSlotPart(dir, partNumber, (partNumber - 1) * meta.partSizeBytes, body, maxBytes, this.lockWaitMs)
          : await writePartFile(path.join(dir, 'parts'), partNumber, body, maxBytes);
      return `"${md5}"`;
    } catch (err) {
      // The upload was completed or expired while the part was arriving: its directory is gone.
      if ((err as { code?: unknown }).code === 'ENOENT') throw new UploadNotFoundError(uploadId);
      throw err;
    }
  }

  async listParts(_key: string, uploadId: string): Promise<StoredPart[]> {
    try {
      return await listPartFiles(path.join(this.uploadDir(uploadId), 'parts'));
    } catch (err) {
      if ((err as { code?: unknown }).code === 'ENOENT') throw new UploadNotFoundError(uploadId);
      throw err;
    }
  }

  async completeUpload(key: string, uploadId: string, parts: { partNumber: number; etag: string }[]): Promise<void> {
    const meta = await this.uploadMeta(uploadId);
    const partsDir = path.join(this.uploadDir(uploadId), 'parts');
    const target = this.objectPath(key);
    await fs.mkdir(path.dirname(target), { recursive: true });
    if (meta.layout === 'slots') {
      await completeSlots(this.uploadDir(uploadId), meta.partSizeBytes, parts, target, this.lockWaitMs);
      await this.removeUpload(uploadId);
      return;
    }
    const tmp = `${target}.${randomBytes(6).toString('hex')}.tmp`;
    try {
      await assembleParts(partsDir, parts, tmp);
      await fs.rename(tmp, target);
    } catch (err) {
      await fs.rm(tmp, { force: true });
      throw err;
    }
    await this.removeUpload(uploadId);
  }

  /** A part PUT still arriving may add a file while the directory is being removed: try again. */
  private async removeUpload(uploadId: string): Promise<void> {
    await fs.rm(this.uploadDir(uploadId), { recursive: true, force: true, maxRetries: 5 });
  }

  async abortUpload(_key: string, uploadId: string): Promise<void> {
    await this.removeUpload(uploadId);
  }

  async downloadUrl(key: string, opts: { expiresInSeconds: number; fileName: string; contentType: string }): Promise<string> {
    return this.signer.sign('GET', this.publicBaseUrl, `/storage/objects/${key}`, opts.expiresInSeconds, {
      filename: opts.fileName,
      type: opts.contentType,
    });
  }

  async readHead(key: string, bytes: number): Promise<Buffer> {
    const handle = await fs.open(this.objectPath(key), 'r');
    try {
      const buf = Buffer.alloc(bytes);
      const { bytesRead } = await handle.read(buf, 0, bytes, 0);
      return buf.subarray(0, bytesRead);
    } finally {
      await handle.close();
    }
  }

  async localCopy(key: string): Promise<LocalCopy> {
    const p = this.objectPath(key);
    await fs.access(p);
    return { path: p, cleanup: async () => undefined };
  }

  async probeSource(key: string): Promise<string> {
    return this.objectPath(key);
  }

  async putFile(key: string, filePath: string, _contentType: string, opts: { move?: boolean } = {}): Promise<void> {
    const target = this.objectPath(key);
    await fs.mkdir(path.dirname(target), { recursive: true });
    if (opts.move) {
      try {
        // The object appears whole or not at all, and no byte is copied.
        await fs.rename(filePath, target);
        return;
      } catch (err) {
        // Work files on another file system (a tmpfs /tmp): copied below, as without move.
        if ((err as { code?: unknown }).code !== 'EXDEV') throw err;
      }
    }
    const tmp = `${target}.${randomBytes(6).toString('hex')}.tmp`;
    try {
      await fs.copyFile(filePath, tmp);
      await fs.rename(tmp, target);
    } catch (err) {
      await fs.rm(tmp, { force: true });
      throw err;
    }
  }

  async size(key: string): Promise<number | null> {
    const st = await fs.stat(this.objectPath(key)).catch(() => null);
    return st ? st.size : null;
  }

  async delete(key: string): Promise<void> {
    await fs.rm(this.objectPath(key), { force: true });
  }
}
