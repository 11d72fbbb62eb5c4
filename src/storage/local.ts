import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { Readable } from 'node:stream';
import { UrlSigner } from './signing.js';
import { normalizeEtag, type LocalCopy, type Storage, type StoredPart } from './storage.js';

interface UploadMeta {
  key: string;
  contentType: string;
  partSizeBytes: number;
  /** The declared file size (absent in uploads begun before it was recorded). */
  sizeBytes?: number;
}

const PART_LINK = /^(\d+)\.([0-9a-f]{32})\.(\d+)\.[0-9a-f]+\.data$/;

export class PartTooLargeError extends Error {
  constructor(readonly limit: number) {
    super(`part exceeds ${limit} bytes`);
  }
}
export class UploadNotFoundError extends Error {}

/**
 * Files on local disk under the data directory. Parts are written to a temporary file, then a
 * symlink named after the part number is atomically swapped to point at it; the link target
 * encodes the part's MD5 and size, so the last PUT wins and a listing never sees a half part.
 */
export class LocalStorage implements Storage {
  readonly kind = 'local' as const;
  private readonly objects: string;
  private readonly uploads: string;

  constructor(
    root: string,
    private readonly publicBaseUrl: string,
    readonly signer: UrlSigner,
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
    const meta: UploadMeta = { key, contentType, partSizeBytes, ...(sizeBytes === undefined ? {} : { sizeBytes }) };
    await fs.writeFile(path.join(dir, 'meta.json'), JSON.stringify(meta));
    return uploadId;
  }

  async partUrl(key: string, uploadId: string, partNumber: number, expiresInSeconds: number): Promise<string> {
    return this.signer.sign('PUT', this.publicBaseUrl, `/storage/uploads/${uploadId}/parts/${partNumber}`, expiresInSeconds);
  }

  private async uploadMeta(uploadId: string): Promise<UploadMeta> {
    try {
      return JSON.parse(await fs.readFile(path.join(this.uploadDir(uploadId), 'meta.json'), 'utf8')) as UploadMeta;
    } catch {
      throw new UploadNotFoundError(uploadId);
    }
  }

  /**
   * The most bytes part n may hold: the part size, and no more than the declared file size leaves
   * for it (the last part is the remainder; a part past the end may hold nothing).
   */
  async partLimit(uploadId: string, partNumber: number): Promise<number> {
    const meta = await this.uploadMeta(uploadId);
    if (meta.sizeBytes === undefined) return meta.partSizeBytes;
    return Math.max(0, Math.min(meta.partSizeBytes, meta.sizeBytes - (partNumber - 1) * meta.partSizeBytes));
  }

  /**
   * Streams one part to disk (never buffering it whole) and returns its quoted MD5 ETag.
   * A part may not be larger than partLimit(); a refused or failed part leaves nothing behind.
   */
  async writePart(uploadId: string, partNumber: number, body: Readable): Promise<string> {
    const maxBytes = await this.partLimit(uploadId, partNumber);
    const partsDir = path.join(this.uploadDir(uploadId), 'parts');
    const nonce = randomBytes(6).toString('hex');
    const tmp = path.join(partsDir, `.${partNumber}.${nonce}.tmp`);
    const md5 = createHash('md5');
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
        },
        createWriteStream(tmp, { highWaterMark: 1024 * 1024 }),
      );
      const digest = md5.digest('hex');
      const dataName = `${partNumber}.${digest}.${size}.${nonce}.data`;
      await fs.rename(tmp, path.join(partsDir, dataName));
      const linkTmp = path.join(partsDir, `.${partNumber}.${nonce}.link`);
      await fs.symlink(dataName, linkTmp);
      await fs.rename(linkTmp, path.join(partsDir, String(partNumber)));
      return `"${digest}"`;
    } catch (err) {
      await fs.rm(tmp, { force: true });
      throw err;
    }
  }

  async listParts(_key: string, uploadId: string): Promise<StoredPart[]> {
    const partsDir = path.join(this.uploadDir(uploadId), 'parts');
    let names: string[];
    try {
      names = await fs.readdir(partsDir);
    } catch {
      throw new UploadNotFoundError(uploadId);
    }
    const parts: StoredPart[] = [];
    for (const name of names) {
      if (!/^\d+$/.test(name)) continue;
      const target = await fs.readlink(path.join(partsDir, name)).catch(() => null);
      const m = target ? PART_LINK.exec(target) : null;
      if (m && m[2] && m[3]) parts.push({ partNumber: Number(name), etag: `"${m[2]}"`, size: Number(m[3]) });
    }
    return parts.sort((a, b) => a.partNumber - b.partNumber);
  }

  async completeUpload(key: string, uploadId: string, parts: { partNumber: number; etag: string }[]): Promise<void> {
    const partsDir = path.join(this.uploadDir(uploadId), 'parts');
    const target = this.objectPath(key);
    await fs.mkdir(path.dirname(target), { recursive: true });
    const tmp = `${target}.${randomBytes(6).toString('hex')}.tmp`;
    const files: string[] = [];
    for (const part of [...parts].sort((a, b) => a.partNumber - b.partNumber)) {
      const link = await fs.readlink(path.join(partsDir, String(part.partNumber)));
      const m = PART_LINK.exec(link);
      if (!m || m[2] !== normalizeEtag(part.etag)) throw new Error(`part ${part.partNumber} changed during completion`);
      files.push(path.join(partsDir, link));
    }
    try {
      // One pipeline over all parts (not one per part onto a shared stream) with large writes.
      await pipeline(
        async function* () {
          for (const file of files) yield* createReadStream(file, { highWaterMark: 1024 * 1024 });
        },
        createWriteStream(tmp, { highWaterMark: 1024 * 1024 }),
      );
      await fs.rename(tmp, target);
    } catch (err) {
      await fs.rm(tmp, { force: true });
      throw err;
    }
    await fs.rm(this.uploadDir(uploadId), { recursive: true, force: true });
  }

  async abortUpload(_key: string, uploadId: string): Promise<void> {
    await fs.rm(this.uploadDir(uploadId), { recursive: true, force: true });
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

  async putFile(key: string, filePath: string): Promise<void> {
    const target = this.objectPath(key);
    await fs.mkdir(path.dirname(target), { recursive: true });
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
