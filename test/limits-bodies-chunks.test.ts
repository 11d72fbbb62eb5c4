// boundedChunks (src/http/limits.ts), the part PUT's body reader: it reads ahead of a slow
// consumer (the file write) by about a mebibyte, counted in bytes, not chunks, so that a part
// upload's memory stays bounded however the socket cuts the body, and the socket is not paused
// and resumed for every few chunks. Every byte comes through, in order.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { test } from 'node:test';
import { boundedChunks } from '../src/http/limits.js';

const MIB = 1024 * 1024;

/** A body of `total` bytes in `chunk`-sized pushes, counting how many bytes have been pulled from it. */
function source(total: number, chunk: number): { stream: Readable; pulled: () => number; bytes: Buffer } {
  const bytes = randomBytes(total);
  let at = 0;
  const stream = new Readable({
    highWaterMark: 16 * 1024,
    read() {
      if (at >= total) return void this.push(null);
      const n = Math.min(chunk, total - at);
      this.push(bytes.subarray(at, at + n));
      at += n;
    },
  });
  return { stream, pulled: () => at, bytes };
}

const tick = () => new Promise((resolve) => setTimeout(resolve, 20));

test('a stalled reader holds about a mebibyte of the body, whatever the chunk size', async () => {
  for (const chunkSize of [1024, 64 * 1024, 300_000]) {
    const { stream, pulled } = source(8 * MIB, chunkSize);
    const body = boundedChunks(stream, { totalMs: 10_000, idleMs: 10_000 });
    const first = await body.next();
    assert.equal(first.done, false);
    await tick();
    // The queue's bound and the chunk that crossed it, the chunk the reader holds, and what the
    // stream itself buffers (a chunk, or its 16 KiB).
    const ahead = pulled();
    assert.ok(ahead <= MIB + 3 * Math.max(chunkSize, 16 * 1024), `${chunkSize}-byte chunks: ${ahead} bytes read ahead`);
    assert.ok(ahead >= 256 * 1024, `${chunkSize}-byte chunks: only ${ahead} bytes read ahead`);
    await body.return();
    stream.destroy();
  }
});

test('every byte comes through in order, with a reader that stalls now and then', async () => {
  const { stream, bytes } = source(5 * MIB + 123, 65_536);
  const got: Buffer[] = [];
  let n = 0;
  for await (const chunk of boundedChunks(stream, { totalMs: 10_000, idleMs: 10_000 })) {
    got.push(chunk);
    if (++n % 17 === 0) await tick();
  }
  assert.ok(Buffer.concat(got).equals(bytes));
});
