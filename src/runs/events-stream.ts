// GET /v1/runs/{run_id}/events (issue 18): a run as server-sent events, woken by PostgreSQL
// notifications (the run's status and progress changes, its final transition), never by polling.
// Every event's data is the run exactly as GET /v1/runs/{run_id} shows it at that moment; its id
// is the run's event_seq (migration 0015), so Last-Event-ID resumes after what the client saw.
import { Type } from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { requireAuth } from '../auth/plugin.js';
import type { Queryable } from '../db/pool.js';
import type { StreamHub } from '../events/hub.js';
import { openSse, sseResponse, wakeLoop } from '../events/sse.js';
import { streamsExhausted } from '../events/bounds.js';
import { endWhenAccessEnds } from '../events/access.js';
import { ApiError, invalidRequest } from '../core/errors.js';
import { AUTH_ERRORS, errorResponses } from '../core/schemas.js';
import { FINAL_STATUSES, getOutputs, RUN_COLUMNS, runResource, type RunRow } from './repository.js';
import { RunIdParamsSchema } from './schemas.js';
import { runNotFound, API_RUNS, type RunsDeps } from './service.js';

const LAST_EVENT_ID =
  'The id of the last event received (what EventSource sends when it reconnects): events up to it are not sent again. ' +
  'Ids are whole numbers that grow with every change of the run; one above the run\'s latest is refused (422).';

export const RunEventsHeadersSchema = Type.Object({
  'last-event-id': Type.Optional(Type.String({ pattern: '^[0-9]{1,9}$', description: LAST_EVENT_ID })),
});

export const RUN_EVENTS_DESCRIPTION =
  'Server-sent events (text/event-stream) for one run, woken by the service when the run changes (no polling). ' +
  'Each event has an `id:` (the run\'s change number), an `event:` and `data:` with the run as GET /v1/runs/{run_id} shows it then: ' +
  '`status` when the status changed (and first, with the run as it is), `progress` when only the progress moved, and finally ' +
  '`done` with the final run, after which the stream ends. Reconnect with Last-Event-ID to resume (an id above the ' +
  'run\'s latest is 422); a run already final and fully seen answers 204. A comment line (`: heartbeat`) comes every ' +
  '15 s. At most 10 open streams per key (both stream kinds together), and per team and per server as the operator ' +
  'sets them (by default 250 and 1000): past them, 429 rate_limited.';

const exampleRun = (status: string, progress: number, finished: boolean) =>
  JSON.stringify({
    object: 'run',
    id: '5f0c7d2e-8a51-4c3b-9d6e-2b7f4a1c9e30',
    tool_id: 'image_upscale',
    product_id: 'image_upscale',
    status,
    progress,
    cost_sparks: 4,
    outputs: [],
    error: null,
    api_key_id: 'b2a4c6d8-1e3f-4a5b-8c7d-9e0f1a2b3c4d',
    created_at: '2025-01-15T10:00:00.000Z',
    started_at: status === 'queued' ? null : '2025-01-15T10:00:01.000Z',
    finished_at: finished ? '2025-01-15T10:00:09.000Z' : null,
  });

const RUN_EVENTS_EXAMPLE =
  `retry: 2000\n\nid: 2\nevent: status\ndata: ${exampleRun('running', 0, false)}\n\n` +
  `id: 3\nevent: progress\ndata: ${exampleRun('running', 0.5, false)}\n\n: heartbeat\n\n` +
  `id: 5\nevent: done\ndata: ${exampleRun('canceled', 0.5, true)}\n\n`;

type StreamRow = RunRow & { event_seq: number };

async function readRun(db: Queryable, teamId: string, runId: string): Promise<StreamRow | null> {
  const { rows } = await db.query<StreamRow>(
    `SELECT ${RUN_COLUMNS}, event_seq FROM runs WHERE id = $1::uuid AND team_id = $2::uuid AND source = ANY ($3::text[])`,
    [runId, teamId, API_RUNS],
  );
  return rows[0] ?? null;
}

const isFinalRow = (row: RunRow) => FINAL_STATUSES.includes(row.status);

function lastEventIdAbove(latest: number): ApiError {
  return invalidRequest([
    {
      loc: ['header', 'last-event-id'],
      message: `is above this run's latest event id (${latest}); send the id of an event this stream sent, or no Last-Event-ID for the run as it is`,
      code: 'out_of_range',
    },
  ]);
}

export function runEventRoutes(deps: RunsDeps & { hub: StreamHub; heartbeatMs?: number }): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(
      '/v1/runs/:run_id/events',
      {
        config: { scope: 'read' },
        schema: {
          operationId: 'streamRunEvents',
          summary: "A run's status and progress as server-sent events, until it is final",
          description: RUN_EVENTS_DESCRIPTION,
          tags: ['runs'],
          params: RunIdParamsSchema,
          headers: RunEventsHeadersSchema,
          response: {
            200: sseResponse('Events until the run is final: status, progress, then done with the final run', RUN_EVENTS_EXAMPLE),
            204: Type.Null({ description: 'Resumed (Last-Event-ID) after the final event: nothing more will come; do not reconnect' }),
            ...errorResponses(...AUTH_ERRORS, 'run_not_found'),
          },
        },
      },
      async (request, reply) => {
        const auth = requireAuth(request);
        const runId = request.params.run_id;
        const seen = Number(request.headers['last-event-id'] ?? 0);
        const slot = deps.hub.enter(auth);
        if (!slot) throw streamsExhausted(auth, deps.hub);
        let handedOver = false;
        try {
          // Watched before the first read, so a change committed in between still wakes the loop.
          let woken: (() => void) | null = null;
          let early = false;
          slot.watchRun(runId, () => (woken ? woken() : (early = true)));
          const first = await readRun(deps.db.pool, auth.teamId, runId);
          if (!first) throw runNotFound(runId, API_RUNS);
          // Ids only grow, so one above the run's latest was never sent by this run: a stream
          // waiting for the run to pass it could miss the done event and hold its place for good.
          if (seen > first.event_seq) throw lastEventIdAbove(first.event_seq);
          if (isFinalRow(first) && seen >= first.event_seq) return reply.status(204).send(null);

          const sse = openSse(reply, deps.heartbeatMs === undefined ? {} : { heartbeatMs: deps.heartbeatMs });
          handedOver = true;
          let sentSeq = seen;
          let sentStatus: string | null = null;
          let row: StreamRow | null = first;
          const loop = wakeLoop(
            async () => {
              row ??= await readRun(deps.db.pool, auth.teamId, runId);
              const current = row;
              row = null;
              // Gone (it cannot be, runs are not deleted) or past what was sent: nothing new, or the end.
              if (!current) {
                sse.end();
                return false;
              }
              const final = isFinalRow(current);
              if (current.event_seq > sentSeq) {
                const outputs = current.status === 'succeeded' ? await getOutputs(deps.db.pool, current.id) : [];
                const event = final ? 'done' : sentStatus !== null && sentStatus === current.status ? 'progress' : 'status';
                sse.send({ id: String(current.event_seq), event, data: JSON.stringify(runResource(current, outputs)) });
                sentSeq = current.event_seq;
                sentStatus = current.status;
              }
              // A final run ends its stream whatever was sent: nothing can follow it.
              if (final) {
                sse.end();
                return false;
              }
              return !sse.ended;
            },
            (err) => {
              request.log.warn({ err, run_id: runId }, 'run event stream failed; ended');
              sse.end();
            },
          );
          woken = loop.wake;
          slot.onShutdown(() => sse.end());
          endWhenAccessEnds(slot, deps.db.pool, auth, { scope: 'read' }, sse);
          loop.wake();
          // A change between the first read and now: read again.
          if (early) loop.wake();
          void sse.done.then(() => {
            loop.stop();
            slot.release();
          });
          return reply;
        } finally {
          if (!handedOver) slot.release();
        }
      },
    );
  };
}
