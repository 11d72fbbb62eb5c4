// The bytes of output downloads as they arrive, for the download bar. The SDK's runs.download
// reports an output only once it is written, so the CLI counts the bytes on the way in, through
// the client's `fetch` option: while a download is watched, every successful GET outside the
// API's /v1/ is a signed output URL (local storage's /storage/objects/... or S3's), and its body
// is passed on through a counter. Everything else goes through untouched.
import type { Toolrun } from '@toolrun/sdk';

export class DownloadWatch {
  private onBytes: ((n: number) => void) | null = null;
  private apiPrefix: string | null = null;

  /** For `new Toolrun({ fetch })`. */
  readonly fetch: typeof globalThis.fetch = async (input, init) => {
    const res = await globalThis.fetch(input, init);
    const onBytes = this.onBytes;
    const url = input instanceof Request ? input.url : String(input);
    const method = (init?.method ?? (input instanceof Request ? input.method : 'GET')).toUpperCase();
    if (!onBytes || !res.ok || !res.body || method !== 'GET' || this.apiPrefix === null || url.startsWith(this.apiPrefix)) return res;
    const counted = res.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          onBytes(chunk.byteLength);
          controller.enqueue(chunk);
        },
      }),
    );
    return new Response(counted, { status: res.status, statusText: res.statusText, headers: res.headers });
  };

  /** The client whose API requests are not downloads. */
  attach(client: Toolrun): Toolrun {
    this.apiPrefix = `${client.baseUrl}/v1/`;
    return client;
  }

  /** Runs fn, counting the output bytes fetched meanwhile. */
  async during<T>(onBytes: (n: number) => void, fn: () => Promise<T>): Promise<T> {
    this.onBytes = onBytes;
    try {
      return await fn();
    } finally {
      this.onBytes = null;
    }
  }
}
