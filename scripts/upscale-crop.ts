/**
 * `node --import tsx scripts/upscale-crop.ts`: writes docs/images/upscale-before-after.png, the
 * README's before/after of image_upscale (issue 17). A 144x64 patch (the eyes) of the cat photograph shipped
 * in the ij-test package (a dev dependency) is reduced 2x, then enlarged back 2x by what the tool
 * did before (libvips resize: half a pixel off centre, bicubic whatever the kernel, and a light
 * sharpen) and by the tool now (a centred Lanczos3). Left to right: before, now, the original
 * patch; each shown 3x larger with nearest neighbour so the pixels stay visible.
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';
import { upscaleImage } from '../src/tools/image/upscale.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const OUT = path.join(ROOT, 'docs', 'images', 'upscale-before-after.png');
const PATCH = { left: 226, top: 168, width: 144, height: 64 };
const ZOOM = 3;
const GAP = 8;

const work = await fs.mkdtemp(path.join(os.tmpdir(), 'toolrun-crop-'));
try {
  const original = await sharp(path.join(ROOT, 'node_modules/ij-test/img/cat.jpg')).extract(PATCH).png().toBuffer();
  const small = await sharp(original).resize(PATCH.width / 2, PATCH.height / 2, { kernel: 'cubic' }).png().toBuffer();
  const before = await sharp(small).resize(PATCH.width, PATCH.height, { kernel: 'lanczos3', fit: 'fill' }).sharpen({ sigma: 0.6, m1: 0.5, m2: 1.5 }).png().toBuffer();
  const input = path.join(work, 'small.png');
  await fs.writeFile(input, small);
  const now = await upscaleImage({ input, inputName: 'small.png', outDir: work, signal: new AbortController().signal, progress: () => undefined, timeoutSeconds: 60, method: 'lanczos' });
  const tiles = await Promise.all(
    [before, await fs.readFile(now.path), original].map((b) => sharp(b).resize(PATCH.width * ZOOM, PATCH.height * ZOOM, { kernel: 'nearest' }).png().toBuffer()),
  );
  const w = PATCH.width * ZOOM;
  await fs.mkdir(path.dirname(OUT), { recursive: true });
  await sharp({ create: { width: 3 * w + 2 * GAP, height: PATCH.height * ZOOM, channels: 3, background: '#ffffff' } })
    .composite(tiles.map((input, i) => ({ input, left: i * (w + GAP), top: 0 })))
    .png()
    .toFile(OUT);
  process.stdout.write(`wrote ${path.relative(process.cwd(), OUT)}\n`);
} finally {
  await fs.rm(work, { recursive: true, force: true });
}
