import { createHash, randomUUID } from 'node:crypto';
import type { Plan } from '../auth/repository.js';
import type { Config } from '../config/config.js';
import type { Db, Queryable } from '../db/pool.js';
import { ApiError, invalidRequest, type FieldError } from '../core/errors.js';
import { count } from '../core/wording.js';
import { holdForRun } from '../sparks/ledger.js';
import type { Storage } from '../storage/storage.js';
import type { ToolManifest } from '../tools/manifest.js';
import type { ToolRegistry } from '../tools/registry.js';
import { elementIds, resolveInputs, type PriceMode, type ResolvedInputs } from './inputs.js';
import { findByIdempotencyKey, getOutputs, getOutputsOf, getTeamRun, insertQueuedRun, listApiRuns, runResource, type RunRow, type RunSource } from './repository.js';
import { RUN_LIST_DEFAULT, type Estimate, type OutputUrl, type Run, type RunBody, type RunListQuery } from './schemas.js';
import { cancelLockedRun, RUNS_CHANNEL } from './transitions.js';

export interface RunsDeps {
  config: Config;
  db: Db;
  tools: ToolRegistry;
  storage: Storage;
}

/**
 * Who prices or starts a run: an API key (keyId, its member and its per-minute limit) or a member
 * in the console (keyId null: an app run). Both go through every rule below alike.
 */
export interface RunActor {
  teamId: string;
  plan: Plan;
  memberId: string;
  keyId: string | null;
  rateLimitPerMinute: number | null;
}

/** What /v1 may see: runs started with the team's keys. The console sees every run of its team. */
export const API_RUNS: readonly RunSource[] = ['api'];
export const ALL_RUNS: readonly RunSource[] = ['api', 'app'];

export const MAX_IDEMPOTENCY_KEY = 255;
export const MAX_CANCEL_AFTER_SECONDS = 86_400;

/**
 * The Cancel-After header as seconds (90, or 1h30m, 10m, 45s), or the field error to answer: a
 * whole number of seconds from 1 to 24 hours.
 */
export function parseCancelAfter(raw: string): number | FieldError {
  const loc = ['header', 'Cancel-After'];
  const m = /^(?:([0-9]{1,5})|(?:([0-9]{1,2})h)?(?:([0-9]{1,4})m)?(?:([0-9]{1,5})s)?)$/.exec(raw);
  if (!m || raw === '') {
    return { loc, message: 'must be a duration: seconds (90) or hours, minutes and seconds (1h30m, 10m, 45s)', code: 'invalid_format' };
  }
  const [, plain, h, min, sec] = m;
  const seconds = plain !== undefined ? Number(plain) : Number(h ?? 0) * 3600 + Number(min ?? 0) * 60 + Number(sec ?? 0);
  if (seconds < 1 || seconds > MAX_CANCEL_AFTER_SECONDS) {
    return { loc, message: `must be from 1 second to 24 hours (${MAX_CANCEL_AFTER_SECONDS} s); got ${seconds} s`, code: 'out_of_range' };
  }
  return seconds;
}
const MAX_ATTEMPTS = 3;

/** 404, 409 and 403 (plan), in the spec's order; the routes call it before the body is even read. */
export function checkTool(tools: ToolRegistry, toolId: string, auth: Pick<RunActor, 'plan' | 'keyId'>): ToolManifest {
  const tool = tools.get(toolId);
  const app = auth.keyId === null;
  if (!tool) {
    throw new ApiError('tool_not_found', app ? `No tool "${toolId}" is available here; the Tool list shows them.` : `No tool "${toolId}" is available over the API; GET /v1/tools lists them.`);
  }
  if (tool.pipeline) {
    throw new ApiError('tool_execution_pipeline', `${toolId} runs as a multi-step pipeline, which ${app ? 'the playground' : 'the API'} does not start.`);
  }
  if (!tools.allowed(tool, auth.plan)) {
    throw new ApiError('plan_upgrade_required', `${toolId} needs the ${tool.plans.join(' or ')} plan; this team is on ${auth.plan}.`, {
      details: { plan: auth.plan, required_plans: tool.plans },
    });
  }
  return tool;
}

/** Identity tools: every element named must have active consent (403 before input validation). */
async function checkConsent(db: Queryable, tool: ToolManifest, teamId: string, inputs: Record<string, unknown>): Promise<void> {
  if (tool.consent === 'none') return;
  const ids = elementIds(tool, inputs);
  if (!ids.length) return;
  const { rows } = await db.query<{ id: string }>(
    'SELECT id FROM elements WHERE team_id = $1::uuid AND id = ANY ($2::uuid[]) AND NOT consent_active',
    [teamId, ids],
  );
  if (rows.length) {
    throw new ApiError('consent_required', `The ${tool.consent} element must have the person's active consent before ${tool.id} can use it.`, {
      details: { element_ids: rows.map((r) => r.id) },
    });
  }
}

/**
 * The estimate or start body as the route received it. The route validates it against
 * RunBodySchema without answering, so that the tool checks (404, 409, 403) and consent come
 * first; `schemaErrors` lists what the schema found wrong (empty when the body is a RunBody).
 */
export interface RunRequest {
  body: unknown;
  schemaErrors: FieldError[];
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The body's inputs when they are an object (absent inputs are no inputs); null otherwise. */
function inputsOf(body: unknown): Record<string, unknown> | null {
  if (!isObject(body)) return null;
  const inputs = Object.prototype.hasOwnProperty.call(body, 'inputs') ? body.inputs : {};
  return isObject(inputs) ? inputs : null;
}

/** The body's duration_seconds when it is a valid hint. */
function durationOf(body: unknown): number | null {
  const d = isObject(body) ? body.duration_seconds : null;
  return typeof d === 'number' && Number.isFinite(d) && d > 0 ? d : null;
}

/**
 * Consent (403), then every 422 at once: the body's own fields, `extra` (the Idempotency-Key
 * header), and, when there are such errors and the inputs are an object, the slots' too.
 * Returns the valid body.
 */
async function checkBody(deps: RunsDeps, tool: ToolManifest, auth: RunActor, req: RunRequest, extra: FieldError[], mode: PriceMode): Promise<RunBody> {
  const inputs = inputsOf(req.body);
  if (inputs) await checkConsent(deps.db.pool, tool, auth.teamId, inputs);
  const errors = [...req.schemaErrors, ...extra];
  if (errors.length) {
    if (inputs) errors.push(...(await resolveInputs(deps.db.pool, tool, auth.teamId, inputs, durationOf(req.body), { mode })).errors);
    throw invalidRequest(errors);
  }
  // No schema errors: the body is a RunBody.
  return req.body as RunBody;
}

interface Priced {
  resolved: ResolvedInputs;
  sparks: number;
  reserve: number;
}

async function price(deps: RunsDeps, tool: ToolManifest, auth: RunActor, body: RunBody, mode: PriceMode): Promise<Priced> {
  // The schema admits any JSON object here; the tool's slots decide what each key may hold.
  const inputs = (body.inputs ?? {}) as Record<string, unknown>;
  const { resolved, errors } = await resolveInputs(deps.db.pool, tool, auth.teamId, inputs, body.duration_seconds ?? null, { mode });
  if (errors.length) throw invalidRequest(errors);
  const sparks = tool.price(resolved.pricing);
  if (!Number.isSafeInteger(sparks) && resolved.pricing.durationHint !== null) {
    // A length hint no real file has (1e20 s) prices past any balance and any integer.
    throw invalidRequest([{ loc: ['body', 'duration_seconds'], message: 'is too long to price', code: 'out_of_range' }]);
  }
  if (!Number.isSafeInteger(sparks) || sparks < 0) throw new Error(`${tool.id} priced ${sparks}`);
  // Prices are exact once inputs are probed, so the hold is the price.
  return { resolved, sparks, reserve: sparks };
}

function insufficient(needed: number, available: number): ApiError {
  return new ApiError('insufficient_sparks', `This run holds ${count(needed, 'Spark')} and the team has ${available} available.`, {
    details: { needed_sparks: needed, available_sparks: available },
  });
}

export async function estimate(deps: RunsDeps, auth: RunActor, toolId: string, req: RunRequest): Promise<Estimate> {
  const tool = checkTool(deps.tools, toolId, auth);
  const body = await checkBody(deps, tool, auth, req, [], 'estimate');
  const { sparks, reserve } = await price(deps, tool, auth, body, 'estimate');
  const { rows } = await deps.db.pool.query<{ available: number }>('SELECT sparks_available AS available FROM teams WHERE id = $1::uuid', [
    auth.teamId,
  ]);
  const available = rows[0]?.available ?? 0;
  if (available < reserve) throw insufficient(reserve, available);
  return { object: 'estimate', tool_id: tool.id, product_id: tool.productId, sparks, reserve_sparks: reserve };
}

function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((k) => [k, canonical((value as Record<string, unknown>)[k])]),
    );
  }
  return value;
}

function requestHash(toolId: string, body: RunBody): string {
  return createHash('sha256').update(JSON.stringify(canonical({ tool_id: toolId, body }))).digest('hex');
}

export interface Started {
  run: Run;
  row: RunRow;
  replayed: boolean;
}

async function replay(db: Queryable, existing: RunRow, hash: string): Promise<Started> {
  if (existing.request_hash !== hash) {
    throw new ApiError('idempotency_key_reused', 'This Idempotency-Key was used for a different tool or body; use a new key for a new run.', {
      details: { run_id: existing.id },
    });
  }
  return { run: runResource(existing, await getOutputs(db, existing.id)), row: existing, replayed: true };
}

function secondsToNextHour(now = new Date()): number {
  const next = new Date(now);
  next.setUTCMinutes(60, 0, 0);
  return Math.max(1, Math.ceil((next.getTime() - now.getTime()) / 1000));
}

/**
 * Starts a run: validates, prices, then in one transaction with the team row locked (which
 * serialises the team's starts) re-checks the idempotency key, the hourly ceiling and the
 * balance, holds the Sparks, inserts the queued run and wakes the workers.
 */
export async function startRun(
  deps: RunsDeps,
  auth: RunActor,
  toolId: string,
  req: RunRequest,
  idempotencyKey: string | undefined,
  opts: { cancelAfter?: string | undefined } = {},
): Promise<Started> {
  const tool = checkTool(deps.tools, toolId, auth);
  const keyErrors: FieldError[] =
    idempotencyKey !== undefined && (idempotencyKey.length < 1 || idempotencyKey.length > MAX_IDEMPOTENCY_KEY)
      ? [{ loc: ['header', 'Idempotency-Key'], message: `must be 1 to ${MAX_IDEMPOTENCY_KEY} characters`, code: idempotencyKey.length ? 'too_long' : 'too_short' }]
      : [];
  const deadline = opts.cancelAfter === undefined ? null : parseCancelAfter(opts.cancelAfter);
  if (deadline !== null && typeof deadline !== 'number') keyErrors.push(deadline);
  const body = await checkBody(deps, tool, auth, req, keyErrors, 'start');
  const hash = requestHash(tool.id, body);
  if (idempotencyKey !== undefined) {
    // Before the inputs are resolved: a repeat answers with its run even if an input has expired since.
    const existing = await findByIdempotencyKey(deps.db.pool, auth.teamId, idempotencyKey);
    if (existing) return replay(deps.db.pool, existing, hash);
  }
  const priced = await price(deps, tool, auth, body, 'start');
  return deps.db.tx(async (tx) => {
    const { rows } = await tx.query<{ sparks_available: number; runs_per_hour: number }>({
      name: 'run-start-team',
      text: 'SELECT sparks_available, runs_per_hour FROM teams WHERE id = $1::uuid FOR UPDATE',
      values: [auth.teamId],
    });
    const team = rows[0];
    if (!team) throw new ApiError('invalid_api_key', 'The team of this key no longer exists.');
    if (idempotencyKey !== undefined) {
      // A concurrent repeat that won the team lock first has committed its run by now.
      const existing = await findByIdempotencyKey(tx, auth.teamId, idempotencyKey);
      if (existing) return replay(tx, existing, hash);
    }
    const runId = randomUUID();
    const run = await insertQueuedRun(
      tx,
      {
        id: runId,
        teamId: auth.teamId,
        apiKeyId: auth.keyId,
        memberId: auth.memberId,
        toolId: tool.id,
        productId: tool.productId,
        inputs: priced.resolved.values,
        price: priced.sparks,
        hold: priced.reserve,
        maxAttempts: MAX_ATTEMPTS,
        idempotencyKey: idempotencyKey ?? null,
        requestHash: hash,
        cancelAfterSeconds: typeof deadline === 'number' ? deadline : null,
      },
      team.runs_per_hour,
      RUNS_CHANNEL,
    );
    if (!run) {
      const retryAfter = secondsToNextHour();
      throw new ApiError('rate_limited', `This team started its ${count(team.runs_per_hour, 'run')} for this hour; retry in ${retryAfter} s.`, {
        // Every rate_limited answer carries the key's limit per minute, this one too (an app run has no key).
        details: { ...(auth.rateLimitPerMinute !== null ? { limit_per_minute: auth.rateLimitPerMinute } : {}), limit_per_hour: team.runs_per_hour },
        headers: { 'Retry-After': String(retryAfter) },
      });
    }
    if (!(await holdForRun(tx, auth.teamId, runId, priced.reserve))) throw insufficient(priced.reserve, team.sparks_available);
    return { run: runResource(run, []), row: run, replayed: false };
  });
}

export async function getRun(deps: RunsDeps, teamId: string, runId: string): Promise<Run> {
  const run = await getTeamRun(deps.db.pool, teamId, runId, API_RUNS);
  if (!run) throw runNotFound(runId, API_RUNS);
  return runResource(run, await getOutputs(deps.db.pool, run.id));
}

/** A page of the team's API runs, newest first; `starting_after` must be one of them. */
export async function listRuns(deps: RunsDeps, teamId: string, q: RunListQuery): Promise<{ object: 'list'; data: Run[]; has_more: boolean }> {
  if (q.starting_after !== undefined && !(await getTeamRun(deps.db.pool, teamId, q.starting_after, API_RUNS))) {
    throw invalidRequest([{ loc: ['query', 'starting_after'], message: "is not a run started with this team's API keys", code: 'not_found' }]);
  }
  const limit = q.limit ?? RUN_LIST_DEFAULT;
  const rows = await listApiRuns(deps.db.pool, teamId, {
    status: q.status,
    toolId: q.tool_id,
    createdAfter: q.created_after,
    createdBefore: q.created_before,
    startingAfter: q.starting_after,
    limit,
  });
  const page = rows.slice(0, limit);
  const outputs = await getOutputsOf(deps.db.pool, page.filter((r) => r.status === 'succeeded').map((r) => r.id));
  return { object: 'list', data: page.map((r) => runResource(r, outputs.get(r.id) ?? [])), has_more: rows.length > limit };
}

export function runNotFound(runId: string, sources: readonly RunSource[]): ApiError {
  return new ApiError('run_not_found', sources.includes('app') ? `No run ${runId} in this team.` : `No run ${runId} started with this team's API keys.`);
}

/** Cancels a queued or running run; the row as it is now. */
export async function cancelTeamRun(deps: Pick<RunsDeps, 'db'>, teamId: string, runId: string, sources: readonly RunSource[]): Promise<RunRow> {
  return deps.db.tx(async (tx) => {
    const run = await getTeamRun(tx, teamId, runId, sources, { lock: true });
    if (!run) throw runNotFound(runId, sources);
    const outcome = await cancelLockedRun(tx, run);
    if (outcome.kind === 'final') {
      throw new ApiError('run_not_cancelable', `The run already ${run.status}; only queued or running runs can be canceled.`, {
        details: { status: run.status },
      });
    }
    return outcome.run;
  });
}

export async function cancelRun(deps: RunsDeps, teamId: string, runId: string): Promise<Run> {
  const run = await cancelTeamRun(deps, teamId, runId, API_RUNS);
  // A canceled run shows no outputs, so none are read.
  return runResource(run, []);
}

export async function outputUrl(deps: RunsDeps, teamId: string, runId: string, assetId: string, sources: readonly RunSource[] = API_RUNS): Promise<OutputUrl> {
  const run = await getTeamRun(deps.db.pool, teamId, runId, sources);
  if (!run) throw runNotFound(runId, sources);
  const output = run.status === 'succeeded' ? (await getOutputs(deps.db.pool, run.id)).find((o) => o.id === assetId) : undefined;
  if (output?.status === 'failed') {
    throw new ApiError(
      'output_not_found',
      `Output ${assetId} is not available: its stored copy failed the integrity check. The run's Sparks were refunded; run the tool again for a new output.`,
    );
  }
  if (!output || output.status === 'expired' || output.expires_at.getTime() <= Date.now()) {
    throw new ApiError('output_not_found', `No output ${assetId} of this run is available (unknown, of another run, or past its retention).`);
  }
  if (output.status === 'checking') {
    throw new ApiError('output_not_ready', 'This output is still being checked; retry in a few seconds.', { headers: { 'Retry-After': '2' } });
  }
  const ttl = deps.config.files.downloadUrlTtlSeconds;
  const url = await deps.storage.downloadUrl(output.storage_key, {
    expiresInSeconds: ttl,
    fileName: output.file_name,
    contentType: output.mime_type ?? 'application/octet-stream',
  });
  return { object: 'output_url', asset_id: output.id, url, expires_in_seconds: ttl };
}
