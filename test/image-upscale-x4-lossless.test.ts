// The second x4 model (issue 38 item 1; docs/decisions.md "A second x4 model for lossless inputs"):
// trained on clean reductions for PNG and TIFF inputs, while JPEG, WebP, GIF and palette PNG keep
// the model trained with artefacts, noise and grain. The file checked as the other models are,
// and the choice checked on what the runner does with no network given.
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import sharp from 'sharp';
import { losslessInput } from '../src/tools/image/upscale.js';
import { defaultModelPath, LumaNet } from '../src/tools/upscaler/luma-net.js';
import { textured } from './helpers/upscale-inputs.js';
import { assertCloseToTrained, assertMatchesReference, assertWeightsNeverSaturate } from './helpers/luma-nets.js';
import { assertLumaOnlyChange, upscaleRun } from './helpers/upscale-run.js';

const ZERO_X4 = path.join(import.meta.dirname, 'fixtures/upscaler/zero-correction-x4.onnx');
const REFERENCE = path.join(import.meta.dirname, 'fixtures/upscaler/reference-x4-lossless.json');

const lossless = new LumaNet({ scale: 4, modelPath: defaultModelPath(4, 'int8', 'lossless'), threads: 2 });
const trained = new LumaNet({ scale: 4, modelPath: defaultModelPath(4, 'fp32', 'lossless'), threads: 2 });
const anyInput = new LumaNet({ scale: 4, threads: 1 });
const zero = new LumaNet({ scale: 4, modelPath: ZERO_X4, threads: 1 });
after(async () => {
  await Promise.all([lossless.close(), trained.close(), anyInput.close(), zero.close()]);
});

const photo = () => sharp(textured(40, 28).data, { raw: { width: 40, height: 28, channels: 3 } });

describe('the x4 model for lossless inputs', () => {
  test('it is a file of its own; at 2x both kinds of input share the one model', () => {
    assert.match(lossless.modelPath, /upscaler-x4-lossless-int8\.onnx$/);
    assert.notEqual(lossless.modelPath, anyInput.modelPath);
    assert.equal(defaultModelPath(2, 'int8', 'lossless'), defaultModelPath(2, 'int8', 'any'));
  });

  test('the int8 model\'s weights stay within 7 bits', async () => {
    await assertWeightsNeverSaturate(lossless.modelPath, 7);
  });

  test('the int8 model stays within 8 grey levels of the trained network on a photograph (RMS under 0.75)', async () => {
    await assertCloseToTrained(lossless, trained, { worstLevels: 8, rmsLevels: 0.75 });
  });

  test('ONNX Runtime gives the stored PyTorch reference for a fixed input, at most 1 grey level apart', async () => {
    await assertMatchesReference(trained, zero, REFERENCE);
  });
});

describe('which x4 model an input gets', () => {
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

  test('with no network given, a PNG at 4x gets the lossless model and a JPEG the other; either changes luma only', async () => {
    const png = await photo().png().toBuffer();
    const jpeg = await photo().jpeg({ quality: 90 }).toBuffer();
    const run = (bytes: Buffer, name: string, net?: LumaNet) => upscaleRun(bytes, name, 'learned', net, { scale: 4 });
    const [pngDefault, pngLossless, pngAny] = [await run(png, 'a.png'), await run(png, 'a.png', lossless), await run(png, 'a.png', anyInput)];
    assert.ok(pngDefault.bytes.equals(pngLossless.bytes), 'a PNG gets the lossless model');
    assert.ok(!pngDefault.bytes.equals(pngAny.bytes), 'the two models give different pictures');
    const [jpegDefault, jpegAny] = [await run(jpeg, 'a.jpg'), await run(jpeg, 'a.jpg', anyInput)];
    assert.ok(jpegDefault.bytes.equals(jpegAny.bytes), 'a JPEG gets the model for any input');
    await assertLumaOnlyChange(await upscaleRun(png, 'a.png', 'lanczos', undefined, { scale: 4 }), pngLossless);
  });
});
