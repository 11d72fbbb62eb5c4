// writeBody (src/storage/part-stream.ts): a part's body written at its offset while a worker
// thread takes its MD5 by reading each written batch back (src/storage/md5-worker.ts). The MD5 is
// the part's ETag, so it must be exactly the bytes sent, whatever the chunking, with several parts
// at once, and a refused body must leave the thread done with the descriptor.
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { PartTooLargeError, writeBody } from '../src/storage/part-stream.js';

let dir: string;
before(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'toolrun-part-stream-'));
});
after(() => fs.rmSync(dir, { recursive: true, force: true }));

/** The bytes in chunks of uneven sizes (as sockets deliver them), some past a 1 MiB batch. */
async function* chunked(bytes: Buffer): AsyncGenerator<Buffer> {
  const sizes = [1, 65_536, 7, 300_000, 1_100_000, 13];
  for (let at = 0, i = 0; at < bytes.length; i++) {
    const n = Math.min(sizes[i % sizes.length]!, bytes.length - at);
    yield bytes.subarray(at, at + n);
    at += n;
    // Now and then the next chunk is late, as on a real connection.
    if (i % 5 === 0) await new Promise((r) => setImmediate(r));
  }
}

const md5 = (b: Buffer) => createHash('md5').update(b).digest('hex');

test('parts written at their offsets, several at once, each with the MD5 of its own bytes', async () => {
  const file = path.join(dir, 'data');
  const parts = [randomBytes(3 * 1024 * 1024 + 17), randomBytes(0), randomBytes(5), randomBytes(2 * 1024 * 1024)];
  const offsets = [0, 4 * 1024 * 1024, 4 * 1024 * 1024, 8 * 1024 * 1024];
  const handle = await fs.promises.open(file, 'w+');
  try {
    const written = await Promise.all(parts.map((p, i) => writeBody(chunked(p), handle, offsets[i]!, p.length)));
    assert.deepEqual(written, parts.map((p) => ({ md5: md5(p), size: p.length })));
  } finally {
    await handle.close();
  }
  const data = fs.readFileSync(file);
  assert.ok(data.subarray(0, parts[0]!.length).equals(parts[0]!));
  assert.ok(data.subarray(offsets[2]!, offsets[2]! + 5).equals(parts[2]!));
  assert.ok(data.subarray(offsets[3]!).equals(parts[3]!));
});

test('a body over its bound is refused; the descriptor is free at once and later parts hash right', async () => {
  const handle = await fs.promises.open(path.join(dir, 'refused'), 'w+');
  try {
    const big = randomBytes(3 * 1024 * 1024);
    await assert.rejects(writeBody(chunked(big), handle, 0, 2 * 1024 * 1024), (err: unknown) => err instanceof PartTooLargeError && err.limit === 2 * 1024 * 1024);
    // A body that fails mid-way (the client went away) is dropped the same way.
    async function* broken(): AsyncGenerator<Buffer> {
      yield randomBytes(1_500_000);
      throw Object.assign(new Error('the client closed the connection mid-body'), { code: 'ECONNRESET' });
    }
    await assert.rejects(writeBody(broken(), handle, 0, 8 * 1024 * 1024), /mid-body/);
  } finally {
    await handle.close();
  }
  const next = await fs.promises.open(path.join(dir, 'after'), 'w+');
  try {
    const bytes = randomBytes(1_234_567);
    assert.deepEqual(await writeBody(chunked(bytes), next, 0, bytes.length), { md5: md5(bytes), size: bytes.length });
  } finally {
    await next.close();
  }
});
