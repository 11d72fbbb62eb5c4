/**
 * Generated inputs for the tool benchmarks: photos-like JPEG/PNG images (gradients plus a
 * high-frequency pattern, so they neither compress to nothing nor look like pure noise) and
 * H.264 + AAC clips from ffmpeg's test sources, each of a requested size.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import sharp from 'sharp';
import { resolveMediaBinaries } from '../../src/media/binaries.js';
import type { DirectFile } from './bench-tools.js';

/** A 4:3 image of about `megapixels` MP written to dir/name (JPEG q90 or PNG). */
/** The largest makeImage() image_upscale takes (4082 x 3062): it refuses inputs over 4096 px a side. */
export const UPSCALE_MAX_MP = 12.5;

export async function makeImage(dir: string, name: string, megapixels: number, slot: string): Promise<DirectFile> {
  const width = Math.max(64, Math.round(Math.sqrt((megapixels * 1e6 * 4) / 3) / 2) * 2);
  const height = Math.max(48, Math.round((width * 3) / 4 / 2) * 2);
  const raw = Buffer.alloc(width * height * 3);
  for (let y = 0, i = 0; y < height; y++) {
    for (let x = 0; x < width; x++, i += 3) {
      raw[i] = (x * 255) / width;
      raw[i + 1] = (y * 255) / height;
      raw[i + 2] = ((x * y * 7919) >> 3) & 0xff;
    }
  }
  const file = path.join(dir, name);
  const png = name.endsWith('.png');
  const img = sharp(raw, { raw: { width, height, channels: 3 } });
  await (png ? img.png({ compressionLevel: 3 }) : img.jpeg({ quality: 90 })).toFile(file);
  return { slot, path: file, fileName: name, mime: png ? 'image/png' : 'image/jpeg', info: { kind: 'image', width, height, durationSeconds: null } };
}

/** A testsrc2 clip with a sine tone (H.264 ultrafast + AAC, +faststart) of the given size and length. */
export async function makeClip(dir: string, name: string, opts: { width: number; height: number; seconds: number; fps: number; slot: string }): Promise<DirectFile> {
  const { ffmpeg } = resolveMediaBinaries();
  const file = path.join(dir, name);
  const args = [
    '-v', 'error', '-nostdin', '-y',
    '-f', 'lavfi', '-i', `testsrc2=size=${opts.width}x${opts.height}:rate=${opts.fps}`,
    '-f', 'lavfi', '-i', 'sine=frequency=440:sample_rate=44100',
    '-t', String(opts.seconds), '-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p',
    '-c:a', 'aac', '-shortest', '-movflags', '+faststart', file,
  ];
  await new Promise<void>((resolve, reject) => execFile(ffmpeg, args, (err, _out, stderr) => (err ? reject(new Error(`ffmpeg: ${stderr}`)) : resolve())));
  return {
    slot: opts.slot,
    path: file,
    fileName: name,
    mime: 'video/mp4',
    info: { kind: 'video', width: opts.width, height: opts.height, durationSeconds: opts.seconds },
  };
}
