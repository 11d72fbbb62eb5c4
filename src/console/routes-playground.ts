import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { ApiError, type ErrorCode } from '../core/errors.js';
import { errorResponses } from '../core/schemas.js';
import { CompleteBodySchema, FileIdParamsSchema, UploadUrlBodySchema } from '../files/schemas.js';
import { completeUpload, startUpload } from '../files/service.js';
import { runRequest, toolFirst, TOOL_ERRORS } from '../runs/routes.js';
import { RunBodySchema, ToolIdParamsSchema } from '../runs/schemas.js';
import { estimate, startRun, type RunActor } from '../runs/service.js';
import { toolResource } from '../tools/routes.js';
import { requireSession, type ConsoleSession } from './guard.js';
import type { ConsoleDeps } from './plugin.js';
import { consoleRun } from './routes-runs.js';
import { SESSION_ERRORS } from './routes-session.js';
import { ConsoleRunSchema, PlaygroundToolsSchema } from './schemas-runs.js';

const BODY: ErrorCode[] = ['payload_too_large', 'unsupported_media_type'];
const FREE_REASON = 'The Free plan does not include the playground; upgrade the team to Plus, Pro or Team to run tools here.';

/**
 * The signed-in member as the one starting an app run: no key (so the run is an app run, never
 * visible through /v1), the member's team and plan. Free teams are refused here, before the tool.
 */
function playgroundActor(request: FastifyRequest): RunActor {
  const s = requireSession(request);
  if (s.plan === 'free') {
    throw new ApiError('plan_upgrade_required', FREE_REASON, { details: { plan: s.plan, required_plans: ['plus', 'pro', 'team'] } });
  }
  return actorOf(s);
}

function actorOf(s: ConsoleSession): RunActor {
  return { teamId: s.teamId, plan: s.plan, memberId: s.memberId, keyId: null, rateLimitPerMinute: null };
}

/** The playground: the tools, uploads (the same multipart flow as /v1), estimates and app runs. */
export function playgroundRoutes(deps: ConsoleDeps): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(
      '/console/api/tools',
      {
        schema: {
          operationId: 'listTools',
          summary: 'The tools (as GET /v1/tools lists them) and whether this team may use the playground',
          tags: ['playground'],
          response: { 200: PlaygroundToolsSchema, ...errorResponses('session_required') },
        },
      },
      async (request) => {
        const s = requireSession(request);
        return {
          data: deps.tools.listed().map((t) => toolResource(t, deps.tools.allowed(t, s.plan))),
          playground: s.plan === 'free' ? { allowed: false, reason: FREE_REASON } : { allowed: true, reason: null },
        };
      },
    );

    app.post(
      '/console/api/files/upload-url',
      {
        config: { consoleRate: 'upload' },
        schema: {
          operationId: 'createFileUpload',
          summary: 'Start an upload for the playground: part URLs to PUT the bytes to (as /v1)',
          tags: ['playground'],
          body: UploadUrlBodySchema,
          response: { 201: Type.Ref('FileUpload', { description: 'The file id and one signed URL per part' }), ...errorResponses(...SESSION_ERRORS, ...BODY, 'plan_upgrade_required') },
        },
      },
      async (request, reply) => {
        const actor = playgroundActor(request);
        return reply.status(201).send(await startUpload(deps, { teamId: actor.teamId, keyId: null }, request.body));
      },
    );

    app.post(
      '/console/api/files/:file_id/complete',
      {
        config: { consoleRate: 'upload' },
        schema: {
          operationId: 'completeFileUpload',
          summary: 'Complete a playground upload; the bytes are checked and probed (as /v1)',
          tags: ['playground'],
          params: FileIdParamsSchema,
          body: CompleteBodySchema,
          response: {
            200: Type.Ref('File', { description: 'The file, ready or rejected (with the problem)' }),
            ...errorResponses(...SESSION_ERRORS, ...BODY, 'plan_upgrade_required', 'file_not_found', 'part_in_progress'),
          },
        },
      },
      async (request) => completeUpload(deps, playgroundActor(request).teamId, request.params.file_id, request.body),
    );

    app.post(
      '/console/api/tools/:tool_id/estimate',
      {
        ...toolFirst(deps, playgroundActor),
        schema: {
          operationId: 'estimateRun',
          summary: 'Price the inputs as /v1 does; starts nothing',
          tags: ['playground'],
          params: ToolIdParamsSchema,
          body: RunBodySchema,
          response: { 200: Type.Ref('Estimate', { description: 'The price of these inputs' }), ...errorResponses(...SESSION_ERRORS, ...BODY, ...TOOL_ERRORS, 'plan_upgrade_required') },
        },
      },
      async (request) => estimate(deps, playgroundActor(request), request.params.tool_id, runRequest(request)),
    );

    app.post(
      '/console/api/tools/:tool_id/runs',
      {
        ...toolFirst(deps, playgroundActor),
        schema: {
          operationId: 'startAppRun',
          summary: 'Start an app run: the same price, balance and hourly ceiling as /v1, attributed to the signed-in member, never visible through /v1',
          tags: ['playground'],
          params: ToolIdParamsSchema,
          body: RunBodySchema,
          response: {
            202: ConsoleRunSchema,
            ...errorResponses(...SESSION_ERRORS, ...BODY, ...TOOL_ERRORS, 'plan_upgrade_required', 'rate_limited'),
          },
        },
      },
      async (request, reply) => {
        const s = requireSession(request);
        const started = await startRun(deps, playgroundActor(request), request.params.tool_id, runRequest(request), undefined);
        deps.teamChanged(s.teamId);
        return reply.status(202).send(await consoleRun(deps, s, started.row.id));
      },
    );
  };
}
