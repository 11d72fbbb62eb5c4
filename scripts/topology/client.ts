// A small API client for the load: JSON calls over real HTTP to one of the API processes, and
// whole uploads through the presigned part URLs. 429 answers are waited out as the spec asks
// (Retry-After), and counted.
import { setTimeout as delay } from 'node:timers/promises';

export interface Answer<T = unknown> {
  status: number;
  headers: Headers;
  body: T;
}

export interface ErrorBody {
  error?: { code?: string; request_id?: string | null; details?: Record<string, unknown> | null; errors?: { loc: unknown[]; code: string | null }[] | null };
}

export interface RunJson {
  object: string;
  id: string;
  tool_id: string | null;
  status: string;
  cost_sparks: number;
  error: string | null;
  outputs: { asset_id: string; mime_type?: string | null; size_bytes?: number | null }[];
  api_key_id: string | null;
}

export const FINAL = new Set(['succeeded', 'failed', 'canceled']);

export class Client {
  /** 429 answers waited out (per-key rate limit), and calls retried after a connection error. */
  backoffs = 0;
  networkRetries = 0;

  constructor(readonly timeoutMs = 30_000) {}

  async call<T = unknown>(baseUrl: string, key: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer<T>> {
    const res = await fetch(`${baseUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(this.timeoutMs),
    });
    const text = await res.text();
    let parsed: unknown = null;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      parsed = { unparsed: text.slice(0, 500) };
    }
    return { status: res.status, headers: res.headers, body: parsed as T };
  }

  /**
   * A call that is safe to repeat (a GET, or a start with an Idempotency-Key): a per-key 429 is
   * waited out for Retry-After seconds, a dropped connection is retried, both up to the deadline.
   * The hourly-ceiling 429 (details.limit_per_hour) is returned, not waited out.
   */
  async patient<T = unknown>(baseUrl: string, key: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}, deadlineMs = 120_000): Promise<Answer<T>> {
    const deadline = Date.now() + deadlineMs;
    for (;;) {
      let answer: Answer<T> | null = null;
      try {
        answer = await this.call<T>(baseUrl, key, method, path, body, headers);
      } catch (err) {
        if (Date.now() > deadline) throw err;
        this.networkRetries++;
        await delay(500);
        continue;
      }
      const details = (answer.body as ErrorBody | null)?.error?.details;
      if (answer.status !== 429 || (details && 'limit_per_hour' in details) || Date.now() > deadline) return answer;
      this.backoffs++;
      await delay(Math.max(1, Number(answer.headers.get('retry-after') ?? '1')) * 1000);
    }
  }

  /** Uploads bytes in parts through the presigned URLs and completes; returns the file id (status ready asserted). */
  async upload(baseUrl: string, key: string, bytes: Buffer, fileName: string, mime: string): Promise<string> {
    const started = await this.patient<{ file_id: string; upload_id: string; part_size_bytes: number; parts: { part_number: number; url: string }[] }>(
      baseUrl,
      key,
      'POST',
      '/v1/files/upload-url',
      { file_name: fileName, mime_type: mime, size_bytes: bytes.length },
    );
    if (started.status !== 201) throw new Error(`upload-url for ${fileName}: ${started.status} ${JSON.stringify(started.body)}`);
    const up = started.body;
    const parts = await Promise.all(
      up.parts.map(async (p) => {
        const chunk = bytes.subarray((p.part_number - 1) * up.part_size_bytes, p.part_number * up.part_size_bytes);
        const res = await fetch(p.url, { method: 'PUT', body: Uint8Array.from(chunk), signal: AbortSignal.timeout(this.timeoutMs) });
        await res.arrayBuffer();
        if (res.status !== 200) throw new Error(`part ${p.part_number} of ${fileName}: ${res.status}`);
        return { part_number: p.part_number, etag: res.headers.get('etag') ?? '' };
      }),
    );
    const done = await this.patient<{ status: string }>(baseUrl, key, 'POST', `/v1/files/${up.file_id}/complete`, { upload_id: up.upload_id, parts });
    if (done.status !== 200 || done.body.status !== 'ready') throw new Error(`complete ${fileName}: ${done.status} ${JSON.stringify(done.body)}`);
    return up.file_id;
  }
}
