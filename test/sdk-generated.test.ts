// The SDK's generated types are what the server's route schemas produce today, and the SDK has a
// method for every authenticated endpoint in GET /v1/openapi.json.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { describe, test } from 'node:test';
import { Toolrun } from '@toolrun/sdk';
import { GENERATED_FILE, generateTypes, openApiDocument } from '../packages/sdk/scripts/generate.ts';

/** operationId -> the SDK method that calls it. */
const SDK_METHODS: Record<string, (c: Toolrun) => unknown> = {
  getMe: (c) => c.me,
  listTools: (c) => c.tools.list,
  estimateRun: (c) => c.tools.estimate,
  startRun: (c) => c.runs.start,
  getRun: (c) => c.runs.get,
  listRuns: (c) => c.runs.list,
  streamRunEvents: (c) => c.runs.events,
  streamEvents: (c) => c.events.stream,
  cancelRun: (c) => c.runs.cancel,
  getOutputUrl: (c) => c.runs.outputUrl,
  createFileUpload: (c) => c.files.upload,
  completeFileUpload: (c) => c.files.upload,
  listWebhookEndpoints: (c) => c.webhookEndpoints.list,
  createWebhookEndpoint: (c) => c.webhookEndpoints.create,
  updateWebhookEndpoint: (c) => c.webhookEndpoints.update,
  deleteWebhookEndpoint: (c) => c.webhookEndpoints.delete,
  testWebhookEndpoint: (c) => c.webhookEndpoints.test,
  listWebhookDeliveries: (c) => c.webhookEndpoints.deliveries,
  redeliverWebhookDelivery: (c) => c.webhookEndpoints.redeliver,
  rotateWebhookEndpointSecret: (c) => c.webhookEndpoints.rotateSecret,
};

describe('generated types', () => {
  test('packages/sdk/src/generated/openapi.ts is up to date (else run `npm run sdk:generate`)', async () => {
    const fresh = await generateTypes();
    const committed = fs.readFileSync(GENERATED_FILE, 'utf8');
    if (fresh !== committed) {
      const a = committed.split('\n');
      const b = fresh.split('\n');
      const i = a.findIndex((line, n) => line !== b[n]);
      assert.fail(
        `The SDK's generated types are stale: run \`npm run sdk:generate\`.\nFirst difference at line ${i + 1}:\n  committed: ${a[i] ?? '(end)'}\n  generated: ${b[i] ?? '(end)'}`,
      );
    }
    assert.match(committed, /export interface operations/);
  });

  test('every authenticated operation has an SDK method', async () => {
    const doc = await openApiDocument();
    const paths = doc.paths as Record<string, Record<string, { operationId?: string; security?: unknown[] }>>;
    const secured = Object.values(paths)
      .flatMap((ops) => Object.values(ops))
      .filter((op) => Array.isArray(op.security) && op.security.length > 0)
      .map((op) => op.operationId ?? '(no operationId)');
    assert.ok(secured.length >= 14, `found ${secured.length} operations`);
    const client = new Toolrun({ apiKey: 'svc_test_unused', baseUrl: 'http://127.0.0.1:9' });
    const missing = secured.filter((id) => typeof SDK_METHODS[id]?.(client) !== 'function');
    assert.deepEqual(missing, [], `operations without an SDK method: ${missing.join(', ')}`);
    assert.deepEqual(Object.keys(SDK_METHODS).filter((id) => !secured.includes(id)), [], 'SDK methods for operations that no longer exist');
  });
});
