import fs from 'node:fs/promises';
import path from 'node:path';
import { builtinTools, createToolRegistry, type ToolRegistry } from '../../src/tools/registry.js';
import { megapixels, ToolError, type ToolManifest } from '../../src/tools/manifest.js';

/** Resolves when the signal fires: what a long-running tool looks like to the engine. */
function untilAborted(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    if (signal.aborted) reject(new Error('aborted'));
    signal.addEventListener('abort', () => reject(new Error('aborted')), { once: true });
  });
}

/**
 * A test-only tool: copies its image to the output, or fails, hangs, or writes garbage, as its
 * `mode` says. Priced like a real tool from the probed image (2 + 1 per started megapixel).
 */
export const testCopy: ToolManifest = {
  id: 'test_copy',
  name: 'Test copy',
  description: 'Copies its input image (tests only).',
  family: 'test',
  outputKind: 'image',
  consent: 'none',
  productId: 'test_copy',
  inputs: [
    { name: 'image', kind: 'image', required: true, min: 1, max: 1 },
    { name: 'mode', kind: 'enum', required: false, min: 0, max: 1, choices: ['ok', 'fail', 'hang', 'garbage', 'crash', 'slow'], default: 'ok' },
    { name: 'copies', kind: 'number', required: false, min: 0, max: 1, constraints: { minimum: 1, maximum: 3 }, default: 1 },
  ],
  plans: ['plus', 'pro', 'team'],
  pipeline: false,
  price: (input) => 2 + Math.ceil(megapixels(input.media.image?.[0])),
  priceRange: { cheapest: { values: {}, media: {}, durationHint: null }, dearest: { values: {}, media: {}, durationHint: null } },
  run: async (ctx) => {
    const mode = String(ctx.values.mode ?? 'ok');
    const image = ctx.files.image?.[0];
    if (!image) throw new ToolError('no image');
    ctx.progress(0.25);
    if (mode === 'fail') throw new ToolError('The test tool was asked to fail.');
    if (mode === 'crash') throw new Error('internal detail that must not leak');
    if (mode === 'hang') await untilAborted(ctx.signal);
    if (mode === 'slow') {
      // Works in small steps until told to stop or done (about 3 s).
      for (let i = 0; i < 30; i++) {
        if (ctx.signal.aborted) throw new Error('aborted');
        await new Promise((r) => setTimeout(r, 100));
        ctx.progress(0.25 + i / 40);
      }
    }
    const outputs = [];
    for (let i = 0; i < Number(ctx.values.copies ?? 1); i++) {
      const out = path.join(ctx.workDir, `copy-${i}.png`);
      if (mode === 'garbage') await fs.writeFile(out, 'not an image');
      else await fs.copyFile(image.path, out);
      outputs.push({ path: out, fileName: `copy-${i + 1}.png`, mimeType: 'image/png' });
    }
    ctx.progress(0.9);
    return outputs;
  },
};

export const testPipeline: ToolManifest = { ...testCopy, id: 'test_pipeline', name: 'Test pipeline', productId: 'test_pipeline', pipeline: true };
export const testTeamOnly: ToolManifest = { ...testCopy, id: 'test_team_only', name: 'Test team only', productId: 'test_team_only', plans: ['team'] };
export const testVoice: ToolManifest = {
  ...testCopy,
  id: 'test_voice',
  name: 'Test voice',
  productId: 'test_voice',
  consent: 'voice',
  inputs: [...testCopy.inputs, { name: 'voice', kind: 'element', required: true, min: 1, max: 1 }],
};

export function testRegistry(): ToolRegistry {
  return createToolRegistry([...builtinTools(), testCopy, testPipeline, testTeamOnly, testVoice]);
}
