// video_upscale's own x2 network (issue 38 item 3): convolutions on the luma's 2x2 blocks, its
// Lanczos3 base one convolution in the same graph. Checked like the image networks (the stored
// PyTorch output, int8 against fp32, 7-bit weights, tiles) plus what is new: the base is the
// centred Lanczos3, tiles need the wider halo, and odd sides are refused.
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { LumaNet, lumaPlane, sharedVideoNet, VIDEO_NET, videoModelPath } from '../src/tools/upscaler/luma-net.js';
import { centredLanczos3 } from './helpers/lanczos-reference.js';
import { assertCloseToTrained, assertMatchesReference, assertWeightsNeverSaturate, runWhole } from './helpers/luma-nets.js';

const ZERO = path.join(import.meta.dirname, 'fixtures/upscaler/zero-correction-video.onnx');
const REFERENCE = path.join(import.meta.dirname, 'fixtures/upscaler/reference-video.json');

const shipped = sharedVideoNet();
const trained = new LumaNet({ modelPath: videoModelPath('fp32'), threads: 2, ...VIDEO_NET });
const zero = new LumaNet({ modelPath: ZERO, threads: 1, ...VIDEO_NET });
after(async () => {
  await Promise.all([shipped.close(), trained.close(), zero.close()]);
});

/** A plane with detail everywhere: a sine over a ramp. */
function texture(w: number, h: number): Float32Array {
  const plane = lumaPlane(w, h);
  for (let i = 0; i < w * h; i++) plane[i] = (Math.sin(i * 0.37) * 0.5 + 0.5) * ((i % w) / w);
  return plane;
}

const whole = (net: LumaNet, plane: Float32Array, width: number, height: number, opts: { tile?: number; stripRows?: number } = {}) =>
  runWhole(net, { plane, width, height }, 'luma2x', opts);

describe('the video network', () => {
  test('video_upscale runs its own int8 model, on 2x2 blocks with a 12-pixel halo', () => {
    assert.equal(shipped.modelPath, videoModelPath('int8'));
    assert.match(shipped.modelPath, /upscaler-video-x2-int8\.onnx$/);
    assert.deepEqual([shipped.blocks, shipped.halo, shipped.scale], [2, 12, 2]);
  });

  test("the int8 model's weights stay within 7 bits (5 convolutions quantised; the last stays float)", async () => {
    await assertWeightsNeverSaturate(shipped.modelPath, 5);
  });

  test('ONNX Runtime gives the stored PyTorch reference for a fixed input, at most 1 grey level apart', async () => {
    await assertMatchesReference(trained, zero, REFERENCE);
  });

  // Wider than the image networks' 0.5 RMS: 32 channels carry four pixels' worth here, and int8
  // moves the luma by ~0.6 levels RMS; on bench:video-learned that costs 0.01 dB (fp32 +1.25 / +0.98
  // dB over Lanczos, int8 +1.24 / +0.97, the same weights).
  test('the int8 model stays within 6 grey levels of the trained network on a photograph (RMS under 0.75)', async () => {
    await assertCloseToTrained(shipped, trained, { worstLevels: 6, rmsLevels: 0.75 }, { output: 'luma2x', zero });
  });

  test('with no correction the graph gives the centred Lanczos3 of the plane, edges included', async () => {
    const [w, h] = [38, 26];
    const plane = lumaPlane(w, h);
    const bytes = Buffer.alloc(w * h);
    for (let i = 0; i < w * h; i++) {
      bytes[i] = Math.round(127 + 120 * Math.sin(i * 0.91) * Math.cos(i * 0.13));
      plane[i] = bytes[i]! / 255;
    }
    const expected = centredLanczos3({ data: bytes, width: w, height: h, channels: 1 }, 2).data;
    const { out } = await whole(zero, plane, w, h);
    let worst = 0;
    for (let i = 0; i < out.length; i++) worst = Math.max(worst, Math.abs(Math.round(Math.min(1, Math.max(0, out[i]!)) * 255) - expected[i]!));
    assert.ok(worst <= 1, `up to ${worst} grey levels from the reference Lanczos3`);
  });

  test('tiled and untiled are equal with the 12-pixel halo (tiles of 16, strips of 8 against one tile)', async () => {
    const [w, h] = [70, 46];
    const plane = texture(w, h);
    const tiled = await whole(shipped, plane, w, h, { tile: 16, stripRows: 8 });
    const one = await whole(shipped, plane, w, h, { tile: 1000, stripRows: 1000 });
    assert.equal(tiled.strips, 6);
    assert.equal(one.strips, 1);
    let worst = 0;
    for (let i = 0; i < one.out.length; i++) worst = Math.max(worst, Math.abs(tiled.out[i]! - one.out[i]!));
    assert.ok(worst < 1e-4, `worst difference ${worst}`);
  });

  test('the image networks\' 8-pixel halo would not do: tiles then differ (the 12 is needed)', async () => {
    const [w, h] = [70, 46];
    const plane = texture(w, h);
    const narrow = new LumaNet({ modelPath: videoModelPath('fp32'), threads: 1, blocks: 2, halo: 8 });
    try {
      const tiled = await whole(narrow, plane, w, h, { tile: 16, stripRows: 8 });
      const one = await whole(trained, plane, w, h, { tile: 1000, stripRows: 1000 });
      let worst = 0;
      for (let i = 0; i < one.out.length; i++) worst = Math.max(worst, Math.abs(tiled.out[i]! - one.out[i]!));
      assert.ok(worst > 1e-3, `worst difference ${worst}`);
    } finally {
      await narrow.close();
    }
  });

  test('odd sides, tiles or strips are refused before any work; an odd halo at construction', async () => {
    const plane = lumaPlane(9, 8);
    await assert.rejects(shipped.run(plane, 9, 8, 'luma2x', () => assert.fail('no strip')), /multiples of 2/);
    await assert.rejects(shipped.run(lumaPlane(8, 8), 8, 8, 'luma2x', () => assert.fail('no strip'), { stripRows: 3 }), /multiples of 2/);
    await assert.rejects(shipped.run(lumaPlane(8, 8), 8, 8, 'luma2x', () => assert.fail('no strip'), { tile: 5 }), /multiples of 2/);
    assert.throws(() => new LumaNet({ modelPath: ZERO, blocks: 2, halo: 7 }), /even halo/);
  });
});
