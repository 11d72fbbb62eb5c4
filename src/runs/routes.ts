import { Type } from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { FINAL_STATUSES, type RunStatus } from './repository.js';
import { preferredWait, type RunWaiters } from './waiters.js';
import type { PlaceHolder } from '../events/places.js';
import { requireAuth } from '../auth/plugin.js';
import { AUTH_ERRORS, errorResponses, numericLimit } from '../core/schemas.js';
import { fieldErrors } from '../core/validation.js';
import {
  EstimateSchema,
  OutputParamsSchema,
  OutputUrlSchema,
  RunBodySchema,
  RunIdParamsSchema,
  RunListQuerySchema,
  RunListSchema,
  RunOutputSchema,
  RunSchema,
  StartHeadersDocumented,
  StartHeadersSchema,
  ToolIdParamsSchema,
  WAIT_DESCRIPTION,
  WaitHeadersSchema,
  type Run,
} from './schemas.js';
import { cancelRun, checkTool, estimate, getRun, listRuns, outputUrl, startRun, type RunActor, type RunRequest, type RunsDeps } from './service.js';

export function runSchemas(app: { addSchema(s: unknown): unknown }): void {
  app.addSchema(EstimateSchema);
  app.addSchema(RunOutputSchema);
  app.addSchema(RunSchema);
  app.addSchema(OutputUrlSchema);
  app.addSchema(RunListSchema);
}

export const TOOL_ERRORS = ['tool_not_found', 'tool_execution_pipeline', 'consent_required', 'insufficient_sparks'] as const;

/**
 * Estimate and start answer 404, 409 and 403 (plan) about the tool before anything about the
 * body: the tool is checked before the body is read (preParsing), and the schema's verdict on the
 * body is attached (attachValidation) for the service to answer after consent.
 */
export function toolFirst(deps: Pick<RunsDeps, 'tools'>, actor: (request: FastifyRequest) => Pick<RunActor, 'plan' | 'keyId'> = requireAuth) {
  return {
    attachValidation: true,
    preParsing: async (request: FastifyRequest) => {
      checkTool(deps.tools, (request.params as { tool_id: string }).tool_id, actor(request));
    },
  };
}

export function runRequest(request: FastifyRequest): RunRequest {
  const v = request.validationError;
  return { body: request.body, schemaErrors: v ? fieldErrors(v.validation, v.validationContext) : [] };
}

/** Resolves the wait of a Prefer: wait=N request: the run as it is once final, or after N seconds (or the client left). */
async function waitedRun(
  deps: RunsDeps & { waiters?: RunWaiters | undefined },
  request: FastifyRequest,
  reply: FastifyReply,
  holder: PlaceHolder,
  runId: string,
  read: () => Promise<Run>,
): Promise<Run> {
  const seconds = preferredWait(request.headers.prefer);
  const place = seconds !== null && deps.waiters ? deps.waiters.enter(holder, runId) : null;
  if (!place || seconds === null) return read();
  try {
    let run = await read();
    if (!FINAL_STATUSES.includes(run.status as RunStatus)) {
      const gone = new AbortController();
      const onClose = () => gone.abort();
      reply.raw.once('close', onClose);
      try {
        await place.wait(seconds, gone.signal);
      } finally {
        reply.raw.off('close', onClose);
      }
      run = await read();
    }
    reply.header('Preference-Applied', `wait=${seconds}`);
    return run;
  } finally {
    place.release();
  }
}

/**
 * balanceChanged: called once a start or a cancel has committed, so that this process answers the
 * team's new balance at once (the notification, migration 0026, tells every process a moment later).
 */
export function runRoutes(deps: RunsDeps & { waiters?: RunWaiters | undefined; balanceChanged(teamId: string): void }): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.post(
      '/v1/tools/:tool_id/estimate',
      {
        config: { scope: 'read' },
        ...toolFirst(deps),
        schema: {
          operationId: 'estimateRun',
          summary: 'Price the exact inputs; starts nothing and spends nothing',
          tags: ['runs'],
          params: ToolIdParamsSchema,
          body: RunBodySchema,
          response: { 200: Type.Ref('Estimate', { description: 'The price of these inputs: what a run of them costs and holds' }), ...errorResponses(...AUTH_ERRORS, ...TOOL_ERRORS, 'payload_too_large', 'unsupported_media_type') },
        },
      },
      async (request) => estimate(deps, requireAuth(request), request.params.tool_id, runRequest(request)),
    );

    app.post(
      '/v1/tools/:tool_id/runs',
      {
        config: { scope: 'run', documentedHeaders: StartHeadersDocumented },
        ...toolFirst(deps),
        schema: {
          operationId: 'startRun',
          summary: 'Start a run: holds the estimated Sparks and queues it',
          tags: ['runs'],
          params: ToolIdParamsSchema,
          headers: StartHeadersSchema,
          body: RunBodySchema,
          response: {
            202: Type.Ref('Run', {
              description: 'The run, queued, its price held (a repeated Idempotency-Key: the run it started, with Idempotent-Replayed: true)',
            }),
            ...errorResponses(...AUTH_ERRORS, ...TOOL_ERRORS, 'idempotency_key_reused', 'payload_too_large', 'unsupported_media_type'),
          },
        },
      },
      async (request, reply) => {
        const auth = requireAuth(request);
        const started = await startRun(deps, auth, request.params.tool_id, runRequest(request), request.headers['idempotency-key'], {
          cancelAfter: request.headers['cancel-after'],
        });
        if (started.replayed) reply.header('Idempotent-Replayed', 'true');
        else deps.balanceChanged(auth.teamId);
        const run = await waitedRun(deps, request, reply, auth, started.run.id, async () =>
          started.run.status === 'queued' && request.headers.prefer === undefined ? started.run : getRun(deps, auth.teamId, started.run.id),
        );
        return reply.status(202).send(run);
      },
    );

    app.get(
      '/v1/runs',
      {
        config: { scope: 'read' },
        preValidation: numericLimit,
        schema: {
          operationId: 'listRuns',
          summary: "Runs started with this team's API keys, newest first, a page at a time",
          description: 'Pages by starting_after (the last id of the previous page) while has_more is true. Runs started in the app are not listed.',
          tags: ['runs'],
          querystring: RunListQuerySchema,
          response: { 200: Type.Ref('RunList', { description: 'A page of runs' }), ...errorResponses(...AUTH_ERRORS) },
        },
      },
      async (request) => listRuns(deps, requireAuth(request).teamId, request.query),
    );

    app.get(
      '/v1/runs/:run_id',
      {
        config: { scope: 'read' },
        schema: {
          operationId: 'getRun',
          summary: "A run started with this team's keys; poll every 2 to 5 seconds until it is final",
          description: WAIT_DESCRIPTION,
          tags: ['runs'],
          params: RunIdParamsSchema,
          headers: WaitHeadersSchema,
          response: { 200: Type.Ref('Run', { description: 'The run as it is now' }), ...errorResponses(...AUTH_ERRORS, 'run_not_found') },
        },
      },
      async (request, reply) => {
        const auth = requireAuth(request);
        return waitedRun(deps, request, reply, auth, request.params.run_id, () => getRun(deps, auth.teamId, request.params.run_id));
      },
    );

    app.post(
      '/v1/runs/:run_id/cancel',
      {
        config: { scope: 'run' },
        schema: {
          operationId: 'cancelRun',
          summary: 'Cancel a queued or running run; its hold is released. Canceling a canceled run returns it.',
          tags: ['runs'],
          params: RunIdParamsSchema,
          // No body is defined, but a POST may carry one: it is parsed (JSON only, within the limit).
          response: {
            200: Type.Ref('Run', { description: 'The run, canceled (one canceled before is returned as it is)' }),
            ...errorResponses(...AUTH_ERRORS, 'run_not_found', 'run_not_cancelable', 'payload_too_large', 'unsupported_media_type'),
          },
        },
      },
      async (request) => {
        const { teamId } = requireAuth(request);
        const run = await cancelRun(deps, teamId, request.params.run_id);
        deps.balanceChanged(teamId);
        return run;
      },
    );

    app.get(
      '/v1/runs/:run_id/outputs/:asset_id/url',
      {
        config: { scope: 'read' },
        schema: {
          operationId: 'getOutputUrl',
          summary: 'A short-lived signed download URL for one output of a succeeded run',
          tags: ['runs'],
          params: OutputParamsSchema,
          response: { 200: Type.Ref('OutputUrl', { description: 'A signed URL that downloads the output until it expires' }), ...errorResponses(...AUTH_ERRORS, 'run_not_found', 'output_not_found', 'output_not_ready') },
        },
      },
      async (request) => outputUrl(deps, requireAuth(request).teamId, request.params.run_id, request.params.asset_id),
    );
  };
}
