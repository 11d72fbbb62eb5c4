import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import zlib from 'node:zlib';
import sharp from 'sharp';
import { resolveMediaBinaries } from '../../src/media/binaries.js';

/**
 * Hostile media for the limits tests, each made in a moment (in memory, or by the bundled ffmpeg
 * from its test sources): files small on disk that claim, or really hold, enormous pictures,
 * thousands of frames or hours of video, and files that lie about what they are.
 */

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

function crc32(buf: Buffer): number {
  let c = 0xffffffff;
  for (const byte of buf) c = CRC_TABLE[(c ^ byte) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function pngChunk(type: string, data: Buffer): Buffer {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([len, body, crc]);
}

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

function png(width: number, height: number, bitDepth: 1 | 8, rows: number): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = bitDepth;
  ihdr[9] = 0; // greyscale
  const rowBytes = 1 + Math.ceil((width * bitDepth) / 8);
  const idat = zlib.deflateSync(Buffer.alloc(rowBytes * rows), { level: 9 });
  return Buffer.concat([PNG_SIGNATURE, pngChunk('IHDR', ihdr), pngChunk('IDAT', idat), pngChunk('IEND', Buffer.alloc(0))]);
}

/** A PNG whose header declares width x height with one row of pixels behind it: ~100 bytes claiming billions of pixels. */
export function pngClaiming(width: number, height: number): Buffer {
  return png(width, height, 8, 1);
}

/**
 * A complete, valid, all-black 1-bit PNG of width x height: every row is there, so it decodes,
 * yet zlib squeezes it about a thousandfold (16000 x 16000, 256 megapixels, is some 31 KB).
 */
export function pngBomb(width: number, height: number): Buffer {
  return png(width, height, 1, height);
}

/** A real 64 x 64 JPEG whose frame header (SOF0) is rewritten to claim width x height (at most 65535 each). */
export async function jpegClaiming(width: number, height: number): Promise<Buffer> {
  const jpeg = await sharp({ create: { width: 64, height: 64, channels: 3, background: '#336699' } }).jpeg({ progressive: false }).toBuffer();
  const sof = jpeg.indexOf(Buffer.from([0xff, 0xc0]));
  if (sof < 0) throw new Error('no SOF0 marker in the JPEG');
  jpeg.writeUInt16BE(height, sof + 5);
  jpeg.writeUInt16BE(width, sof + 7);
  return jpeg;
}

/** A real lossy WebP whose VP8 key frame header is rewritten to claim width x height (at most 16383 each). */
export async function webpClaiming(width: number, height: number): Promise<Buffer> {
  const webp = await sharp({ create: { width: 64, height: 64, channels: 3, background: '#336699' } }).webp({ lossless: false }).toBuffer();
  const start = webp.indexOf(Buffer.from([0x9d, 0x01, 0x2a]));
  if (start < 0) throw new Error('no VP8 key frame start code in the WebP');
  webp.writeUInt16LE(width & 0x3fff, start + 3);
  webp.writeUInt16LE(height & 0x3fff, start + 5);
  return webp;
}

/**
 * An animated GIF of `frames` 1 x 1 frames on a width x height canvas: a few bytes per frame.
 * Decoding every frame at canvas size would take frames x width x height x 4 bytes (5000 frames
 * on 2000 x 2000 is 80 GB); tools must read the first frame only.
 */
export function gifManyFrames(frames: number, width: number, height: number): Buffer {
  const header = Buffer.alloc(13);
  header.write('GIF89a', 0, 'latin1');
  header.writeUInt16LE(width, 6);
  header.writeUInt16LE(height, 8);
  header[10] = 0x80; // a global colour table of 2 entries
  const palette = Buffer.from([0x33, 0x66, 0x99, 0xff, 0xff, 0xff]);
  const loop = Buffer.from([0x21, 0xff, 0x0b, ...Buffer.from('NETSCAPE2.0', 'latin1'), 0x03, 0x01, 0x00, 0x00, 0x00]);
  const frame = Buffer.concat([
    Buffer.from([0x21, 0xf9, 0x04, 0x00, 0x01, 0x00, 0x00, 0x00]), // graphic control: 10 ms
    Buffer.from([0x2c, 0, 0, 0, 0, 0x01, 0x00, 0x01, 0x00, 0x00]), // a 1 x 1 image at 0,0
    Buffer.from([0x02, 0x02, 0x44, 0x01, 0x00]), // its LZW data: one pixel of colour 0
  ]);
  const body = Buffer.alloc(frame.length * frames);
  for (let i = 0; i < frames; i++) frame.copy(body, i * frame.length);
  return Buffer.concat([header, palette, loop, body, Buffer.from([0x3b])]);
}

/** An SVG with an entity expansion bomb ("billion laughs") and a reference to a local file. */
export function svgHostile(): Buffer {
  const entities = ['<!ENTITY a0 "lol">'];
  for (let i = 1; i <= 9; i++) entities.push(`<!ENTITY a${i} "${`&a${i - 1};`.repeat(10)}">`);
  return Buffer.from(
    `<?xml version="1.0"?>\n<!DOCTYPE svg [${entities.join('')}<!ENTITY xxe SYSTEM "file:///etc/passwd">]>\n` +
      '<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="100" height="100">' +
      '<text>&a9;&xxe;</text><image xlink:href="file:///etc/passwd" width="10" height="10"/></svg>',
  );
}

const bins = resolveMediaBinaries();

function ffmpeg(args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile(bins.ffmpeg, ['-v', 'error', '-nostdin', ...args], (err, _out, stderr) => (err ? reject(new Error(`ffmpeg failed: ${String(stderr).slice(-1000)}`)) : resolve()));
  });
}

/**
 * An H.264 MP4 that really is `hours` long, yet a few KB: 64 x 64, one frame an hour (the
 * duration comes from the frame timing, not from a forged header).
 */
export async function longVideo(dir: string, hours: number): Promise<string> {
  const out = path.join(dir, `long-${hours}h.mp4`);
  await ffmpeg(['-f', 'lavfi', '-i', 'color=c=gray:s=64x64:r=1/3600', '-t', String(hours * 3600), '-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', '-y', out]);
  return out;
}

/**
 * A QuickTime file holding one real, black MJPEG frame of width x height: under 0.5 MB for 81
 * megapixels, some 120 MB once decoded. Made by ffmpeg in its own process, so the memory it
 * takes to make does not count against the process under test.
 */
export async function hugeFrameVideo(dir: string, width: number, height: number): Promise<string> {
  const out = path.join(dir, `huge-${width}x${height}.mov`);
  await ffmpeg(['-f', 'lavfi', '-i', `color=c=black:s=${width}x${height}:r=1`, '-frames:v', '1', '-c:v', 'mjpeg', '-pix_fmt', 'yuvj420p', '-q:v', '31', '-y', out]);
  return out;
}

/** An AAC audio file (no video stream) of the given length. */
export async function audioOnly(dir: string, seconds: number): Promise<string> {
  const out = path.join(dir, 'tone.m4a');
  await ffmpeg(['-f', 'lavfi', '-i', 'sine=frequency=440:sample_rate=44100', '-t', String(seconds), '-c:a', 'aac', '-y', out]);
  return out;
}

/**
 * An H.264 + AAC MP4 (moov first, so the head plays) cut to `keep` of its bytes: the header is
 * intact and promises frames that are not there.
 */
export async function truncatedVideo(dir: string, seconds: number, keep: number): Promise<Buffer> {
  const out = path.join(dir, 'whole.mp4');
  await ffmpeg([
    '-f', 'lavfi', '-i', 'testsrc=size=320x180:rate=25', '-f', 'lavfi', '-i', 'sine=frequency=440:sample_rate=44100',
    '-t', String(seconds), '-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', '-c:a', 'aac', '-shortest', '-movflags', '+faststart', '-y', out,
  ]);
  const whole = await fs.readFile(out);
  return whole.subarray(0, Math.floor(whole.length * keep));
}

/** Reads an EBML variable-length integer at `at`: its length in bytes and its value (marker bit removed when `strip`). */
function ebmlVint(buf: Buffer, at: number, strip: boolean): { length: number; value: number } {
  const first = buf[at]!;
  let length = 1;
  while (length <= 8 && !(first & (0x80 >> (length - 1)))) length++;
  if (length > 8) throw new Error(`no EBML number at byte ${at}`);
  let value = strip ? first & (0xff >> length) : first;
  for (let i = 1; i < length; i++) value = value * 256 + buf[at + i]!;
  return { length, value };
}

/**
 * Rewrites a Matroska file's Segment > Info > Duration (EBML ID 0x4489, a big-endian float of 4
 * or 8 bytes in TimecodeScale units) to claim `seconds`, leaving every packet as it was. Walks
 * the element tree instead of searching for the bytes, so a look-alike in the data is never hit.
 */
export function patchMkvDuration(mkv: Buffer, seconds: number): Buffer {
  const out = Buffer.from(mkv);
  const SEGMENT = 0x18538067;
  const INFO = 0x1549a966;
  const TIMECODE_SCALE = 0x2ad7b1;
  const DURATION = 0x4489;
  /** Children of the element whose body spans [from, to): their id, body offset and body size. */
  const children = (from: number, to: number) => {
    const list: { id: number; body: number; size: number }[] = [];
    for (let at = from; at < to; ) {
      const id = ebmlVint(out, at, false);
      const size = ebmlVint(out, at + id.length, true);
      const body = at + id.length + size.length;
      // An unknown size (all ones, as a live Segment may have) runs to the end of its parent.
      const unknown = size.value === 2 ** (7 * size.length) - 1;
      list.push({ id: id.value, body, size: unknown ? to - body : size.value });
      at = body + (unknown ? to - body : size.value);
    }
    return list;
  };
  const segment = children(0, out.length).find((e) => e.id === SEGMENT);
  if (!segment) throw new Error('no Segment element');
  const info = children(segment.body, segment.body + segment.size).find((e) => e.id === INFO);
  if (!info) throw new Error('no Info element');
  const fields = children(info.body, info.body + info.size);
  const scale = fields.find((e) => e.id === TIMECODE_SCALE);
  const nsPerUnit = scale ? out.readUIntBE(scale.body, scale.size) : 1_000_000;
  const duration = fields.find((e) => e.id === DURATION);
  if (!duration) throw new Error('no Duration element');
  const units = (seconds * 1e9) / nsPerUnit;
  if (duration.size === 8) out.writeDoubleBE(units, duration.body);
  else if (duration.size === 4) out.writeFloatBE(units, duration.body);
  else throw new Error(`a Duration of ${duration.size} bytes`);
  return out;
}

/**
 * A Matroska file `seconds` long (64 x 36 H.264 at `fps`, with an Opus tone unless `audio` is
 * false; or the tone alone when `video` is false) whose container says it lasts `claims` seconds.
 */
export async function mkvClaiming(
  dir: string,
  name: string,
  opts: { seconds: number; claims: number; fps?: number; video?: boolean; audio?: boolean },
): Promise<Buffer> {
  const out = path.join(dir, name);
  const args: string[] = [];
  if (opts.video !== false) args.push('-f', 'lavfi', '-i', `testsrc=size=64x36:rate=${opts.fps ?? 4}`);
  if (opts.audio !== false) args.push('-f', 'lavfi', '-i', 'sine=frequency=440:sample_rate=48000');
  args.push('-t', String(opts.seconds));
  if (opts.video !== false) args.push('-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p');
  if (opts.audio !== false) args.push('-c:a', 'libopus', '-b:a', '16k');
  await ffmpeg([...args, '-f', 'matroska', '-y', out]);
  return patchMkvDuration(await fs.readFile(out), opts.claims);
}
