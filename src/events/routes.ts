// GET /v1/events (issue 18): the team's run events as server-sent events, the same event objects,
// byte for byte, that webhooks deliver, from the moment of connection (or after Last-Event-ID).
// Woken by the toolrun_team_events notification (migration 0015) whenever a run of the team's API
// keys becomes final; a stream woken reads the team's new events itself.
import { Type } from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { requireAuth } from '../auth/plugin.js';
import type { Db, Queryable } from '../db/pool.js';
import { ApiError, invalidRequest } from '../core/errors.js';
import { AUTH_ERRORS, errorResponses, PathUuid } from '../core/schemas.js';
import { eventBody } from '../webhooks/worker.js';
import { endWhenAccessEnds } from './access.js';
import { streamsExhausted } from './bounds.js';
import type { StreamHub } from './hub.js';
import { openSse, sseResponse, wakeLoop } from './sse.js';

/** How far back Last-Event-ID may point. */
export const LOOK_BACK_HOURS = 24;
/**
 * An event's created_at is its transaction's start, and transactions commit in another order than
 * they start: every read looks this far before the newest event sent, so one that committed late
 * is still found (the ids already sent are skipped).
 */
const SETTLE_SECONDS = 10;
const PAGE = 100;

/** A timestamp as fixed-width UTC text with microseconds: it sorts as text and reads back exactly. */
const ts = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

const LAST_EVENT_ID = `The id of the last event received (what EventSource sends when it reconnects): the events after it are sent first. It must be one of this team's events of the last ${LOOK_BACK_HOURS} hours.`;

export const TeamEventsHeadersSchema = Type.Object({
  'last-event-id': Type.Optional({ ...PathUuid(LAST_EVENT_ID) }),
});

export const TEAM_EVENTS_DESCRIPTION =
  "Server-sent events (text/event-stream) with the team's run events (run.succeeded, run.failed, run.canceled; more types may come) " +
  'from the moment of connection: `id:` is the event id, `event:` its type, and `data:` the very body a webhook delivery of the event ' +
  'POSTs (the same id, on every path). No endpoint is needed: this is how a local machine can receive events (toolrun-cli listen). ' +
  `Reconnect with Last-Event-ID (an event of the last ${LOOK_BACK_HOURS} hours) to get what came after it. Delivery is at least once, ` +
  'as with webhooks: skip ids you have handled. A comment line (`: heartbeat`) comes every 15 s. Needs the webhooks scope and an owner ' +
  'or admin behind the key. At most 10 open streams per key (both stream kinds together), and per team and per server ' +
  'as the operator sets them (by default 250 and 1000): past them, 429 rate_limited.';

const TEAM_EVENTS_EXAMPLE =
  'retry: 2000\n\n: heartbeat\n\nid: 0d6b1f5e-3c2a-4e8b-9f70-1a2b3c4d5e6f\nevent: run.canceled\ndata: ' +
  JSON.stringify({
    id: '0d6b1f5e-3c2a-4e8b-9f70-1a2b3c4d5e6f',
    object: 'event',
    type: 'run.canceled',
    created_at: '2025-01-15T10:00:09.000Z',
    data: {
      run: {
        object: 'run',
        id: '5f0c7d2e-8a51-4c3b-9d6e-2b7f4a1c9e30',
        tool_id: 'image_upscale',
        product_id: 'image_upscale',
        status: 'canceled',
        progress: 0.5,
        cost_sparks: 0,
        outputs: [],
        error: null,
        api_key_id: 'b2a4c6d8-1e3f-4a5b-8c7d-9e0f1a2b3c4d',
        created_at: '2025-01-15T10:00:00.000Z',
        started_at: '2025-01-15T10:00:01.000Z',
        finished_at: '2025-01-15T10:00:09.000Z',
      },
    },
  }) +
  '\n\n';

interface EventRow {
  id: string;
  type: string;
  payload: unknown;
  created_at: Date;
  /** created_at at full precision, for the cursor (a Date keeps milliseconds only). */
  ts: string;
}

/** The team's API-run events from `since - SETTLE_SECONDS` on, oldest first, a page after (ts, id). */
async function eventsFrom(db: Queryable, teamId: string, since: string, after: { ts: string; id: string } | null): Promise<EventRow[]> {
  const { rows } = await db.query<EventRow>(
    `SELECT e.id, e.type, e.payload, e.created_at, ${ts('e.created_at')} AS ts
       FROM run_events e JOIN runs r ON r.id = e.run_id AND r.source = 'api'
      WHERE e.team_id = $1::uuid AND e.created_at >= $2::timestamptz - make_interval(secs => $3::integer)
        AND ($4::timestamptz IS NULL OR (e.created_at, e.id) > ($4::timestamptz, $5::uuid))
      ORDER BY e.created_at, e.id
      LIMIT $6::integer`,
    [teamId, since, SETTLE_SECONDS, after?.ts ?? null, after?.id ?? null, PAGE],
  );
  return rows;
}

/** Where a stream starts: after Last-Event-ID, or now (with what is already there counted as sent). */
async function startingPoint(db: Queryable, teamId: string, lastEventId: string | undefined): Promise<{ cursor: string; sent: Map<string, string> }> {
  if (lastEventId !== undefined) {
    const { rows } = await db.query<{ ts: string }>(
      `SELECT ${ts('e.created_at')} AS ts FROM run_events e JOIN runs r ON r.id = e.run_id AND r.source = 'api'
        WHERE e.id = $1::uuid AND e.team_id = $2::uuid AND e.created_at > now() - make_interval(hours => $3::integer)`,
      [lastEventId, teamId, LOOK_BACK_HOURS],
    );
    const row = rows[0];
    // Another team's event answers like an unknown one: the header reveals nothing.
    if (!row) {
      throw invalidRequest([
        { loc: ['header', 'last-event-id'], message: `is not an event of this team from the last ${LOOK_BACK_HOURS} hours`, code: 'not_found' },
      ]);
    }
    return { cursor: row.ts, sent: new Map([[lastEventId, row.ts]]) };
  }
  const { rows } = await db.query<{ now: string; id: string | null; ts: string | null }>(
    `SELECT n.now, e.id, ${ts('e.created_at')} AS ts
       FROM (SELECT ${ts('now()')} AS now) n
       LEFT JOIN run_events e ON e.team_id = $1::uuid AND e.created_at >= now() - make_interval(secs => $2::integer)`,
    [teamId, SETTLE_SECONDS],
  );
  const sent = new Map<string, string>();
  for (const r of rows) if (r.id && r.ts) sent.set(r.id, r.ts);
  return { cursor: rows[0]?.now ?? new Date().toISOString(), sent };
}

export function teamEventRoutes(deps: { db: Db; hub: StreamHub; heartbeatMs?: number }): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(
      '/v1/events',
      {
        config: { scope: 'webhooks' },
        schema: {
          operationId: 'streamEvents',
          summary: "The team's run events as server-sent events: what webhooks deliver, without an endpoint",
          description: TEAM_EVENTS_DESCRIPTION,
          tags: ['webhooks'],
          headers: TeamEventsHeadersSchema,
          response: {
            200: sseResponse("The team's events as they happen", TEAM_EVENTS_EXAMPLE),
            ...errorResponses(...AUTH_ERRORS, 'insufficient_role'),
          },
        },
      },
      async (request, reply) => {
        const auth = requireAuth(request);
        // The webhooks scope's rule (the spec): an owner or admin behind the key.
        if (auth.role !== 'owner' && auth.role !== 'admin') {
          throw new ApiError('insufficient_role', "Events are for a team owner or admin; this key's member is not one.", {
            details: { required_role: 'admin', role: auth.role },
          });
        }
        const slot = deps.hub.enter(auth);
        if (!slot) throw streamsExhausted(auth, deps.hub);
        let handedOver = false;
        try {
          let woken: (() => void) | null = null;
          let early = false;
          // Watched before the starting point is read, so an event committed in between is not missed.
          slot.watchTeam(auth.teamId, () => (woken ? woken() : (early = true)));
          const start = await startingPoint(deps.db.pool, auth.teamId, request.headers['last-event-id']);
          const sse = openSse(reply, deps.heartbeatMs === undefined ? {} : { heartbeatMs: deps.heartbeatMs });
          handedOver = true;
          let cursor = start.cursor;
          const sent = start.sent;
          const loop = wakeLoop(
            async () => {
              let after: { ts: string; id: string } | null = null;
              for (;;) {
                const rows = await eventsFrom(deps.db.pool, auth.teamId, cursor, after);
                for (const e of rows) {
                  if (sent.has(e.id)) continue;
                  const body = eventBody({ event_id: e.id, event_type: e.type, event_created_at: e.created_at, payload: e.payload });
                  sse.send({ id: e.id, event: e.type, data: body.toString('utf8') });
                  sent.set(e.id, e.ts);
                }
                const last = rows[rows.length - 1];
                if (!last || rows.length < PAGE) break;
                after = { ts: last.ts, id: last.id };
              }
              // Move the window on: ids older than it cannot come back, so they are forgotten.
              const newest = [...sent.values()].reduce((a, b) => (b > a ? b : a), cursor);
              if (newest !== cursor) {
                cursor = newest;
                forgetBefore(sent, cursor);
              }
              return !sse.ended;
            },
            (err) => {
              request.log.warn({ err }, 'event stream failed; ended');
              sse.end();
            },
          );
          woken = loop.wake;
          slot.onShutdown(() => sse.end());
          endWhenAccessEnds(slot, deps.db.pool, auth, { scope: 'webhooks', roles: ['owner', 'admin'] }, sse);
          // Resuming: what came after Last-Event-ID goes out at once.
          if (request.headers['last-event-id'] !== undefined || early) loop.wake();
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

/** Drops sent ids that fell out of the settle window: no read can return them again. */
function forgetBefore(sent: Map<string, string>, cursor: string): void {
  const horizon = Date.parse(cursor) - SETTLE_SECONDS * 1000 - 1000;
  for (const [id, at] of sent) if (Date.parse(at) < horizon) sent.delete(id);
}
