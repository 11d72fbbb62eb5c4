import sharp from 'sharp';
import { toHex } from './colors.js';

/** Input images larger than this are refused by sharp rather than decoded. */
const MAX_INPUT_PIXELS = 100_000_000;
const SAMPLE_SIDE = 96;
/** Buckets closer than this (RGB distance) are one colour. */
const MERGE_DISTANCE = 40;

export interface PaletteEntry {
  hex: string;
  weight: number;
}

/**
 * The dominant colours of an image: shrunk (nearest neighbour, so no blended edge colours appear),
 * each opaque pixel put in a 4-bit-per-channel bucket, near buckets merged into the heavier one,
 * each colour the mean of its pixels, weight its share of the opaque pixels. Heaviest first.
 */
export async function dominantPalette(path: string, max = 6): Promise<PaletteEntry[]> {
  const { data, info } = await sharp(path, { limitInputPixels: MAX_INPUT_PIXELS, failOn: 'error' })
    .rotate()
    .resize(SAMPLE_SIDE, SAMPLE_SIDE, { fit: 'inside', kernel: 'nearest', withoutEnlargement: true })
    .ensureAlpha()
    .raw()
    .toBuffer({ resolveWithObject: true });
  const buckets = new Map<number, { n: number; r: number; g: number; b: number }>();
  let total = 0;
  for (let i = 0; i + 3 < data.length; i += info.channels) {
    if (data[i + 3]! < 128) continue;
    const r = data[i]!;
    const g = data[i + 1]!;
    const b = data[i + 2]!;
    const key = ((r >> 4) << 8) | ((g >> 4) << 4) | (b >> 4);
    const bucket = buckets.get(key) ?? { n: 0, r: 0, g: 0, b: 0 };
    bucket.n++;
    bucket.r += r;
    bucket.g += g;
    bucket.b += b;
    buckets.set(key, bucket);
    total++;
  }
  if (!total) return [];
  const clusters: { n: number; r: number; g: number; b: number }[] = [];
  for (const b of [...buckets.values()].sort((x, y) => y.n - x.n)) {
    const mean = { r: b.r / b.n, g: b.g / b.n, b: b.b / b.n };
    const near = clusters.find((c) => Math.hypot(c.r / c.n - mean.r, c.g / c.n - mean.g, c.b / c.n - mean.b) < MERGE_DISTANCE);
    if (near) {
      near.n += b.n;
      near.r += b.r;
      near.g += b.g;
      near.b += b.b;
    } else clusters.push({ ...b });
  }
  return clusters
    .sort((x, y) => y.n - x.n)
    .map((c) => ({ hex: toHex({ r: c.r / c.n, g: c.g / c.n, b: c.b / c.n }), weight: Math.round((c.n / total) * 10_000) / 10_000 }))
    .filter((p) => p.weight >= 0.01)
    .slice(0, max);
}

export interface DecodedImage {
  /** The bytes to write: the original, or a PNG rendering of an SVG. */
  bytes: Buffer;
  ext: string;
  mimeType: string;
  sourceFormat: string;
  width: number;
  height: number;
}

const RASTER: Record<string, { ext: string; mime: string }> = {
  png: { ext: 'png', mime: 'image/png' },
  jpeg: { ext: 'jpg', mime: 'image/jpeg' },
  webp: { ext: 'webp', mime: 'image/webp' },
  gif: { ext: 'gif', mime: 'image/gif' },
  tiff: { ext: 'tif', mime: 'image/tiff' },
};
/** Longest side an SVG logo is rendered at. */
const SVG_RENDER_SIDE = 512;
const MAX_LOGO_PIXELS = 40_000_000;

/**
 * Proves bytes are a real image by decoding them with sharp (every pixel, failing on errors).
 * Raster images are kept as they are; SVGs are rendered to PNG (librsvg, no external resources:
 * there is no base path to load them from). Returns null for anything else.
 */
export async function decodeLogo(bytes: Buffer): Promise<DecodedImage | null> {
  try {
    const meta = await sharp(bytes, { limitInputPixels: MAX_LOGO_PIXELS, failOn: 'error' }).metadata();
    if (!meta.width || !meta.height) return null;
    if (meta.format === 'svg') {
      const scale = SVG_RENDER_SIDE / Math.max(meta.width, meta.height);
      const density = Math.min(72 * 8, Math.max(18, 72 * scale));
      const { data, info } = await sharp(bytes, { density, limitInputPixels: MAX_LOGO_PIXELS, failOn: 'error' })
        .png()
        .toBuffer({ resolveWithObject: true });
      // An SVG that draws nothing (a <use> of a sprite elsewhere in the page) is not a logo.
      const { channels } = await sharp(data).stats();
      if (channels.length === 4 && channels[3]!.max === 0) return null;
      return { bytes: data, ext: 'png', mimeType: 'image/png', sourceFormat: 'svg', width: info.width, height: info.height };
    }
    const kind = meta.format === 'heif' && meta.compression === 'av1' ? { ext: 'avif', mime: 'image/avif' } : RASTER[meta.format ?? ''];
    if (!kind) return null;
    await sharp(bytes, { limitInputPixels: MAX_LOGO_PIXELS, failOn: 'error' }).stats();
    const rotated = (meta.orientation ?? 1) >= 5;
    return {
      bytes,
      ext: kind.ext,
      mimeType: kind.mime,
      sourceFormat: kind.ext === 'jpg' ? 'jpeg' : kind.ext,
      width: rotated ? meta.height : meta.width,
      height: rotated ? meta.width : meta.height,
    };
  } catch {
    return null;
  }
}
