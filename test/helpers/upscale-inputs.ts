import sharp, { type Sharp } from 'sharp';
import { encode, raster, type Raster } from './images.js';

// The inputs image_upscale's paths are checked on: odd sizes, one pixel, grey, alpha, 16 bits,
// CMYK, EXIF-rotated and a wide-gamut profile. Deterministic (no randomness, pinned sharp), so
// the hashes of their Lanczos3 outputs can be stored.

export function textured(width: number, height: number): Raster {
  return raster(width, height, (x, y) => [
    (x * 37 + y * 11 + ((x * y) % 17) * 9) % 256,
    (128 + 100 * Math.sin(x / 3) * Math.cos(y / 4)) | 0,
    x > width / 3 && x < (2 * width) / 3 && y > height / 4 ? 230 : (y * 7) % 256,
  ]);
}

function withAlpha(r: Raster): Buffer {
  const out = Buffer.alloc(r.width * r.height * 4);
  for (let p = 0; p < r.width * r.height; p++) {
    r.data.copy(out, p * 4, p * 3, p * 3 + 3);
    out[p * 4 + 3] = (p % r.width) * 7 % 256;
  }
  return out;
}

export interface UpscaleInput {
  name: string;
  fileName: string;
  bytes: Buffer;
}

export async function upscaleInputs(): Promise<UpscaleInput[]> {
  const rgb = textured(37, 23);
  const png = (s: Sharp) => s.png({ compressionLevel: 6 }).toBuffer();
  const raw = (r: Raster, channels: 1 | 2 | 3 | 4 = r.channels as 3) => sharp(r.data, { raw: { width: r.width, height: r.height, channels } });
  const alpha = withAlpha(rgb);
  return [
    { name: 'odd RGB PNG', fileName: 'odd.png', bytes: await encode(rgb, 'png') },
    { name: 'one pixel', fileName: 'one.png', bytes: await encode(raster(1, 1, () => [200, 30, 90]), 'png') },
    { name: 'JPEG', fileName: 'photo.jpg', bytes: await encode(textured(48, 31), 'jpeg') },
    { name: 'RGBA PNG', fileName: 'alpha.png', bytes: await png(sharp(alpha, { raw: { width: 37, height: 23, channels: 4 } })) },
    { name: 'grey PNG', fileName: 'grey.png', bytes: await png(raw(rgb).toColourspace('b-w')) },
    { name: 'grey 16-bit PNG', fileName: 'grey16.png', bytes: await png(raw(rgb).toColourspace('grey16')) },
    { name: 'RGB 16-bit PNG', fileName: 'rgb16.png', bytes: await png(raw(rgb).toColourspace('rgb16')) },
    { name: 'CMYK JPEG', fileName: 'print.jpg', bytes: await raw(rgb).toColourspace('cmyk').jpeg({ quality: 95 }).toBuffer() },
    { name: 'EXIF-rotated JPEG', fileName: 'turned.jpg', bytes: await encode(textured(40, 26), 'jpeg', (s) => s.withMetadata({ orientation: 6 })) },
    { name: 'Display P3 PNG', fileName: 'wide.png', bytes: await encode(rgb, 'png', (s) => s.withIccProfile('p3')) },
    { name: 'WebP', fileName: 'web.webp', bytes: await encode(rgb, 'webp') },
  ];
}
