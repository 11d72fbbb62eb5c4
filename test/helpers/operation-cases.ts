// The cases test/docs-operations.test.ts runs the API reference's code samples with, one per
// operation: what the samples read (FILE_ID, RUN_ID, ...) made first through the API, as an earlier
// call would have, and what each sample's output must show whatever its language.
import assert from 'node:assert/strict';
import { callApi } from './fixtures.js';
import type { Json } from './openapi-contract.js';
import { waitFor } from './process.js';
import type { Receiver } from './receiver.js';
import { SAMPLE_TIMEOUT_MS } from './sample-runner.js';
import type { TestServer } from './server.js';
import { uploadAll, type Upload } from './uploads.js';

export type Env = Record<string, string>;
type RunJson = { id: string; status: string; outputs: { asset_id: string }[] };

/** What the samples run against, made by the test file's `before`. */
export interface OperationContext {
  server: TestServer;
  receiver: Receiver;
  /** The JPEG the samples upload (also photo.jpg in `work`). */
  photo: Buffer;
  /** The scratch directory the samples run in: inside the checkout, so @toolrun/sdk resolves as the repository maps it. */
  work: string;
  /** GET /v1/openapi.json as the server answered it. */
  doc: Json;
}

/** What one sample needs before it runs, and what its output must show. */
export class Fixtures {
  private readonly started: string[] = [];
  constructor(
    private readonly ctx: OperationContext,
    readonly key: string,
  ) {}

  async api<T>(method: string, url: string, body?: unknown, headers: Env = {}): Promise<T> {
    const res = await callApi(this.ctx.server.url, this.key, method, url, body, headers);
    const text = await res.text();
    assert.ok(res.ok, `${method} ${url}: ${res.status} ${text}`);
    return JSON.parse(text) as T;
  }

  uploadUrl(): Promise<Upload> {
    return this.api('POST', '/v1/files/upload-url', { file_name: 'photo.jpg', mime_type: 'image/jpeg', size_bytes: this.ctx.photo.length });
  }

  async readyFile(): Promise<string> {
    const upload = await this.uploadUrl();
    const file = await this.api<{ id: string; status: string }>('POST', `/v1/files/${upload.file_id}/complete`, {
      upload_id: upload.upload_id,
      parts: await uploadAll(upload, this.ctx.photo),
    });
    assert.equal(file.status, 'ready');
    return file.id;
  }

  async upscale(): Promise<RunJson> {
    return this.api('POST', '/v1/tools/image_upscale/runs', { inputs: { image: [await this.readyFile()] } });
  }

  async succeeded(): Promise<RunJson> {
    const { id } = await this.upscale();
    const final = async () => {
      const r = await this.api<RunJson>('GET', `/v1/runs/${id}`, undefined, { prefer: 'wait=10' });
      return ['succeeded', 'failed', 'canceled'].includes(r.status) ? r : null;
    };
    const run = await waitFor(`run ${id} to be final`, final, SAMPLE_TIMEOUT_MS);
    assert.equal(run.status, 'succeeded');
    return run;
  }

  /**
   * Waits until the run's outputs have left 'checking' (the read-back after the success commit):
   * until then GET .../url answers 409 output_not_ready, as the sample's comment says.
   */
  async outputsChecked(runId: string): Promise<void> {
    await waitFor(
      `the outputs of run ${runId} to be checked`,
      async () => {
        const { rows } = await this.ctx.server.database.db.pool.query<{ n: number }>(
          "SELECT count(*)::integer AS n FROM run_outputs WHERE run_id = $1::uuid AND status = 'checking'",
          [runId],
        );
        return rows[0]?.n === 0;
      },
      SAMPLE_TIMEOUT_MS,
    );
  }

  /** A run that works until canceled (the test tool's hang mode): what a cancel acts on. */
  async hanging(): Promise<RunJson> {
    const run = await this.api<RunJson>('POST', '/v1/tools/test_copy/runs', { inputs: { image: [await this.readyFile()], mode: 'hang' } });
    this.started.push(run.id);
    return run;
  }

  async cancel(runId: string): Promise<void> {
    const res = await callApi(this.ctx.server.url, this.key, 'POST', `/v1/runs/${runId}/cancel`);
    assert.ok(res.status === 200 || res.status === 409, `cancel ${runId}: ${res.status} ${await res.text()}`);
  }

  async endpoint(): Promise<string> {
    return (await this.api<{ id: string }>('POST', '/v1/webhook-endpoints', { url: this.ctx.receiver.url('/toolrun') })).id;
  }

  /** An endpoint with one delivery (of a canceled run), failed when asked: given up after its retries. */
  async delivery(failed: boolean): Promise<Env> {
    const endpoint = await this.endpoint();
    await this.cancel((await this.hanging()).id);
    const page = await this.api<{ data: { id: string }[] }>('GET', `/v1/webhook-endpoints/${endpoint}/deliveries`);
    const id = page.data[0]?.id;
    assert.ok(id, 'the canceled run made no delivery');
    if (failed) await this.ctx.server.database.db.pool.query("UPDATE webhook_deliveries SET status = 'failed', attempts = 6, finished_at = now() WHERE id = $1::uuid", [id]);
    return { WEBHOOK_ENDPOINT_ID: endpoint, DELIVERY_ID: id };
  }

  /** Runs left working by a sample that failed would hold a worker slot: cancel them. */
  async cleanup(): Promise<void> {
    for (const id of this.started) await this.cancel(id);
  }
}

export interface Case {
  /** Makes what the samples read: keys they list in `vars` go into their environment; the rest are for `expect`. */
  setup?: (f: Fixtures) => Promise<Env>;
  /** What the output must show, in every language. */
  expect: (env: Env) => (RegExp | string)[];
  /** A stream that stays open: once the sample's output says it is open, `trigger` makes an event. */
  stream?: { open: RegExp; trigger: (f: Fixtures, env: Env) => Promise<void> };
}

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/;
const yes = (field: string, value: boolean) => new RegExp(`"?${field}"?:?\\s*${value ? '(true|True)' : '(false|False)'}`);
const endpointVar = async (f: Fixtures): Promise<Env> => ({ WEBHOOK_ENDPOINT_ID: await f.endpoint() });

export const CASES: Record<string, Case> = {
  healthz: { expect: () => [/\bok\b/] },
  readyz: { expect: () => [/\bok\b/] },
  getOpenApi: { expect: () => [/3\.1\.0/] },
  getMe: { expect: () => [/\b1000\b/, /\bpro\b/] },
  listTools: { expect: () => [/image_upscale/, /image_color_grade/] },
  createFileUpload: { expect: () => [UUID, /"object":"file_upload"|\bready$/m] },
  completeFileUpload: {
    setup: async (f) => {
      const u = await f.uploadUrl();
      return { FILE_ID: u.file_id, UPLOAD_ID: u.upload_id, PART_URL: u.parts[0]?.url ?? '' };
    },
    expect: () => [UUID, /\bready\b/],
  },
  estimateRun: { setup: async (f) => ({ FILE_ID: await f.readyFile() }), expect: () => [/"sparks":\d+|\b\d+ Sparks/] },
  startRun: { setup: async (f) => ({ FILE_ID: await f.readyFile() }), expect: () => [UUID, /\bqueued\b/] },
  listRuns: { setup: async (f) => ({ LISTED_RUN: (await f.succeeded()).id }), expect: (e) => [e.LISTED_RUN ?? '', /succeeded/] },
  getRun: { setup: async (f) => ({ RUN_ID: (await f.succeeded()).id }), expect: (e) => [e.RUN_ID ?? '', /\bsucceeded\b/] },
  cancelRun: { setup: async (f) => ({ RUN_ID: (await f.hanging()).id }), expect: (e) => [e.RUN_ID ?? '', /\bcanceled\b/] },
  getOutputUrl: {
    setup: async (f) => {
      const run = await f.succeeded();
      await f.outputsChecked(run.id);
      return { RUN_ID: run.id, ASSET_ID: run.outputs[0]?.asset_id ?? '' };
    },
    expect: (e) => [e.ASSET_ID ?? '', /"url":"http|\b[1-9]\d* bytes/],
  },
  streamRunEvents: { setup: async (f) => ({ RUN_ID: (await f.upscale()).id }), expect: () => [/\bdone\b/, /\bsucceeded\b/] },
  listWebhookEndpoints: { setup: async (f) => ({ LISTED_ENDPOINT: await f.endpoint() }), expect: (e) => [e.LISTED_ENDPOINT ?? ''] },
  createWebhookEndpoint: { expect: () => [UUID, /whsec_[A-Za-z0-9_-]{20,}/] },
  updateWebhookEndpoint: { setup: endpointVar, expect: (e) => [e.WEBHOOK_ENDPOINT_ID ?? '', yes('enabled', false)] },
  deleteWebhookEndpoint: { setup: endpointVar, expect: (e) => [e.WEBHOOK_ENDPOINT_ID ?? '', yes('deleted', true)] },
  testWebhookEndpoint: { setup: endpointVar, expect: () => [yes('delivered', true)] },
  rotateWebhookEndpointSecret: { setup: endpointVar, expect: (e) => [e.WEBHOOK_ENDPOINT_ID ?? '', /whsec_[A-Za-z0-9_-]{20,}/] },
  listWebhookDeliveries: {
    setup: async (f) => {
      const d = await f.delivery(false);
      return { WEBHOOK_ENDPOINT_ID: d.WEBHOOK_ENDPOINT_ID ?? '', LISTED_DELIVERY: d.DELIVERY_ID ?? '' };
    },
    expect: (e) => [e.LISTED_DELIVERY ?? '', /run\.canceled/],
  },
  redeliverWebhookDelivery: { setup: (f) => f.delivery(true), expect: (e) => [e.DELIVERY_ID ?? '', /\bpending\b/] },
  streamEvents: {
    setup: async (f) => ({ TRIGGER_RUN: (await f.hanging()).id }),
    stream: { open: /^retry: \d+$|^listening$/m, trigger: (f, e) => f.cancel(e.TRIGGER_RUN ?? '') },
    expect: (e) => [/run\.canceled/, e.TRIGGER_RUN ?? ''],
  },
};
