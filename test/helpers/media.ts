import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { resolveMediaBinaries } from '../../src/media/binaries.js';

/** A PNG with a gradient and noise, so it does not compress to nothing. */
export async function makePng(width: number, height: number): Promise<Buffer> {
  const raw = Buffer.alloc(width * height * 3);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const i = (y * width + x) * 3;
      raw[i] = (x * 255) / width;
      raw[i + 1] = (y * 255) / height;
      raw[i + 2] = (x * y * 7919) % 256;
    }
  }
  return sharp(raw, { raw: { width, height, channels: 3 } }).png().toBuffer();
}

/** An H.264 + AAC MP4 from ffmpeg's test sources. */
export async function makeMp4(opts: { seconds: number; width: number; height: number; fps?: number; audio?: boolean }): Promise<Buffer> {
  const { ffmpeg } = resolveMediaBinaries();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'toolrun-media-'));
  const out = path.join(dir, 'clip.mp4');
  const args = ['-v', 'error', '-nostdin', '-f', 'lavfi', '-i', `testsrc=size=${opts.width}x${opts.height}:rate=${opts.fps ?? 25}`];
  if (opts.audio !== false) args.push('-f', 'lavfi', '-i', 'sine=frequency=440:sample_rate=44100');
  args.push('-t', String(opts.seconds), '-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p');
  if (opts.audio !== false) args.push('-c:a', 'aac', '-shortest');
  args.push('-movflags', '+faststart', out);
  await new Promise<void>((resolve, reject) => execFile(ffmpeg, args, (err) => (err ? reject(err) : resolve())));
  const buf = fs.readFileSync(out);
  fs.rmSync(dir, { recursive: true, force: true });
  return buf;
}
