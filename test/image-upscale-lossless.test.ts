// The models for lossless inputs (issue 38 item 1; docs/decisions.md "A second x4 model for
// lossless inputs", "A model for lossless inputs at 2x"): one per factor, trained without JPEG
// artefacts for PNG and TIFF inputs, while JPEG, WebP, GIF and palette PNG keep the models trained
// with them. Each file checked as the other models are, and the choice checked on what the runner
// does with no network given.
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import sharp from 'sharp';
import { losslessInput } from '../src/tools/image/upscale.js';
import { defaultModelPath, LumaNet, type LumaScale } from '../src/tools/upscaler/luma-net.js';
import { textured } from './helpers/upscale-inputs.js';
import { assertCloseToTrained, assertMatchesReference, assertWeightsNeverSaturate } from './helpers/luma-nets.js';
import { assertLumaOnlyChange, upscaleRun } from './helpers/upscale-run.js';

const fixture = (name: string) => path.join(import.meta.dirname, 'fixtures/upscaler', name);
const FILES: Record<LumaScale, { zero: string; reference: string }> = {
  2: { zero: fixture('zero-correction.onnx'), reference: fixture('reference-x2-lossless.json') },
  4: { zero: fixture('zero-correction-x4.onnx'), reference: fixture('reference-x4-lossless.json') },
};

const nets: LumaNet[] = [];
const net = (opts: ConstructorParameters<typeof LumaNet>[0]) => {
  const made = new LumaNet(opts);
  nets.push(made);
  return made;
};
after(async () => {
  await Promise.all(nets.map((n) => n.close()));
});

const photo = () => sharp(textured(40, 28).data, { raw: { width: 40, height: 28, channels: 3 } });

for (const scale of [2, 4] as const) {
  const lossless = net({ scale, modelPath: defaultModelPath(scale, 'int8', 'lossless'), threads: 2 });
  const trained = net({ scale, modelPath: defaultModelPath(scale, 'fp32', 'lossless'), threads: 2 });
  const anyInput = net({ scale, threads: 1 });
  const zero = net({ scale, modelPath: FILES[scale].zero, threads: 1 });

  describe(`the x${scale} model for lossless inputs`, () => {
    test('it is a file of its own', () => {
      assert.match(lossless.modelPath, new RegExp(`upscaler-x${scale}-lossless-int8\\.onnx$`));
      assert.match(anyInput.modelPath, new RegExp(`upscaler-x${scale}-int8\\.onnx$`));
    });

    test('the int8 model\'s weights stay within 7 bits', async () => {
      await assertWeightsNeverSaturate(lossless.modelPath, 7);
    });

    test('the int8 model stays within 8 grey levels of the trained network on a photograph (RMS under 0.75)', async () => {
      await assertCloseToTrained(lossless, trained, { worstLevels: 8, rmsLevels: 0.75 });
    });

    test('ONNX Runtime gives the stored PyTorch reference for a fixed input, at most 1 grey level apart', async () => {
      await assertMatchesReference(trained, zero, FILES[scale].reference);
    });

    test(`with no network given, a PNG at ${scale}x gets the lossless model and a JPEG the other; either changes luma only`, async () => {
      const png = await photo().png().toBuffer();
      const jpeg = await photo().jpeg({ quality: 90 }).toBuffer();
      const run = (bytes: Buffer, name: string, chosen?: LumaNet) => upscaleRun(bytes, name, 'learned', chosen, { scale });
      const [pngDefault, pngLossless, pngAny] = [await run(png, 'a.png'), await run(png, 'a.png', lossless), await run(png, 'a.png', anyInput)];
      assert.ok(pngDefault.bytes.equals(pngLossless.bytes), 'a PNG gets the lossless model');
      assert.ok(!pngDefault.bytes.equals(pngAny.bytes), 'the two models give different pictures');
      const [jpegDefault, jpegAny] = [await run(jpeg, 'a.jpg'), await run(jpeg, 'a.jpg', anyInput)];
      assert.ok(jpegDefault.bytes.equals(jpegAny.bytes), 'a JPEG gets the model for any input');
      await assertLumaOnlyChange(await upscaleRun(png, 'a.png', 'lanczos', undefined, { scale }), pngLossless);
    });
  });
}

describe('which model an input gets', () => {
  test('PNG (not palette) and TIFF count as lossless; JPEG, WebP, GIF and palette PNG do not', async () => {
    const kinds: [string, Buffer, boolean][] = [
      ['PNG', await photo().png().toBuffer(), true],
      ['16-bit PNG', await photo().toColourspace('rgb16').png().toBuffer(), true],
      ['palette PNG', await photo().png({ palette: true }).toBuffer(), false],
      ['TIFF', await photo().tiff().toBuffer(), true],
      ['JPEG', await photo().jpeg().toBuffer(), false],
      ['WebP', await photo().webp().toBuffer(), false],
      ['lossless WebP', await photo().webp({ lossless: true }).toBuffer(), false],
      ['GIF', await photo().gif().toBuffer(), false],
    ];
    for (const [name, bytes, expected] of kinds) assert.equal(losslessInput(await sharp(bytes).metadata()), expected, name);
  });
});
