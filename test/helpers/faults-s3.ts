// The tests' S3 (test/helpers/s3-target.ts: s3rver on a temporary directory, or the real S3 named
// by TEST_S3_ENDPOINT) behind a proxy that can refuse
// object PUTs the way MinIO does when its drives are full (507 XMinioStorageFull). s3rver itself
// cannot stand in for a full disk: a failed write crashes its process. It can also answer a
// passing 503 SlowDown, which S3 asks clients to retry. Everything else passes through untouched,
// so uploads and reads are real.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import { startS3Target, type S3Target } from './s3-target.js';

const STORAGE_FULL =
  '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>XMinioStorageFull</Code>' +
  '<Message>Storage backend has reached its minimum free drive threshold. Please delete a few objects to proceed.</Message></Error>';

const SLOW_DOWN = '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>';

export class FullS3 {
  /** Whole-object PUTs whose key contains this are the ones refused below. */
  match = '/outputs/';
  /** While set, those PUTs are refused as "storage full" (507). */
  full = false;
  /** How many of those PUTs to refuse first as a passing hiccup (503 SlowDown: "retry"). */
  hiccups = 0;
  /** The PUTs refused so far (paths), and the status each got. */
  readonly refused: { path: string; status: number }[] = [];
  readonly inspector: S3Client;
  readonly bucket: string;
  readonly credentials: S3Target['credentials'];
  readonly region: string;
  private readonly proxy: http.Server;
  private readonly target: URL;

  private constructor(private readonly s3: S3Target) {
    this.proxy = http.createServer((req, res) => this.forward(req, res));
    this.inspector = s3.client;
    this.bucket = s3.bucket;
    this.credentials = s3.credentials;
    this.region = s3.region;
    this.target = new URL(s3.endpoint);
  }

  static async start(bucket: string): Promise<FullS3> {
    const f = new FullS3(await startS3Target(bucket));
    await new Promise<void>((resolve) => f.proxy.listen(0, '127.0.0.1', resolve));
    return f;
  }

  /** The endpoint the service is given: the proxy. */
  get endpoint(): string {
    return `http://127.0.0.1:${(this.proxy.address() as AddressInfo).port}`;
  }

  private forward(req: http.IncomingMessage, res: http.ServerResponse): void {
    const url = new URL(req.url ?? '/', 'http://x');
    const refused = this.hiccups > 0 || this.full;
    if (refused && req.method === 'PUT' && url.pathname.includes(this.match) && !url.searchParams.has('partNumber')) {
      const [status, body] = this.hiccups > 0 ? [503, SLOW_DOWN] : [507, STORAGE_FULL];
      if (this.hiccups > 0) this.hiccups--;
      this.refused.push({ path: url.pathname, status });
      req.resume();
      req.on('end', () => res.writeHead(status, { 'content-type': 'application/xml' }).end(body));
      return;
    }
    const out = http.request({ host: this.target.hostname, port: this.target.port, method: req.method, path: req.url, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    out.on('error', () => res.destroy());
    req.pipe(out);
  }

  /** Keys of the objects in the bucket under a prefix. */
  async keys(prefix: string): Promise<string[]> {
    const out = await this.inspector.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: prefix }));
    return (out.Contents ?? []).map((o) => o.Key ?? '').sort();
  }

  async close(): Promise<void> {
    this.proxy.closeAllConnections();
    await new Promise((resolve) => this.proxy.close(resolve));
    await this.s3.close();
  }
}
