import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import type { Queryable } from '../../src/db/pool.js';
import { insertRun, type RunRow } from '../../src/runs/repository.js';
import type { Loc } from '../../src/core/errors.js';
import { assertError } from './error-envelope.js';
import { bearer } from './fixtures.js';
import type { TestServer } from './server.js';

/** Shared by the runs API tests: calls, uploads, and what the database holds for a team. */

export interface RunJson {
  object: string;
  id: string;
  tool_id: string | null;
  product_id: string;
  status: string;
  progress: number;
  cost_sparks: number;
  outputs: { asset_id: string; mime_type: string | null; size_bytes: number | null; file_name: string | null }[];
  error: string | null;
  api_key_id: string | null;
  created_at: string | null;
  started_at: string | null;
  finished_at: string | null;
}

export interface EstimateJson {
  object: string;
  tool_id: string;
  product_id: string;
  sparks: number;
  reserve_sparks: number;
}

export type Headers = Record<string, string>;

/** A request through the real app (hooks, parsers, error handler); body undefined sends none. */
export function call(
  s: TestServer,
  key: string | null,
  method: 'GET' | 'POST',
  url: string,
  body?: unknown,
  headers: Headers = {},
): Promise<LightMyRequestResponse> {
  const h: Headers = { ...(key === null ? {} : bearer(key)), ...headers };
  if (body === undefined) return s.app.inject({ method, url, headers: h });
  if (typeof body === 'string') return s.app.inject({ method, url, headers: { 'content-type': 'application/json', ...h }, payload: body });
  return s.app.inject({ method, url, headers: { 'content-type': 'application/json', ...h }, payload: JSON.stringify(body) });
}

export const estimate = (s: TestServer, key: string | null, tool: string, body: unknown, headers: Headers = {}) =>
  call(s, key, 'POST', `/v1/tools/${tool}/estimate`, body, headers);

export const start = (s: TestServer, key: string | null, tool: string, body: unknown, headers: Headers = {}) =>
  call(s, key, 'POST', `/v1/tools/${tool}/runs`, body, headers);

export const getRun = (s: TestServer, key: string, runId: string) => call(s, key, 'GET', `/v1/runs/${runId}`);

/**
 * The run once final, waited for the way a client should: GET with `Prefer: wait` (the server
 * answers when the run ends), a few requests however long the run takes. Polling every few ms
 * instead spent the key's 300 requests a minute on a slow machine and got 429s.
 */
export async function finalRun(s: TestServer, key: string, runId: string, timeoutMs = 120_000): Promise<RunJson> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await call(s, key, 'GET', `/v1/runs/${runId}`, undefined, { prefer: 'wait=20' });
    assert.equal(res.statusCode, 200, res.body);
    const run = res.json<RunJson>();
    if (['succeeded', 'failed', 'canceled'].includes(run.status)) return run;
    if (Date.now() > deadline) throw new Error(`run ${runId} still ${run.status} after ${timeoutMs} ms`);
  }
}

/** An output's signed URL once its stored copy is checked (409 output_not_ready until then), asked every 250 ms. */
export async function readyOutputUrl(s: TestServer, key: string, runId: string, assetId: string, timeoutMs = 60_000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await call(s, key, 'GET', `/v1/runs/${runId}/outputs/${assetId}/url`);
    if (res.statusCode === 200) return res.json<{ url: string }>().url;
    assert.equal(res.statusCode, 409, res.body);
    assert.equal(res.json<{ error: { code: string } }>().error.code, 'output_not_ready');
    if (Date.now() > deadline) throw new Error(`output ${assetId} still not ready after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

export function runOf(res: LightMyRequestResponse, status = 202): RunJson {
  assert.equal(res.statusCode, status, res.body);
  const run = res.json<RunJson>();
  assert.equal(run.object, 'run');
  return run;
}

/** An error response whose errors[] holds exactly these (loc, code) entries, in any order. */
export function assertFieldErrors(res: LightMyRequestResponse, expected: { loc: Loc; code: string }[]): void {
  const error = assertError(res, 422, 'invalid_request');
  assert.ok(error.errors, 'errors[] is set on 422');
  for (const e of error.errors) {
    assert.equal(typeof e.message, 'string');
    assert.ok(e.message.length > 0);
  }
  const got = error.errors.map((e) => ({ loc: e.loc, code: e.code })).sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
  const want = [...expected].sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
  assert.deepEqual(got, want, `errors[] of ${res.body}`);
}

interface Upload {
  file_id: string;
  upload_id: string;
  part_size_bytes: number;
  parts: { part_number: number; url: string }[];
}

/** Starts an upload and leaves it incomplete: a file that stays 'uploading'. */
export async function beginUpload(s: TestServer, key: string, bytes: Buffer, name: string, mime: string): Promise<Upload> {
  const res = await call(s, key, 'POST', '/v1/files/upload-url', { file_name: name, mime_type: mime, size_bytes: bytes.length });
  assert.equal(res.statusCode, 201, res.body);
  return res.json<Upload>();
}

/** Uploads and completes a file; returns its id, the status completion gave it and why it was rejected. */
export async function uploadFile(
  s: TestServer,
  key: string,
  bytes: Buffer,
  name: string,
  mime: string,
): Promise<{ id: string; status: string; problem?: string }> {
  const up = await beginUpload(s, key, bytes, name, mime);
  const parts = [];
  for (const p of up.parts) {
    const chunk = bytes.subarray((p.part_number - 1) * up.part_size_bytes, p.part_number * up.part_size_bytes);
    const r = await fetch(p.url, { method: 'PUT', body: Uint8Array.from(chunk) });
    assert.equal(r.status, 200, await r.text());
    parts.push({ part_number: p.part_number, etag: r.headers.get('etag') ?? '' });
  }
  const done = await call(s, key, 'POST', `/v1/files/${up.file_id}/complete`, { upload_id: up.upload_id, parts });
  assert.equal(done.statusCode, 200, done.body);
  const file = done.json<{ status: string; problem?: string }>();
  return { id: up.file_id, status: file.status, ...(file.problem === undefined ? {} : { problem: file.problem }) };
}

export async function uploadReady(s: TestServer, key: string, bytes: Buffer, name: string, mime: string): Promise<string> {
  const f = await uploadFile(s, key, bytes, name, mime);
  assert.equal(f.status, 'ready');
  return f.id;
}

/** What a team holds in the database: balance, runs and ledger rows. */
export async function teamState(db: Queryable, teamId: string): Promise<{ balance: number; runs: number; ledger: number; holds: number }> {
  const { rows } = await db.query<{ balance: number; runs: number; ledger: number; holds: number }>(
    `SELECT t.sparks_available::integer AS balance,
            (SELECT count(*) FROM runs r WHERE r.team_id = t.id)::integer AS runs,
            (SELECT count(*) FROM ledger_entries l WHERE l.team_id = t.id)::integer AS ledger,
            (SELECT count(*) FROM ledger_entries l WHERE l.team_id = t.id AND l.kind = 'hold')::integer AS holds
       FROM teams t WHERE t.id = $1::uuid`,
    [teamId],
  );
  assert.ok(rows[0], `no team ${teamId}`);
  return rows[0];
}

export async function insertElement(db: Queryable, teamId: string, consentActive: boolean): Promise<string> {
  const id = randomUUID();
  await db.query(`INSERT INTO elements (id, team_id, kind, name, consent_active) VALUES ($1::uuid, $2::uuid, 'voice', 'Narrator', $3::boolean)`, [
    id,
    teamId,
    consentActive,
  ]);
  return id;
}

export async function sparksOnMe(s: TestServer, key: string): Promise<number> {
  const res = await call(s, key, 'GET', '/v1/me');
  assert.equal(res.statusCode, 200, res.body);
  return res.json<{ sparks_available: number }>().sparks_available;
}

/**
 * A queued app run of the team's member (started in the console, no key), written straight into
 * the table: what tests that check app runs stay out of /v1 and its streams start from.
 */
export function insertAppRun(db: Queryable, team: { teamId: string; memberId: string }): Promise<RunRow> {
  return insertRun(db, {
    id: randomUUID(),
    teamId: team.teamId,
    apiKeyId: null,
    memberId: team.memberId,
    toolId: 'test_copy',
    productId: 'test_copy',
    inputs: {},
    price: 0,
    hold: 0,
    maxAttempts: 1,
    idempotencyKey: null,
    requestHash: null,
  });
}
