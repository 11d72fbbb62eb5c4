// What the image tool tests (test/tools-image-*.test.ts) share: a tool's runner run directly on
// real files, its output decoded for measuring, and the measures more than one of them uses.
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import sharp, { type Metadata } from 'sharp';
import type { Loc } from '../../src/core/errors.js';
import type { imageUpscale } from '../../src/tools/catalog/image-upscale.js';
import type { ToolOutput } from '../../src/tools/manifest.js';
import { decode, means, runContext, type Raster } from './images.js';

export const slot = (name: string): Loc => ['body', 'inputs', name];

/** Runs a tool's runner directly on real files; returns its one output, decoded, and its metadata. */
export async function runDirect(
  tool: typeof imageUpscale,
  bytes: Buffer,
  fileName: string,
  values: Record<string, unknown> = {},
  runId?: string,
): Promise<{ out: ToolOutput; meta: Metadata; pixels: Raster; bytes: Buffer; progress: number[] }> {
  const { ctx, progress, cleanup } = await runContext(tool, bytes, fileName, { values, ...(runId ? { runId } : {}) });
  try {
    assert.ok(tool.run);
    const outputs = await tool.run(ctx);
    assert.equal(outputs.length, 1);
    const out = outputs[0]!;
    assert.equal((await fs.readdir(ctx.workDir)).length, 1, 'one file in the work directory');
    const written = await fs.readFile(out.path);
    return { out, meta: await sharp(written).metadata(), pixels: await decode(written), bytes: written, progress };
  } finally {
    await cleanup();
  }
}

export const redOverBlue = (r: Raster) => {
  const [red, , blue] = means(r, undefined, true);
  return red / blue;
};
