import { createHash, randomUUID } from 'node:crypto';
import { createReadStream } from 'node:fs';
import fs from 'node:fs/promises';
import type { Logger } from 'pino';
import type { Db } from '../db/pool.js';
import type { MediaBinaries } from '../media/binaries.js';
import type { Storage } from '../storage/storage.js';
import { ToolError, type EncodedImage, type EncodedVideo, type ToolOutput } from '../tools/manifest.js';
import type { NewOutput } from './repository.js';

export async function sha256File(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** Why a storage write failed, in words for the run's `error`: no paths, hosts or errno names. */
export function storageWriteProblem(err: unknown): string {
  const e = err as { code?: unknown; name?: unknown; $metadata?: { httpStatusCode?: number } };
  switch (e.code) {
    case 'ENOSPC':
      return 'the storage is full (no space left on the device)';
    case 'EDQUOT':
      return 'the storage quota is used up';
    case 'EROFS':
      return 'the storage is read-only';
    case 'EACCES':
    case 'EPERM':
      return 'the service is not allowed to write to the storage';
    case 'EIO':
      return 'the storage reported an I/O error';
  }
  const status = e.$metadata?.httpStatusCode;
  if (status) return `the storage answered ${typeof e.name === 'string' ? e.name : 'an error'} (HTTP ${status})`;
  return 'the storage could not be written to';
}

/**
 * An output that could not be written to storage (disk full, S3 refusing the PUT). Its message
 * is the run's `error`, so the client learns what happened; `cause` is logged for the operator.
 */
export class OutputStoreError extends ToolError {
  constructor(override readonly cause: unknown) {
    super(`The output could not be stored: ${storageWriteProblem(cause)}. The run was not charged; its hold was released.`);
    this.name = 'OutputStoreError';
  }
}

/**
 * Checks each output the tool wrote (size bound, decodes as what it claims or matches what its
 * encoder vouches for, checksum) and stores it. Returns the rows to record; the caller deletes the
 * stored objects if the run cannot finish. When it fails (a bad output, the signal fired) it deletes
 * what it already stored itself.
 */
export async function storeOutputs(
  outputs: ToolOutput[],
  opts: { teamId: string; runId: string; storage: Storage; media: MediaBinaries; maxBytes: number; signal?: AbortSignal },
): Promise<NewOutput[]> {
  const stored: NewOutput[] = [];
  try {
    await storeEach(outputs, opts, stored);
  } catch (err) {
    for (const o of stored) await opts.storage.delete(o.storageKey).catch(() => undefined);
    throw err;
  }
  return stored;
}

interface OutputMeta {
  width: number | null;
  height: number | null;
  durationSeconds: number | null;
}

/**
 * An image the encoder vouches for (ToolOutput.encoded) is checked against its report: the whole
 * length written, the type claimed, the size in its header. A second decode would prove only
 * that libvips can read what libvips just wrote, and cost up to a tenth of the run.
 */
async function checkEncoded(out: ToolOutput, encoded: EncodedImage, size: number): Promise<OutputMeta> {
  if (size !== encoded.bytes) throw new ToolError(`the tool wrote ${size} of the ${encoded.bytes} bytes its encoder made`);
  const { imageHeader } = await import('../media/probe.js');
  const header = await imageHeader(out.path);
  if (header.mime !== out.mimeType || header.width !== encoded.width || header.height !== encoded.height) {
    throw new ToolError(`the tool produced an unreadable output (its header does not match the ${out.mimeType} its encoder made)`);
  }
  return { width: encoded.width, height: encoded.height, durationSeconds: null };
}

/** How far the header's video length may be outside the vouch's range: container timing, a frame or two. */
const VIDEO_LENGTH_SLACK_SECONDS = 0.1;

/**
 * A video a tool's own ffmpeg wrote and vouches for (ToolOutput.encodedVideo), checked against its
 * header alone (one ffprobe, no frame decoded, no packet scan): the whole length, the type claimed,
 * the frame size, codec, length and frame count asked for. What this no longer proves (that the
 * first frame decodes, that the packets' timestamps span the declared length) is in
 * docs/decisions.md, "Video outputs the encoder vouches for".
 */
async function checkEncodedVideo(out: ToolOutput, vouch: EncodedVideo, size: number, media: MediaBinaries): Promise<OutputMeta> {
  if (size !== vouch.bytes) throw new ToolError(`the tool wrote ${size} of the ${vouch.bytes} bytes its encoder made`);
  const { videoHeader } = await import('../media/probe.js');
  const h = await videoHeader(out.path, media);
  if (h.problem) throw new ToolError(`the tool produced an unreadable output (${h.problem})`);
  const length = h.videoSeconds ?? 0;
  const matches =
    h.mime === out.mimeType &&
    h.codec === vouch.codec &&
    h.width === vouch.width &&
    h.height === vouch.height &&
    (vouch.frames === null || h.frames === vouch.frames) &&
    length >= vouch.seconds.min - VIDEO_LENGTH_SLACK_SECONDS &&
    length <= vouch.seconds.max + VIDEO_LENGTH_SLACK_SECONDS;
  if (!matches) {
    const said = `${h.mime ?? 'unknown type'}, ${h.codec ?? 'no codec'} ${h.width ?? '?'}x${h.height ?? '?'}, ${Number(length.toFixed(3))} s, ${h.frames ?? '?'} frames`;
    const { min, max } = vouch.seconds;
    const seconds = min === max ? `${Number(min.toFixed(3))} s` : `${Number(min.toFixed(3))}..${Number(max.toFixed(3))} s`;
    const made = `${out.mimeType}, ${vouch.codec} ${vouch.width}x${vouch.height}, ${seconds}, ${vouch.frames ?? 'any'} frames`;
    throw new ToolError(`the tool produced an unreadable output (its header says ${said}; its encoder made ${made})`);
  }
  return { width: vouch.width, height: vouch.height, durationSeconds: h.seconds };
}

/** That the output is what it claims: JSON parses, media decodes (probeLocalFile). */
async function checkDecodes(out: ToolOutput, media: MediaBinaries): Promise<OutputMeta> {
  if (out.mimeType === 'application/json') {
    try {
      JSON.parse(await fs.readFile(out.path, 'utf8'));
    } catch {
      throw new ToolError('the tool produced invalid JSON');
    }
    return { width: null, height: null, durationSeconds: null };
  }
  // Loaded with the first media output (sharp, file-type, the ffprobe wrappers).
  const { probeLocalFile } = await import('../media/probe.js');
  const probe = await probeLocalFile(out.path, media);
  if (!probe.decodable) throw new ToolError(`the tool produced an unreadable output (${probe.problem ?? 'does not decode'})`);
  return { width: probe.width, height: probe.height, durationSeconds: probe.durationSeconds };
}

async function storeEach(
  outputs: ToolOutput[],
  opts: { teamId: string; runId: string; storage: Storage; media: MediaBinaries; maxBytes: number; signal?: AbortSignal },
  stored: NewOutput[],
): Promise<void> {
  for (const [position, out] of outputs.entries()) {
    if (opts.signal?.aborted) throw opts.signal.reason;
    const { size } = await fs.stat(out.path);
    if (size > opts.maxBytes) throw new ToolError(`an output is ${size} bytes, over the ${opts.maxBytes}-byte limit`);
    let meta: OutputMeta;
    let sha256: string;
    if (out.encoded) {
      meta = await checkEncoded(out, out.encoded, size);
      sha256 = out.encoded.sha256;
    } else {
      // The checksum is read while the probe (sharp's threads, ffprobe) works: one wait, not two.
      const hashing = sha256File(out.path);
      hashing.catch(() => undefined);
      meta = out.encodedVideo ? await checkEncodedVideo(out, out.encodedVideo, size, opts.media) : await checkDecodes(out, opts.media);
      sha256 = await hashing;
    }
    const id = randomUUID();
    const storageKey = `outputs/${opts.teamId}/${opts.runId}/${id}`;
    if (opts.signal?.aborted) throw opts.signal.reason;
    try {
      // Moved, not copied, where storage is on the work directory's file system: the file is not
      // read again here, and the checksum taken above is what the output check compares with.
      await opts.storage.putFile(storageKey, out.path, out.mimeType, { move: true });
    } catch (err) {
      // A put that failed half-way may have left an object behind.
      await opts.storage.delete(storageKey).catch(() => undefined);
      if (opts.signal?.aborted) throw opts.signal.reason;
      throw new OutputStoreError(err);
    }
    stored.push({
      id,
      position,
      storageKey,
      fileName: out.fileName,
      mimeType: out.mimeType,
      width: meta.width,
      height: meta.height,
      durationSeconds: meta.durationSeconds,
      sizeBytes: size,
      sha256,
    });
  }
}

/** Deletes the bytes of outputs past their retention and marks them expired (any process may run it). */
export async function expireOutputs(db: Db, storage: Storage, logger: Logger, batch = 100): Promise<number> {
  let total = 0;
  for (;;) {
    const n = await db.tx(async (tx) => {
      const { rows } = await tx.query<{ id: string; storage_key: string }>(
        `SELECT id, storage_key FROM run_outputs WHERE status IN ('checking', 'ready', 'failed') AND expires_at <= now()
          ORDER BY expires_at LIMIT $1::integer FOR UPDATE SKIP LOCKED`,
        [batch],
      );
      for (const row of rows) {
        await storage.delete(row.storage_key);
        await tx.query(`UPDATE run_outputs SET status = 'expired' WHERE id = $1::uuid`, [row.id]);
      }
      return rows.length;
    });
    total += n;
    if (n < batch) break;
  }
  if (total) logger.info({ outputs: total }, 'expired outputs deleted');
  return total;
}
