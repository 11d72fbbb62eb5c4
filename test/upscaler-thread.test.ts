// One thread for a process's networks (docs/decisions.md "One thread for a process's networks"):
// several models in one NetThread give what each gives in a thread of its own (strips of different
// models interleaved, so the thread swaps sessions between them), a failing model fails only its own
// runs, a closed net frees its session and loads it again when asked, and a second network costs
// no second strip of activations.
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { defaultModelPath, LumaNet, lumaPlane, sharedLumaNet, sharedVideoNet, VIDEO_NET, videoModelPath } from '../src/tools/upscaler/luma-net.js';
import { NetThread } from '../src/tools/upscaler/net-thread.js';
import { photoLuma, runWhole } from './helpers/luma-nets.js';

const thread = new NetThread();
const anyX2 = new LumaNet({ modelPath: defaultModelPath(2, 'int8', 'any'), threads: 2, thread });
const losslessX2 = new LumaNet({ modelPath: defaultModelPath(2, 'int8', 'lossless'), threads: 2, thread });
const x4 = new LumaNet({ scale: 4, modelPath: defaultModelPath(4, 'int8', 'lossless'), threads: 2, thread });
const video = new LumaNet({ modelPath: videoModelPath(), threads: 2, ...VIDEO_NET, thread });
after(async () => {
  await thread.close();
});

const MIB = 1 << 20;

/** A plane with detail everywhere, sides even (the video network's blocks). */
function texture(w: number, h: number): Float32Array {
  const plane = lumaPlane(w, h);
  for (let i = 0; i < w * h; i++) plane[i] = (Math.sin(i * 0.37) * 0.5 + 0.5) * ((i % w) / w);
  return plane;
}

describe('one thread for several networks', () => {
  test("the process's shipped networks share one thread", () => {
    const nets = [sharedLumaNet(2, 'any'), sharedLumaNet(2, 'lossless'), sharedLumaNet(4, 'any'), sharedLumaNet(4, 'lossless'), sharedVideoNet()];
    const threads = new Set(nets.map((net) => (net as unknown as { thread: NetThread }).thread));
    assert.equal(threads.size, 1);
    assert.equal(new Set(nets.map((net) => net.modelPath)).size, 5);
  });

  test('four models asked at once, strips interleaved, each give what a thread of its own gives', async () => {
    const photo = await photoLuma();
    // Small strips and tiles: every model's strips queue behind the others' in the one thread.
    const opts = { tile: 64, stripRows: 16 };
    const nets = [anyX2, losslessX2, x4, video];
    const together = await Promise.all(nets.map((net) => runWhole(net, photo, net === video ? 'luma2x' : 'correction', opts)));
    for (const [i, net] of nets.entries()) {
      const alone = new LumaNet({ scale: net.scale, modelPath: net.modelPath, threads: 2, halo: net.halo, blocks: net.blocks });
      try {
        const own = await runWhole(alone, photo, net === video ? 'luma2x' : 'correction', opts);
        assert.equal(together[i]!.strips, photo.height / 16);
        assert.deepEqual(together[i]!.out, own.out, `${path.basename(net.modelPath)}: shared and own thread differ`);
      } finally {
        await alone.close();
      }
    }
    // The models differ, so the comparison above could tell their outputs apart.
    assert.notDeepEqual(together[0]!.out, together[1]!.out);
  });

  test("a model that cannot load fails its own runs; the others' go on in the same thread", async () => {
    const broken = new LumaNet({ modelPath: path.join(import.meta.dirname, 'fixtures/upscaler/no-such-model.onnx'), threads: 1, thread });
    const photo = await photoLuma();
    const [bad, good] = await Promise.allSettled([runWhole(broken, photo), runWhole(anyX2, photo)]);
    assert.equal(bad.status, 'rejected');
    assert.match(String((bad as PromiseRejectedResult).reason), /the upscaler's network failed: .*no-such-model\.onnx/);
    assert.equal(good.status, 'fulfilled');
  });

  test('a closed net frees its session and loads it again on its next run; the others keep theirs', async () => {
    const photo = await photoLuma();
    const before = await runWhole(losslessX2, photo);
    await losslessX2.close();
    const [again, other] = await Promise.all([runWhole(losslessX2, photo), runWhole(anyX2, photo)]);
    assert.deepEqual(again.out, before.out);
    assert.equal(other.strips, 1);
  });

  // Each network in a thread of its own kept its session's arena, a strip's activations: 160-210 MiB
  // more RSS per model after a 2000x2000 run (measured when this changed). The one thread keeps one
  // session and releases it before loading the next: 0-16 MiB measured.
  test('a second model run on a large plane adds little memory to the first', async () => {
    const [w, h] = [2000, 2000];
    const plane = texture(w, h);
    const drain = () => undefined;
    await anyX2.run(plane, w, h, 'luma2x', drain);
    await anyX2.run(plane, w, h, 'luma2x', drain);
    const first = process.memoryUsage().rss;
    await losslessX2.run(plane, w, h, 'luma2x', drain);
    await losslessX2.run(plane, w, h, 'luma2x', drain);
    const growth = process.memoryUsage().rss - first;
    assert.ok(growth < 48 * MIB, `the second model added ${Math.round(growth / MIB)} MiB (bound 48 MiB)`);
  });
});
