import fs from 'node:fs';
import os from 'node:os';
import { once } from 'node:events';
import zlib from 'node:zlib';

// A minimal PNG writer for raw 8- or 16-bit pixels with an ICC profile attached unchanged. sharp
// cannot do this: raw input has no profile, and withIccProfile() converts the pixels to the
// profile instead of labelling them. The learned upscale computes its pixels outside libvips and
// must hand them back to the same encoders as the Lanczos3 path, profile and all, so it writes
// this file and opens it with keepIccProfile(). Stored deflate blocks (level 0), like the Lanczos
// path's file between its two passes: the file lives a moment on local disk.

const CRC_TABLE = (() => {
  const t = new Int32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c;
  }
  return t;
})();

function crc32(parts: Buffer[]): number {
  // zlib's own (Node 20.15 and later) is ten times faster; the table for older 20.x.
  const native = (zlib as { crc32?: (data: Buffer, value?: number) => number }).crc32;
  if (native) return parts.reduce((c, p) => native(p, c), 0);
  let c = -1;
  for (const p of parts) for (let i = 0; i < p.length; i++) c = CRC_TABLE[(c ^ p[i]!) & 0xff]! ^ (c >>> 8);
  return (c ^ -1) >>> 0;
}

function chunk(type: string, data: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(data.length, 0);
  head.write(type, 4, 'latin1');
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32([head.subarray(4), data]), 0);
  return Buffer.concat([head, data, crc]);
}

export interface RawImage {
  /** Interleaved samples, native byte order (as sharp's raw output gives them). */
  data: Buffer;
  width: number;
  height: number;
  /** 1 grey, 2 grey + alpha, 3 RGB, 4 RGBA. */
  channels: 1 | 2 | 3 | 4;
  depth: 8 | 16;
}

const COLOUR_TYPE = { 1: 0, 2: 4, 3: 2, 4: 6 } as const;

/** Writes `image` to `file` as a PNG, with `icc` (an ICC profile's bytes) as its iCCP chunk when given. */
export async function writePng(file: string, image: RawImage, icc?: Buffer): Promise<void> {
  const out = fs.createWriteStream(file);
  const write = async (b: Buffer) => {
    if (!out.write(b)) await once(out, 'drain');
  };
  try {
    await write(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
    const ihdr = Buffer.alloc(13);
    ihdr.writeUInt32BE(image.width, 0);
    ihdr.writeUInt32BE(image.height, 4);
    ihdr[8] = image.depth;
    ihdr[9] = COLOUR_TYPE[image.channels];
    await write(chunk('IHDR', ihdr));
    if (icc) await write(chunk('iCCP', Buffer.concat([Buffer.from('icc\0\0', 'latin1'), zlib.deflateSync(icc)])));
    const rowBytes = image.width * image.channels * (image.depth / 8);
    const deflate = zlib.createDeflate({ level: 0 });
    const idat = (async () => {
      for await (const data of deflate) await write(chunk('IDAT', data as Buffer));
    })();
    const swap = image.depth === 16 && os.endianness() === 'LE';
    // 64 rows per write (each row: filter byte 0, then its samples); the deflate stream keeps the buffer.
    for (let y0 = 0; y0 < image.height; y0 += 64) {
      const rows = Math.min(64, image.height - y0);
      const block = Buffer.allocUnsafe(rows * (rowBytes + 1));
      for (let r = 0; r < rows; r++) {
        const at = r * (rowBytes + 1);
        block[at] = 0;
        image.data.copy(block, at + 1, (y0 + r) * rowBytes, (y0 + r + 1) * rowBytes);
        // PNG stores 16-bit samples big-endian.
        if (swap) block.subarray(at + 1, at + 1 + rowBytes).swap16();
      }
      if (!deflate.write(block)) await once(deflate, 'drain');
    }
    deflate.end();
    await idat;
    await write(chunk('IEND', Buffer.alloc(0)));
    out.end();
    await once(out, 'finish');
  } catch (err) {
    out.destroy();
    throw err;
  }
}
