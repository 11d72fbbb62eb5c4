import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';

/** The 201 answer of POST /v1/files/upload-url. */
export interface Upload {
  file_id: string;
  upload_id: string;
  part_size_bytes: number;
  parts: { part_number: number; url: string }[];
  expires_in_seconds: number;
}

export interface PartRef {
  part_number: number;
  etag: string;
}

export function md5Etag(bytes: Uint8Array): string {
  return `"${createHash('md5').update(bytes).digest('hex')}"`;
}

/** PUTs part n (its slice of `bytes`) to its URL as a browser would (a plain PUT) and checks the ETag. */
export async function putPart(upload: Upload, bytes: Buffer, n: number): Promise<string> {
  const part = upload.parts[n - 1];
  assert.ok(part, `no part ${n}`);
  const chunk = bytes.subarray((n - 1) * upload.part_size_bytes, n * upload.part_size_bytes);
  const res = await fetch(part.url, { method: 'PUT', body: Uint8Array.from(chunk) });
  assert.equal(res.status, 200, await res.clone().text());
  const etag = res.headers.get('etag');
  assert.equal(etag, md5Etag(chunk));
  return etag ?? '';
}

/** Every part at once and in reverse order, as a real client might; the ETags sorted by part number. */
export async function uploadAll(upload: Upload, bytes: Buffer): Promise<PartRef[]> {
  const order = upload.parts.map((p) => p.part_number).reverse();
  const etags = await Promise.all(order.map(async (n) => ({ part_number: n, etag: await putPart(upload, bytes, n) })));
  return etags.sort((a, b) => a.part_number - b.part_number);
}
