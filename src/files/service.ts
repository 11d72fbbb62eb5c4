import { randomUUID } from 'node:crypto';
import type { Config } from '../config/config.js';
import type { Db } from '../db/pool.js';
import { ApiError, invalidRequest, type FieldError } from '../core/errors.js';
import { atItem, count } from '../core/wording.js';
import type { MediaBinaries } from '../media/binaries.js';
import {
  LockTimeoutError,
  normalizeEtag,
  PartChangedError,
  partInProgress,
  PartTooSmallError,
  UploadGoneError,
  type Storage,
  type StoredPart,
} from '../storage/storage.js';
import { insertFile, lockTeamFile, markExpired, recordProbe, type FileRow } from './repository.js';
import type { CompleteBody, FileResource, FileUpload, UploadUrlBody } from './schemas.js';

export interface FilesDeps {
  config: Config;
  db: Db;
  storage: Storage;
  media: MediaBinaries;
}

const MIB = 1024 * 1024;
export const MAX_PARTS = 10_000;

/** The configured part size, grown (to whole MiB) so that no upload needs more than 10,000 parts. */
export function partSizeFor(sizeBytes: number, configured: number): number {
  if (Math.ceil(sizeBytes / configured) <= MAX_PARTS) return configured;
  return Math.ceil(sizeBytes / MAX_PARTS / MIB) * MIB;
}

export async function startUpload(deps: FilesDeps, auth: { teamId: string; keyId: string | null }, body: UploadUrlBody): Promise<FileUpload> {
  const { config, db, storage } = deps;
  if (body.size_bytes > config.files.maxFileBytes) {
    throw invalidRequest([
      { loc: ['body', 'size_bytes'], message: `must be at most ${count(config.files.maxFileBytes, 'byte')}`, code: 'too_large' },
    ]);
  }
  const id = randomUUID();
  const partSize = partSizeFor(body.size_bytes, config.files.partSizeBytes);
  const partCount = Math.ceil(body.size_bytes / partSize);
  const storageKey = `files/${auth.teamId}/${id}`;
  const uploadId = await storage.createUpload(storageKey, body.mime_type, partSize, body.size_bytes);
  try {
    await insertFile(db.pool, {
      id,
      teamId: auth.teamId,
      apiKeyId: auth.keyId,
      fileName: body.file_name,
      declaredMime: body.mime_type,
      sizeBytes: body.size_bytes,
      partSizeBytes: partSize,
      partCount,
      storageKey,
      uploadId,
      uploadExpirySeconds: config.files.uploadExpirySeconds,
    });
  } catch (err) {
    // Without its row nothing would ever clean this upload up (the janitor works from rows).
    // The insert's failure is the answer; a failed abort leaves what it leaves.
    await storage.abortUpload(storageKey, uploadId).catch(() => undefined);
    throw err;
  }
  const ttl = config.files.partUrlTtlSeconds;
  const parts = await Promise.all(
    Array.from({ length: partCount }, async (_, i) => ({
      part_number: i + 1,
      // Each URL is for the part's exact size (the last: the remainder), where storage can bind it.
      url: await storage.partUrl(
        storageKey,
        uploadId,
        { partNumber: i + 1, sizeBytes: Math.min(partSize, body.size_bytes - i * partSize) },
        ttl,
      ),
    })),
  );
  return { object: 'file_upload', file_id: id, upload_id: uploadId, part_size_bytes: partSize, parts, expires_in_seconds: ttl };
}

/** Every listed part once, 1..n, each matching what storage holds, adding up to size_bytes. */
function checkParts(file: FileRow, body: CompleteBody, stored: StoredPart[] | null): FieldError[] {
  const errors: FieldError[] = [];
  const n = file.part_count;
  const seen = new Set<number>();
  const storedByNumber = new Map((stored ?? []).map((p) => [p.partNumber, p]));
  body.parts.forEach((p, i) => {
    if (p.part_number > n) {
      errors.push({ loc: ['body', 'parts', i, 'part_number'], message: `this upload has parts 1 to ${n}`, code: 'unknown_part' });
      return;
    }
    if (seen.has(p.part_number)) {
      errors.push({ loc: ['body', 'parts', i, 'part_number'], message: `part ${p.part_number} is listed twice`, code: 'duplicate_part' });
      return;
    }
    seen.add(p.part_number);
    if (!stored) return;
    const s = storedByNumber.get(p.part_number);
    if (!s) {
      errors.push({ loc: ['body', 'parts', i, 'etag'], message: `part ${p.part_number} was never uploaded`, code: 'part_not_uploaded' });
    } else if (normalizeEtag(s.etag) !== normalizeEtag(p.etag)) {
      errors.push({
        loc: ['body', 'parts', i, 'etag'],
        message: `does not match the stored part ${p.part_number} (${s.etag}); send the ETag its last PUT returned`,
        code: 'etag_mismatch',
      });
    } else {
      const expected = p.part_number < n ? file.part_size_bytes : file.size_bytes - (n - 1) * file.part_size_bytes;
      if (s.size !== expected) {
        errors.push({
          loc: ['body', 'parts'],
          message: atItem(i, `part ${p.part_number} holds ${count(s.size, 'byte')}; it must hold ${expected} for a file of size_bytes ${file.size_bytes}`),
          code: 'size_mismatch',
        });
      }
    }
  });
  for (let k = 1; k <= n; k++) {
    if (!seen.has(k)) errors.push({ loc: ['body', 'parts'], message: `part ${k} is missing`, code: 'part_missing' });
  }
  return errors;
}

/** The file object; a rejected file says why its bytes were refused. */
function fileResource(id: string, ready: boolean, problem: string | null): FileResource {
  if (ready) return { object: 'file', id, status: 'ready' };
  return { object: 'file', id, status: 'rejected', problem: problem ?? 'not a decodable image, video or audio file' };
}

/**
 * Completes the upload, then sniffs and probes the bytes. The file row stays locked throughout,
 * so concurrent completes wait and then all see the one outcome (completion is idempotent).
 */
export async function completeUpload(deps: FilesDeps, teamId: string, fileId: string, body: CompleteBody): Promise<FileResource> {
  const { config, db, storage, media } = deps;
  // The prober (sharp, file-type, the ffprobe wrappers) loads on the first completion, outside
  // the transaction that holds the file's lock; later completions find it loaded.
  const { probeStored } = await import('../media/probe.js');
  type Ended = { assembledBytes: number; sizeBytes: number } | { gone: string } | { tooSmall: number };
  const outcome = await db.tx(async (tx): Promise<FileResource | Ended> => {
    const file = await lockTeamFile(tx, teamId, fileId);
    if (!file || file.status === 'expired') {
      throw new ApiError('file_not_found', `No file ${fileId} (unknown, of another team, or expired). Start a new upload.`);
    }
    if (body.upload_id !== file.upload_id) {
      throw invalidRequest([{ loc: ['body', 'upload_id'], message: 'is not the upload_id of this file', code: 'upload_id_mismatch' }]);
    }
    if (file.status !== 'uploading') return fileResource(file.id, file.status === 'ready', file.problem);

    // A crash after assembling but before commit leaves the object in place: accept it as done.
    const assembled = (await storage.size(file.storage_key)) === file.size_bytes;
    if (!assembled) {
      let stored: StoredPart[] | null;
      try {
        stored = await storage.listParts(file.storage_key, file.upload_id);
      } catch (err) {
        if (!(err instanceof UploadGoneError)) throw err;
        // Nothing can bring its parts back: end the file in this commit, so the answer holds.
        await markExpired(tx, file.id);
        return { gone: err.storeCode };
      }
      const errors = checkParts(file, body, stored);
      if (errors.length) throw invalidRequest(errors);
      try {
        await storage.completeUpload(
          file.storage_key,
          file.upload_id,
          body.parts.map((p) => ({ partNumber: p.part_number, etag: p.etag })),
        );
      } catch (err) {
        if (err instanceof LockTimeoutError) throw partInProgress(err, 'complete');
        if (err instanceof UploadGoneError) {
          await markExpired(tx, file.id);
          return { gone: err.storeCode };
        }
        if (err instanceof PartTooSmallError) {
          // The same parts would be refused again on every retry: the upload is used up.
          await storage.abortUpload(file.storage_key, file.upload_id).catch(() => undefined);
          await markExpired(tx, file.id);
          return { tooSmall: file.part_size_bytes };
        }
        if (err instanceof PartChangedError) {
          const i = body.parts.findIndex((p) => p.part_number === err.partNumber);
          throw invalidRequest([
            {
              loc: ['body', 'parts', i, 'etag'],
              message: `part ${err.partNumber} was PUT again while completing; send the ETag its last PUT returned`,
              code: 'etag_mismatch',
            },
          ]);
        }
        // Backends that cannot list parts only tell us at completion that a part is wrong; those
        // that can, when a part was PUT again after it was listed.
        if ((err as { name?: string }).name?.startsWith('InvalidPart')) {
          throw invalidRequest([{ loc: ['body', 'parts'], message: 'a part or its ETag does not match what was uploaded', code: 'etag_mismatch' }]);
        }
        throw err;
      }
      const size = await storage.size(file.storage_key);
      if (size !== file.size_bytes) {
        // Seen only in the assembled object (the backend cannot list parts), when the multipart
        // upload is already used up: this file can never complete. Delete the wrong bytes and end
        // the file in this commit; the client starts a new upload.
        await storage.delete(file.storage_key);
        await markExpired(tx, file.id);
        return { assembledBytes: size ?? 0, sizeBytes: file.size_bytes };
      }
    }
    const probe = await probeStored(storage, file.storage_key, media);
    const status = await recordProbe(tx, file.id, probe, config.files.retentionSeconds);
    return fileResource(file.id, status === 'ready', probe.problem);
  });
  if ('gone' in outcome) {
    throw new ApiError(
      'upload_not_found',
      `The storage no longer holds this upload (${outcome.gone}): it was aborted outside the service, by a bucket lifecycle rule or an operator. Start a new upload.`,
    );
  }
  if ('tooSmall' in outcome) {
    throw new ApiError(
      'part_too_small',
      `The storage refused to assemble parts of ${count(outcome.tooSmall, 'byte')}: that is under its minimum part size (S3: 5 MiB for every part but the last). ` +
        'The server is misconfigured (TOOLRUN_PART_SIZE_BYTES, with the test-only TOOLRUN_S3_ALLOW_SMALL_PARTS); tell its operator. This upload cannot complete.',
      { details: { part_size_bytes: outcome.tooSmall } },
    );
  }
  if ('assembledBytes' in outcome) {
    throw invalidRequest([
      {
        loc: ['body', 'parts'],
        message: `the parts hold ${count(outcome.assembledBytes, 'byte')}; size_bytes was ${outcome.sizeBytes}. This upload is used up: start a new one`,
        code: 'size_mismatch',
      },
    ]);
  }
  return outcome;
}
