// The server, workers and console calls the console-runs tests (test/console-runs-*.test.ts)
// share. Each test file starts its own server (its own database) through consoleRunsSuite(); the
// workers a test starts stay until the file ends, so they poll every team's queue from then on.
import assert from 'node:assert/strict';
import type { RunWorker } from '../../src/runs/worker.js';
import { inviteAndSignIn, type SignedInMember } from './console.js';
import { consoleSuite, type ConsoleSuite, type ConsoleSuiteOptions } from './console-suite.js';
import { bearer, makeTeam, type TeamFixture } from './fixtures.js';
import { socketRequest } from './socket-request.js';
import { testRegistry } from './test-tools.js';
import { putPart, type Upload } from './uploads.js';
import { startTestWorker, waitFor } from './worker.js';

export interface RunJson {
  id: string;
  tool_id: string;
  tool_name: string;
  status: string;
  progress: number;
  cost_sparks: number;
  source: 'api' | 'app';
  started_by: { kind: 'key'; id: string; name: string; member_email: string } | { kind: 'member'; id: string; email: string };
  inputs: Record<string, unknown>;
  input_files: { slot: string; file_id: string; file_name: string; width: number | null }[];
  error: string | null;
  ledger: { id: string; kind: string; amount: number }[];
  outputs: { asset_id: string; file_name: string; size_bytes: number; width: number | null }[];
  can_cancel: boolean;
  queue: { position: number; running: number; limit: number } | null;
}
export interface ListJson {
  data: RunJson[];
  next_cursor: string | null;
  filters: { tools: { id: string }[]; keys: { id: string; name: string }[]; members: { id: string; email: string }[] };
}


/** A PNG uploaded through the console's upload routes, as the playground does; its file id. */
export async function consoleUpload(m: SignedInMember, bytes: Buffer): Promise<string> {
  const up = await m.client.call('POST', '/console/api/files/upload-url', { file_name: 'photo.png', mime_type: 'image/png', size_bytes: bytes.length });
  assert.equal(up.statusCode, 201, up.body);
  const upload = up.json<Upload>();
  const parts = [];
  for (const p of upload.parts) parts.push({ part_number: p.part_number, etag: await putPart(upload, bytes, p.part_number) });
  const done = await m.client.call('POST', `/console/api/files/${upload.file_id}/complete`, { upload_id: upload.upload_id, parts });
  assert.equal(done.statusCode, 200, done.body);
  assert.equal(done.json<{ status: string }>().status, 'ready');
  return upload.file_id;
}

export async function appRun(m: SignedInMember, fileId: string, mode = 'ok'): Promise<RunJson> {
  const res = await m.client.call('POST', '/console/api/tools/test_copy/runs', { inputs: { image: [fileId], mode } });
  assert.equal(res.statusCode, 202, res.body);
  return res.json<RunJson>();
}


export async function consoleGet<T>(m: SignedInMember, path: string): Promise<T> {
  const res = await m.client.call('GET', path);
  assert.equal(res.statusCode, 200, res.body);
  return res.json<T>();
}

export async function finalRun(m: SignedInMember, id: string): Promise<RunJson> {
  return waitFor(`run ${id} to end`, async () => {
    const run = await consoleGet<RunJson>(m, `/console/api/runs/${id}`);
    return ['succeeded', 'failed', 'canceled'].includes(run.status) ? run : undefined;
  });
}

export interface ConsoleRunsSuite extends ConsoleSuite {
  /** A team with an owner signed in to the console and an API key of that owner. */
  consoleTeam(opts?: { plan?: 'free' | 'pro'; sparks?: number }): Promise<{ team: TeamFixture; owner: SignedInMember }>;
  apiRun(key: string, fileId: string, mode?: string): Promise<{ id: string }>;
  /** A worker running the test tool; stopped by the after hook, before the server closes (it uses its database). */
  worker(): Promise<RunWorker>;
}

export function consoleRunsSuite(opts: Pick<ConsoleSuiteOptions, 'setUp' | 'tearDown'> = {}): ConsoleRunsSuite {
  const workers: RunWorker[] = [];
  const suite = consoleSuite({
    tools: testRegistry,
    env: { TOOLRUN_ALLOW_PRIVATE_NETWORK: '1', TOOLRUN_WORKER_POLL_MS: '200' },
    ...(opts.setUp ? { setUp: opts.setUp } : {}),
    async tearDown() {
      for (const w of workers) await w.stop(1000);
      await opts.tearDown?.();
    },
  });
  const { db, url, server } = suite;
  return {
    ...suite,
    async consoleTeam(o = {}) {
      const team = await makeTeam(db(), { plan: o.plan ?? 'pro', sparks: o.sparks ?? 1000 });
      return { team, owner: await inviteAndSignIn(url(), db(), team.memberId) };
    },
    async apiRun(key, fileId, mode = 'ok') {
      const res = await socketRequest(url(), '/v1/tools/test_copy/runs', {
        method: 'POST',
        headers: { ...bearer(key), 'content-type': 'application/json' },
        body: JSON.stringify({ inputs: { image: [fileId], mode } }),
      });
      assert.equal(res.statusCode, 202, res.body);
      return res.json<{ id: string }>();
    },
    async worker() {
      const w = await startTestWorker(server(), testRegistry(), { concurrency: 2 });
      workers.push(w);
      return w;
    },
  };
}
