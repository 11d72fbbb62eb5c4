/**
 * The client side of one upload for bench/upload.ts: upload-url, the part PUTs with a fixed number
 * in flight, complete; with the server's RSS sampled meanwhile and both processes' CPU time.
 */
import http from 'node:http';
import type { ServerChild } from './children.js';
import { cpuSplitDelta, inFlight, procCpuSeconds, procCpuSplit, putPart, sampleRss, type CpuSplit, type SyntheticFile } from './upload-io.js';

export interface UploadRun {
  round: number;
  putS: number;
  completeS: number;
  totalS: number;
  status: string;
  serverCpuPutS: number;
  serverCpuCompleteS: number;
  clientCpuPutS: number;
  /** The server's CPU seconds from the first PUT to the complete response: user/system, and its main thread's share. */
  serverCpu: CpuSplit;
  rssBeforeBytes: number;
  rssPeakBytes: number;
  rssGrowthBytes: number;
  rssSamples: number;
  /** Each part PUT, request start to response end (with others in flight meanwhile). */
  partMs: number[];
  /** The ETags the part PUTs answered, by part number, as given (quoted). */
  etags: string[];
}

async function api<T>(url: string, key: string, body: unknown, expect: number): Promise<T> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  if (res.status !== expect) throw new Error(`POST ${url} answered ${res.status}: ${text}`);
  return JSON.parse(text) as T;
}

interface UploadUrlResponse {
  file_id: string;
  upload_id: string;
  part_size_bytes: number;
  parts: { part_number: number; url: string }[];
}

export async function uploadOnce(
  child: ServerChild,
  key: string,
  data: SyntheticFile,
  round: number,
  opts: { inFlight: number; rssEveryMs: number },
): Promise<UploadRun> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: opts.inFlight });
  const rss = sampleRss(child.pid, opts.rssEveryMs);
  try {
    const up = await api<UploadUrlResponse>(
      `${child.url}/v1/files/upload-url`,
      key,
      { file_name: `bench-${round}.bin`, mime_type: 'application/octet-stream', size_bytes: data.totalBytes },
      201,
    );
    if (up.part_size_bytes !== data.partBytes || up.parts.length !== data.partCount) {
      throw new Error(`the API chose ${up.parts.length} parts of ${up.part_size_bytes} bytes; expected ${data.partCount} of ${data.partBytes}`);
    }
    const split0 = procCpuSplit(child.pid);
    const cpu0 = { server: procCpuSeconds(child.pid), client: procCpuSeconds(process.pid) };
    const t0 = performance.now();
    const partMs: number[] = [];
    const etags = await inFlight(up.parts.length, opts.inFlight, async (i) => {
      const part = up.parts[i];
      if (!part) throw new Error(`no part ${i + 1}`);
      const p0 = performance.now();
      const etag = await putPart(part.url, data.part(part.part_number, round), agent);
      partMs.push(performance.now() - p0);
      return etag;
    });
    const t1 = performance.now();
    const cpu1 = { server: procCpuSeconds(child.pid), client: procCpuSeconds(process.pid) };
    const done = await api<{ status: string }>(
      `${child.url}/v1/files/${up.file_id}/complete`,
      key,
      { upload_id: up.upload_id, parts: up.parts.map((p, i) => ({ part_number: p.part_number, etag: etags[i] })) },
      200,
    );
    const t2 = performance.now();
    const serverCpu = cpuSplitDelta(split0, procCpuSplit(child.pid));
    const trace = rss.stop();
    return {
      round,
      putS: (t1 - t0) / 1000,
      completeS: (t2 - t1) / 1000,
      totalS: (t2 - t0) / 1000,
      status: done.status,
      serverCpuPutS: cpu1.server - cpu0.server,
      serverCpuCompleteS: procCpuSeconds(child.pid) - cpu1.server,
      clientCpuPutS: cpu1.client - cpu0.client,
      serverCpu,
      rssBeforeBytes: trace.before,
      rssPeakBytes: trace.peak,
      rssGrowthBytes: trace.peak - trace.before,
      rssSamples: trace.samples,
      partMs,
      etags,
    };
  } finally {
    rss.stop();
    agent.destroy();
  }
}
