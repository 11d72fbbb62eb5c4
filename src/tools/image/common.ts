import { createHash, hash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import sharp, { type Metadata, type OutputInfo, type Sharp } from 'sharp';
import { ToolError, type ToolOutput } from '../manifest.js';

let configured = false;

/**
 * Process-wide sharp settings, applied once before the first image tool runs:
 * - no libvips operation cache: every run reads a different file, and the cache would keep input
 *   files open (and their memory) after the run deleted them;
 * - libvips threads per pipeline capped at half the cores (at least 1, at most 4), since a worker
 *   runs several runs at once and ffmpeg tools share the machine.
 */
export function configureSharp(): void {
  if (configured) return;
  configured = true;
  sharp.cache(false);
  sharp.concurrency(Math.max(1, Math.min(4, Math.floor(os.availableParallelism() / 2))));
}

/** What a stopped run rejects with: the signal's reason when it is an Error. */
export function stopError(signal: AbortSignal): Error {
  const r: unknown = signal.reason;
  return r instanceof Error ? r : new Error(`stopped (${String(r ?? 'aborted')})`);
}

export function throwIfStopped(signal: AbortSignal): void {
  if (signal.aborted) throw stopError(signal);
}

/**
 * Waits for work that cannot be interrupted (a libvips call) but gives up at once when the
 * signal fires. The abandoned call finishes (or hits its sharp timeout) in the background and
 * its result is dropped; nothing it makes is written to the work directory.
 */
export async function abortable<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  work.catch(() => undefined);
  throwIfStopped(signal);
  let onAbort: () => void = () => undefined;
  const stopped = new Promise<never>((_, reject) => {
    onAbort = () => reject(stopError(signal));
    signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    return await Promise.race([work, stopped]);
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}

/** An output encoding chosen from the input's format. */
export interface OutputFormat {
  ext: string;
  mime: string;
  encode(img: Sharp): Sharp;
}

const JPEG: OutputFormat = { ext: 'jpg', mime: 'image/jpeg', encode: (img) => img.jpeg({ quality: 90 }) };
const PNG: OutputFormat = { ext: 'png', mime: 'image/png', encode: (img) => img.png({ compressionLevel: 6 }) };
const WEBP: OutputFormat = { ext: 'webp', mime: 'image/webp', encode: (img) => img.webp({ quality: 90 }) };
const TIFF: OutputFormat = { ext: 'tiff', mime: 'image/tiff', encode: (img) => img.tiff({ compression: 'lzw' }) };
const AVIF: OutputFormat = { ext: 'avif', mime: 'image/avif', encode: (img) => img.avif({ quality: 70, effort: 2 }) };

/**
 * Same format as the input: JPEG (quality 90), PNG, WebP (quality 90), TIFF (LZW) and AVIF
 * (quality 70) stay what they are. Everything else becomes PNG: GIF (a 256-colour palette would
 * posterise a resampled or graded image; animated inputs give their first frame), and formats
 * sharp reads but should not write here (HEIC, JPEG 2000, JPEG XL, ...).
 */
export function outputFormat(meta: Pick<Metadata, 'format' | 'compression'>): OutputFormat {
  switch (meta.format) {
    case 'jpeg':
      return JPEG;
    case 'png':
      return PNG;
    case 'webp':
      return WEBP;
    case 'tiff':
      return TIFF;
    case 'heif':
      return meta.compression === 'av1' ? AVIF : PNG;
    default:
      return PNG;
  }
}

/** An output file name: the input's name without its extension, a suffix, the format's extension. */
export function outputName(inputName: string, suffix: string, format: OutputFormat): string {
  const stem = path.parse(path.basename(inputName)).name.replace(/[\u0000-\u001f\u007f"\\/]/g, '').slice(0, 100) || 'image';
  return `${stem}-${suffix}.${format.ext}`;
}

/**
 * Writes an image the encoder made in memory and vouches for it (ToolOutput.encoded): the bytes
 * are hashed here, where they already are, and the engine need not decode the file again.
 */
export async function writeEncoded(outDir: string, fileName: string, format: OutputFormat, encoded: { data: Buffer; info: OutputInfo }): Promise<ToolOutput> {
  const file = path.join(outDir, fileName);
  await fs.writeFile(file, encoded.data);
  return {
    path: file,
    fileName,
    mimeType: format.mime,
    encoded: { bytes: encoded.data.length, sha256: hash('sha256', encoded.data, 'hex'), width: encoded.info.width, height: encoded.info.height },
  };
}

/**
 * Encodes straight into the work directory and vouches for the file the same way: the checksum is
 * read back from the file (page cache) rather than taken from a buffer. For image_upscale, whose
 * outputs reach 64 MP: a 16-bit RGBA PNG that size is ~435 MB, which a buffer would hold in memory
 * on top of the pixels being encoded (docs/decisions.md, "image_upscale is priced by decoded bytes").
 * Same encoder, same bytes as toBuffer().
 */
export async function encodeToFile(img: Sharp, outDir: string, fileName: string, format: OutputFormat, signal: AbortSignal): Promise<ToolOutput> {
  const file = path.join(outDir, fileName);
  const info = await abortable(format.encode(img).toFile(file), signal);
  const sha256 = createHash('sha256');
  for await (const chunk of createReadStream(file, { highWaterMark: 1 << 20 })) sha256.update(chunk as Buffer);
  return { path: file, fileName, mimeType: format.mime, encoded: { bytes: info.size, sha256: sha256.digest('hex'), width: info.width, height: info.height } };
}

/** Size as displayed: EXIF orientations 5..8 swap width and height. */
export function orientedSize(meta: Metadata): { width: number; height: number } {
  return { width: meta.autoOrient.width, height: meta.autoOrient.height };
}

/**
 * A libvips failure as a run error: the file is the user's, so "does not decode" is their
 * problem to fix; the library's own message may hold paths, so only a short reason is kept.
 */
export function decodeFailure(err: unknown): ToolError {
  const msg = err instanceof Error ? err.message : String(err);
  if (/pixel limit/i.test(msg)) return new ToolError('The image has more pixels than this tool accepts.');
  if (/timeout/i.test(msg)) return new ToolError('Processing the image took too long and was stopped.');
  return new ToolError('The image could not be decoded or processed; it may be damaged or in an unsupported variant of its format.');
}
