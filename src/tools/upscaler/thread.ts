// The code of the thread that runs the upscaler's networks (luma-net.ts). Plain JavaScript given
// as a string (`eval`), as md5-worker.ts does, so the same code runs from the sources through tsx
// and from the compiled dist/ without a loader in the thread. ONNX Runtime's own threads do the
// arithmetic; this thread only cuts tiles and copies their cores, so the event loop of the process
// never waits on either.
//
// One thread runs every network a process loads, one job at a time across all of them (a chain of
// promises): each holds a strip's activations, and two at once would double the memory a process
// needs for the largest image. It keeps one session loaded, the last one asked for, and releases it
// before loading another: a session's memory arena keeps the peak of its largest strip, so every
// network kept loaded held a strip's activations of its own (docs/decisions.md, "One thread for a
// process's networks"). Loading one of these models again takes 6-8 ms against ~50 ms a tile.
export const THREAD_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const ort = require(workerData.ortPath);
let current = null;
let chain = Promise.resolve();
async function drop() {
  const was = current;
  current = null;
  if (was) await was.session.then((s) => s.release(), () => undefined);
}
async function load(modelPath, threads) {
  const key = modelPath + '#' + threads;
  if (current && current.key === key) return current.session;
  await drop();
  const session = ort.InferenceSession.create(modelPath, {
    intraOpNumThreads: threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
    extra: { session: { intra_op: { allow_spinning: '0' } } },
  });
  current = { key, modelPath, session };
  session.catch(() => { if (current && current.session === session) current = null; });
  return session;
}
async function unload(modelPath) {
  if (current && current.modelPath === modelPath) await drop();
  return new Float32Array(0);
}
async function strip(m) {
  const s = await load(m.modelPath, m.threads);
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
  chain = chain.then(() => (m.unload ? unload(m.modelPath) : strip(m))).then(
    (out) => parentPort.postMessage({ id: m.id, data: out }, [out.buffer]),
    (err) => parentPort.postMessage({ id: m.id, error: String((err && err.message) || err) }),
  );
});
`;
