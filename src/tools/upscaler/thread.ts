// The code of the thread that runs the upscaler's network (luma-net.ts). Plain JavaScript given
// as a string (`eval`), as md5-worker.ts does, so the same code runs from the sources through tsx
// and from the compiled dist/ without a loader in the thread. ONNX Runtime's own threads do the
// arithmetic; this thread only cuts tiles and copies their cores, so the event loop of the process
// never waits on either.
//
// One job at a time (a chain of promises): each holds a strip's activations, and two at once
// would double the memory a process needs for the largest image.
export const THREAD_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const ort = require(workerData.ortPath);
let session = null;
let chain = Promise.resolve();
function load() {
  if (!session) {
    session = ort.InferenceSession.create(workerData.modelPath, {
      intraOpNumThreads: workerData.threads,
      interOpNumThreads: 1,
      executionMode: 'sequential',
      graphOptimizationLevel: 'all',
      extra: { session: { intra_op: { allow_spinning: '0' } } },
    });
    session.catch(() => { session = null; });
  }
  return session;
}
async function strip(m) {
  const s = await load();
  const w = m.width, h = m.height, y0 = m.y0, y1 = m.y1, tile = m.tile, halo = m.halo, n = m.scale;
  const luma = new Float32Array(m.luma);
  const ow = n * w;
  const out = new Float32Array(n * (y1 - y0) * ow);
  const iy0 = Math.max(0, y0 - halo), iy1 = Math.min(h, y1 + halo), th = iy1 - iy0;
  for (let tx = 0; tx < w; tx += tile) {
    const cx1 = Math.min(w, tx + tile);
    const ix0 = Math.max(0, tx - halo), ix1 = Math.min(w, cx1 + halo), tw = ix1 - ix0;
    const input = new Float32Array(tw * th);
    for (let y = 0; y < th; y++) input.set(luma.subarray((iy0 + y) * w + ix0, (iy0 + y) * w + ix1), y * tw);
    const result = await s.run({ luma: new ort.Tensor('float32', input, [1, 1, th, tw]) }, [m.output]);
    const data = result[m.output].data;
    const rw = n * tw, cw = n * (cx1 - tx), colOff = n * (tx - ix0), rowOff = n * (y0 - iy0);
    for (let y = 0; y < n * (y1 - y0); y++) {
      const from = (rowOff + y) * rw + colOff;
      out.set(data.subarray(from, from + cw), y * ow + n * tx);
    }
  }
  return out;
}
parentPort.on('message', (m) => {
  chain = chain.then(() => strip(m)).then(
    (out) => parentPort.postMessage({ id: m.id, data: out }, [out.buffer]),
    (err) => parentPort.postMessage({ id: m.id, error: String((err && err.message) || err) }),
  );
});
`;
