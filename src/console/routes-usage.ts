import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { errorResponses } from '../core/schemas.js';
import { requireSession } from './guard.js';
import type { ConsoleDeps } from './plugin.js';
import { readBalance } from '../sparks/balances.js';
import { teamLedger, usageByDay, usageByTool } from './runs-view.js';
import { LedgerQuerySchema, LedgerSchema, UsageSchema } from './schemas-runs.js';

/** Balance and usage: the ledger a page at a time, and the last 30 days by day and by tool. Every role reads them. */
export function usageRoutes(deps: ConsoleDeps): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(
      '/console/api/ledger',
      {
        schema: {
          operationId: 'listLedger',
          summary: "The team's Sparks available and its ledger, newest first",
          tags: ['usage'],
          querystring: LedgerQuerySchema,
          response: { 200: LedgerSchema, ...errorResponses('session_required') },
        },
      },
      async (request) => {
        const s = requireSession(request);
        const q = request.query;
        const limit = q.limit === undefined ? 50 : Number(q.limit);
        const rows = await teamLedger(deps.db.pool, s.teamId, { kind: q.kind, runId: q.run_id, before: q.cursor, limit });
        const page = rows.slice(0, limit);
        return {
          sparks_available: await readBalance(deps.db.pool, s.teamId),
          data: page.map((l) => ({ id: l.id, kind: l.kind, amount: l.amount, run_id: l.run_id, note: l.note, created_at: l.created_at.toISOString() })),
          next_cursor: rows.length > limit ? (page[page.length - 1]?.id ?? null) : null,
        };
      },
    );

    app.get(
      '/console/api/usage',
      {
        schema: {
          operationId: 'getUsage',
          summary: 'Sparks spent per day and runs per tool over the last 30 days',
          tags: ['usage'],
          response: { 200: UsageSchema, ...errorResponses('session_required') },
        },
      },
      async (request) => {
        const s = requireSession(request);
        const [days, tools, available] = await Promise.all([
          usageByDay(deps.db.pool, s.teamId),
          usageByTool(deps.db.pool, s.teamId),
          readBalance(deps.db.pool, s.teamId),
        ]);
        return {
          sparks_available: available,
          since: days[0]?.date ?? '',
          days,
          tools: tools.map((t) => ({ ...t, tool_name: deps.tools.get(t.tool_id)?.name ?? t.tool_id })),
        };
      },
    );
  };
}
