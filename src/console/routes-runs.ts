import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { ApiError, invalidRequest, type ErrorCode } from '../core/errors.js';
import { errorResponses } from '../core/schemas.js';
import { getTeamFiles } from '../files/repository.js';
import { availableOutputs, getOutputs, type RunRow } from '../runs/repository.js';
import { ALL_RUNS, cancelTeamRun, outputUrl, runNotFound } from '../runs/service.js';
import { MEDIA_KINDS } from '../tools/manifest.js';
import { canManage, requireSession, type ConsoleSession } from './guard.js';
import type { ConsoleDeps } from './plugin.js';
import { SESSION_ERRORS } from './routes-session.js';
import { getTeamRunDetail, isTeamRun, listTeamRuns, runFilterChoices, runLedger, type RunListRow } from './runs-view.js';
import {
  ConsoleRunSchema,
  InputUrlSchema,
  RunInputParamsSchema,
  RunListQuerySchema,
  RunListSchema,
  RunOutputParamsSchema,
  RunParamsSchema,
  type ConsoleRun,
  type RunItem,
} from './schemas-runs.js';

const BODY: ErrorCode[] = ['payload_too_large', 'unsupported_media_type'];
const iso = (d: Date | null): string | null => (d ? d.toISOString() : null);

export function runItem(deps: Pick<ConsoleDeps, 'tools'>, r: RunListRow): RunItem {
  return {
    id: r.id,
    tool_id: r.tool_id,
    tool_name: deps.tools.get(r.tool_id)?.name ?? r.tool_id,
    status: r.status,
    progress: r.status === 'succeeded' ? 1 : r.progress,
    cost_sparks: r.cost_sparks,
    source: r.source,
    started_by:
      r.api_key_id !== null
        ? { kind: 'key', id: r.api_key_id, name: r.key_name ?? '', member_email: r.member_email }
        : { kind: 'member', id: r.member_id, email: r.member_email },
    created_at: r.created_at.toISOString(),
    started_at: iso(r.started_at),
    finished_at: iso(r.finished_at),
  };
}

/** Owners and admins stop any run of the team; a member stops the runs they started (in the app or with their keys). */
function mayCancel(s: ConsoleSession, run: { member_id: string }): boolean {
  return canManage(s) || run.member_id === s.memberId;
}

const isFinal = (status: string) => status === 'succeeded' || status === 'failed' || status === 'canceled';

/** The media files a run's inputs name, by slot, in the order given. */
function inputFileIds(deps: Pick<ConsoleDeps, 'tools'>, toolId: string, inputs: Record<string, unknown>): { slot: string; id: string }[] {
  const tool = deps.tools.get(toolId);
  if (!tool) return [];
  return tool.inputs
    .filter((slot) => MEDIA_KINDS.includes(slot.kind))
    .flatMap((slot) => {
      const ids = inputs[slot.name];
      return Array.isArray(ids) ? ids.filter((id): id is string => typeof id === 'string').map((id) => ({ slot: slot.name, id })) : [];
    });
}

export async function consoleRun(deps: ConsoleDeps, s: ConsoleSession, runId: string): Promise<ConsoleRun> {
  const db = deps.db.pool;
  // One statement for the run: two could see it on either side of its success commit (a
  // succeeded status beside a row read while running, without outputs).
  const row = await getTeamRunDetail(db, s.teamId, runId);
  if (!row) throw runNotFound(runId, ALL_RUNS);
  const named = inputFileIds(deps, row.tool_id, row.inputs);
  const files = new Map((await getTeamFiles(db, s.teamId, named.map((n) => n.id))).map((f) => [f.id, f]));
  // The outputs as /v1 would list them: only a succeeded run's, only those still available.
  const outputs = availableOutputs(row, await getOutputs(db, runId)).map((o) => ({
    asset_id: o.id,
    file_name: o.file_name,
    mime_type: o.mime_type,
    width: o.width,
    height: o.height,
    duration_seconds: o.duration_seconds,
    size_bytes: o.size_bytes,
  }));
  return {
    ...runItem(deps, row),
    inputs: row.inputs,
    input_files: named.flatMap(({ slot, id }) => {
      const f = files.get(id);
      return f
        ? [{ slot, file_id: id, file_name: f.file_name, mime_type: f.detected_mime, width: f.width, height: f.height, duration_seconds: f.duration_seconds }]
        : [];
    }),
    error: row.error,
    ledger: (await runLedger(db, s.teamId, runId)).map((l) => ({ id: l.id, kind: l.kind, amount: l.amount, note: l.note, created_at: l.created_at.toISOString() })),
    outputs,
    can_cancel: !isFinal(row.status) && mayCancel(s, row),
    queue:
      row.queue_position === null
        ? null
        : {
            position: row.queue_position,
            running: row.team_running,
            limit: row.team_max_concurrent_runs ?? deps.config.runs.teamConcurrency[row.team_plan],
          },
  };
}

/** Runs: every run of the team, API and app, with filters, a page at a time; one run; cancel; output and input URLs. */
export function runConsoleRoutes(deps: ConsoleDeps): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(
      '/console/api/runs',
      {
        schema: {
          operationId: 'listRuns',
          summary: "The team's runs, API and app, newest first",
          tags: ['runs'],
          querystring: RunListQuerySchema,
          response: { 200: RunListSchema, ...errorResponses('session_required') },
        },
      },
      async (request) => {
        const s = requireSession(request);
        const q = request.query;
        if (q.cursor !== undefined && !(await isTeamRun(deps.db.pool, s.teamId, q.cursor))) {
          throw invalidRequest([{ loc: ['query', 'cursor'], message: 'is not a cursor of this list; start again without it', code: 'invalid' }]);
        }
        const limit = q.limit === undefined ? 25 : Number(q.limit);
        const rows = await listTeamRuns(deps.db.pool, s.teamId, {
          toolId: q.tool_id,
          status: q.status,
          apiKeyId: q.api_key_id,
          memberId: q.member_id,
          source: q.source,
          after: q.cursor,
          limit,
        });
        const page = rows.slice(0, limit);
        const choices = await runFilterChoices(deps.db.pool, s.teamId);
        return {
          data: page.map((r) => runItem(deps, r)),
          next_cursor: rows.length > limit ? (page[page.length - 1]?.id ?? null) : null,
          filters: { tools: deps.tools.listed().map((t) => ({ id: t.id, name: t.name })), ...choices },
        };
      },
    );

    app.get(
      '/console/api/runs/:run_id',
      {
        schema: {
          operationId: 'getRun',
          summary: 'One run of the team: inputs, status, ledger entries and outputs',
          tags: ['runs'],
          params: RunParamsSchema,
          response: { 200: ConsoleRunSchema, ...errorResponses('session_required', 'run_not_found') },
        },
      },
      async (request) => consoleRun(deps, requireSession(request), request.params.run_id),
    );

    app.post(
      '/console/api/runs/:run_id/cancel',
      {
        schema: {
          operationId: 'cancelRun',
          summary: 'Cancel a queued or running run; its hold is released',
          tags: ['runs'],
          params: RunParamsSchema,
          response: {
            200: ConsoleRunSchema,
            ...errorResponses(...SESSION_ERRORS, ...BODY, 'run_not_found', 'run_not_cancelable', 'insufficient_role'),
          },
        },
      },
      async (request) => {
        const s = requireSession(request);
        const row = await getTeamRunDetail(deps.db.pool, s.teamId, request.params.run_id);
        if (!row) throw runNotFound(request.params.run_id, ALL_RUNS);
        if (!mayCancel(s, row)) {
          throw new ApiError('insufficient_role', `Only owners, admins and the member who started a run cancel it; your role is ${s.role}.`, {
            details: { required_role: 'admin', role: s.role },
          });
        }
        await cancelTeamRun(deps, s.teamId, request.params.run_id, ALL_RUNS);
        deps.teamChanged(s.teamId);
        return consoleRun(deps, s, request.params.run_id);
      },
    );

    app.get(
      '/console/api/runs/:run_id/outputs/:asset_id/url',
      {
        schema: {
          operationId: 'getOutputUrl',
          summary: 'A short-lived signed URL to download one output',
          tags: ['runs'],
          params: RunOutputParamsSchema,
          response: { 200: Type.Ref('OutputUrl', { description: 'The signed URL' }), ...errorResponses('session_required', 'run_not_found', 'output_not_found', 'output_not_ready') },
        },
      },
      async (request) => {
        const s = requireSession(request);
        return outputUrl(deps, s.teamId, request.params.run_id, request.params.asset_id, ALL_RUNS);
      },
    );

    app.get(
      '/console/api/runs/:run_id/inputs/:file_id/url',
      {
        schema: {
          operationId: 'getInputUrl',
          summary: 'A short-lived signed URL of an input file of the run (the before of a before/after)',
          tags: ['runs'],
          params: RunInputParamsSchema,
          response: { 200: InputUrlSchema, ...errorResponses('session_required', 'run_not_found', 'file_not_found') },
        },
      },
      async (request) => {
        const s = requireSession(request);
        const { run_id: runId, file_id: fileId } = request.params;
        const { rows } = await deps.db.pool.query<Pick<RunRow, 'tool_id' | 'inputs'>>(
          'SELECT tool_id, inputs FROM runs WHERE id = $1::uuid AND team_id = $2::uuid',
          [runId, s.teamId],
        );
        const run = rows[0];
        if (!run) throw runNotFound(runId, ALL_RUNS);
        const named = inputFileIds(deps, run.tool_id, run.inputs).some((n) => n.id === fileId);
        const file = named ? (await getTeamFiles(deps.db.pool, s.teamId, [fileId]))[0] : undefined;
        const live = file && file.status === 'ready' && (file.expires_at === null || file.expires_at.getTime() > Date.now());
        if (!file || !live) throw new ApiError('file_not_found', `No input file ${fileId} of this run is available (unknown, or past its retention).`);
        const ttl = deps.config.files.downloadUrlTtlSeconds;
        const url = await deps.storage.downloadUrl(file.storage_key, {
          expiresInSeconds: ttl,
          fileName: file.file_name,
          contentType: file.detected_mime ?? 'application/octet-stream',
        });
        return { object: 'input_url' as const, file_id: fileId, url, expires_in_seconds: ttl };
      },
    );
  };
}
