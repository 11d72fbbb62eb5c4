// Schemas of the console's runs, playground and usage routes (issue 15): one schema per answer,
// driving validation, serialization and the console's OpenAPI document.
import { Type, type Static } from 'typebox';
import { PathUuid } from '../core/schemas.js';
import { RUN_STATUSES } from '../runs/repository.js';

const Uuid = Type.String({ format: 'uuid' });
const DateTime = Type.String({ format: 'date-time' });
const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(t: T) => Type.Union([t, Type.Null()]);
const LEDGER_KINDS = ['grant', 'hold', 'charge', 'release', 'refund'] as const;
/** A page size in a query string (not coerced: query values are strings), 1 to 100. */
const Limit = (byDefault: number) => Type.String({ pattern: '^([1-9][0-9]?|100)$', description: `1 to 100; ${byDefault} when left out` });

export const StartedBySchema = Type.Union(
  [
    Type.Object(
      { kind: Type.Literal('key'), id: Uuid, name: Type.String(), member_email: Type.String({ description: 'The member the key acts as' }) },
      { additionalProperties: false },
    ),
    Type.Object({ kind: Type.Literal('member'), id: Uuid, email: Type.String() }, { additionalProperties: false }),
  ],
  { description: 'An API key for API runs; the member for app runs' },
);

const RunItemProperties = {
  id: Uuid,
  tool_id: Type.String(),
  tool_name: Type.String(),
  status: Type.String({ enum: [...RUN_STATUSES] }),
  progress: Type.Number({ minimum: 0, maximum: 1 }),
  cost_sparks: Type.Integer({ description: 'The hold while in flight; what was charged once final' }),
  source: Type.String({ enum: ['api', 'app'], description: 'api: started with a key; app: started in the playground (not visible through /v1)' }),
  started_by: StartedBySchema,
  created_at: DateTime,
  started_at: Nullable(DateTime),
  finished_at: Nullable(DateTime),
};

export const RunItemSchema = Type.Object(RunItemProperties, { additionalProperties: false });
export type RunItem = Static<typeof RunItemSchema>;

export const RunListQuerySchema = Type.Object(
  {
    tool_id: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
    status: Type.Optional(Type.String({ enum: [...RUN_STATUSES] })),
    api_key_id: Type.Optional(PathUuid('Only runs started with this key')),
    member_id: Type.Optional(PathUuid('Only runs started by this member (with their keys or in the app)')),
    source: Type.Optional(Type.String({ enum: ['api', 'app'] })),
    limit: Type.Optional(Limit(25)),
    cursor: Type.Optional(PathUuid('next_cursor of the previous page, with the same filters')),
  },
  { additionalProperties: false },
);
export type RunListQuery = Static<typeof RunListQuerySchema>;

export const RunListSchema = Type.Object(
  {
    data: Type.Array(RunItemSchema, { description: 'Newest first' }),
    next_cursor: Nullable(Type.String({ description: 'Pass as cursor for the next page; null on the last' })),
    filters: Type.Object(
      {
        tools: Type.Array(Type.Object({ id: Type.String(), name: Type.String() }, { additionalProperties: false })),
        keys: Type.Array(Type.Object({ id: Uuid, name: Type.String() }, { additionalProperties: false })),
        members: Type.Array(Type.Object({ id: Uuid, email: Type.String() }, { additionalProperties: false })),
      },
      { additionalProperties: false, description: 'The choices of each filter' },
    ),
  },
  { additionalProperties: false, description: "A page of the team's runs, API and app" },
);

export const RunLedgerEntrySchema = Type.Object(
  {
    id: Type.String(),
    kind: Type.String({ enum: [...LEDGER_KINDS] }),
    amount: Type.Integer({ description: 'The effect on the balance: holds and charges are negative' }),
    note: Nullable(Type.String()),
    created_at: DateTime,
  },
  { additionalProperties: false },
);

export const ConsoleRunSchema = Type.Object(
  {
    ...RunItemProperties,
    inputs: Type.Object({}, { additionalProperties: true, description: 'As validated: defaults applied, media slots as file ids' }),
    input_files: Type.Array(
      Type.Object(
        {
          slot: Type.String(),
          file_id: Uuid,
          file_name: Type.String(),
          mime_type: Nullable(Type.String()),
          width: Nullable(Type.Integer()),
          height: Nullable(Type.Integer()),
          duration_seconds: Nullable(Type.Number()),
        },
        { additionalProperties: false },
      ),
    ),
    error: Nullable(Type.String()),
    ledger: Type.Array(RunLedgerEntrySchema, { description: "The run's Sparks moves, oldest first" }),
    outputs: Type.Array(
      Type.Object(
        {
          asset_id: Uuid,
          file_name: Type.String(),
          mime_type: Nullable(Type.String()),
          width: Nullable(Type.Integer()),
          height: Nullable(Type.Integer()),
          duration_seconds: Nullable(Type.Number()),
          size_bytes: Type.Integer(),
        },
        { additionalProperties: false },
      ),
    ),
    can_cancel: Type.Boolean({ description: 'Not final, and started by this member or the member is an owner or admin' }),
    queue: Type.Union([
      Type.Object(
        {
          position: Type.Integer({ minimum: 1, description: "Its place among the team's queued runs, in the order workers take them (1 = next)" }),
          running: Type.Integer({ minimum: 0, description: "The team's runs running now" }),
          limit: Type.Integer({ minimum: 1, description: 'How many runs of the team may run at once (its own limit, or its plan\'s)' }),
        },
        { additionalProperties: false },
      ),
      Type.Null(),
    ], { description: 'Only for a queued run: where it stands in the team queue' }),
  },
  { additionalProperties: false, description: 'A run of the team with its inputs, ledger entries and outputs' },
);
export type ConsoleRun = Static<typeof ConsoleRunSchema>;

export const RunParamsSchema = Type.Object({ run_id: PathUuid('The run id') });
export const RunOutputParamsSchema = Type.Object({ run_id: PathUuid('The run id'), asset_id: PathUuid('The output asset id') });
export const RunInputParamsSchema = Type.Object({ run_id: PathUuid('The run id'), file_id: PathUuid('An input file of the run') });

export const InputUrlSchema = Type.Object(
  { object: Type.Literal('input_url'), file_id: Uuid, url: Type.String(), expires_in_seconds: Type.Integer() },
  { additionalProperties: false, description: 'A short-lived signed URL of one input file of the run' },
);

export const PlaygroundToolsSchema = Type.Object(
  {
    data: Type.Array(Type.Ref('Tool'), { description: 'As GET /v1/tools lists them' }),
    playground: Type.Object(
      { allowed: Type.Boolean(), reason: Nullable(Type.String({ description: 'Why not, when not allowed' })) },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false, description: 'The tools, and whether this team may start app runs' },
);

export const LedgerQuerySchema = Type.Object(
  {
    kind: Type.Optional(Type.String({ enum: [...LEDGER_KINDS] })),
    run_id: Type.Optional(PathUuid('Only entries of this run')),
    limit: Type.Optional(Limit(50)),
    cursor: Type.Optional(Type.String({ pattern: '^[0-9]{1,18}$', description: 'next_cursor of the previous page, with the same filters' })),
  },
  { additionalProperties: false },
);
export type LedgerQuery = Static<typeof LedgerQuerySchema>;

export const LedgerSchema = Type.Object(
  {
    sparks_available: Type.Integer(),
    data: Type.Array(
      Type.Object(
        { id: Type.String(), kind: Type.String({ enum: [...LEDGER_KINDS] }), amount: Type.Integer(), run_id: Nullable(Uuid), note: Nullable(Type.String()), created_at: DateTime },
        { additionalProperties: false },
      ),
      { description: 'Newest first' },
    ),
    next_cursor: Nullable(Type.String()),
  },
  { additionalProperties: false, description: "A page of the team's ledger" },
);

export const UsageSchema = Type.Object(
  {
    sparks_available: Type.Integer(),
    since: Type.String({ description: 'The first day shown (UTC), 29 days before today' }),
    days: Type.Array(
      Type.Object({ date: Type.String(), sparks_spent: Type.Integer(), runs: Type.Integer() }, { additionalProperties: false }),
      { description: 'The last 30 days (UTC), oldest first; spent is charges less refunds' },
    ),
    tools: Type.Array(
      Type.Object({ tool_id: Type.String(), tool_name: Type.String(), runs: Type.Integer(), sparks_spent: Type.Integer() }, { additionalProperties: false }),
      { description: 'Runs and Sparks per tool over the same days, most runs first' },
    ),
  },
  { additionalProperties: false, description: "The team's Sparks and runs over the last 30 days" },
);
