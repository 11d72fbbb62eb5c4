import { Type, type Static } from 'typebox';
import { EXAMPLE_ASSET_ID, EXAMPLE_FILE_ID, EXAMPLE_RUN_ID, exampleRun } from '../core/examples.js';
import { PathUuid } from '../core/schemas.js';

export const RunBodySchema = Type.Object(
  {
    inputs: Type.Optional(
      Type.Object({}, { additionalProperties: true, description: 'Slot name to value; media slots take a list of file ids (not URLs)' }),
    ),
    duration_seconds: Type.Optional(
      Type.Union([Type.Number({ exclusiveMinimum: 0 }), Type.Null()], {
        description: 'Length hint for metered video tools before the file is resolved',
      }),
    ),
  },
  { additionalProperties: false, examples: [{ inputs: { image: [EXAMPLE_FILE_ID] } }] },
);
export type RunBody = Static<typeof RunBodySchema>;

export const ToolIdParamsSchema = Type.Object({
  tool_id: Type.String({ minLength: 1, maxLength: 100, description: 'The id of a tool from GET /v1/tools, e.g. image_upscale' }),
});
const RUN_ID = 'The id of a run started with this team\'s API keys';
export const RunIdParamsSchema = Type.Object({ run_id: PathUuid(RUN_ID) });
export const OutputParamsSchema = Type.Object({
  run_id: PathUuid(RUN_ID),
  asset_id: PathUuid("The asset_id of one of the run's outputs"),
});

const IDEMPOTENCY_KEY =
  'At most 255 characters. Repeating a key returns the run already started, with Idempotent-Replayed: true';

const PREFER =
  'Prefer: wait=N (1 to 60 seconds) holds the answer until the run is final or N seconds pass; the answer then says Preference-Applied: wait=N. ' +
  'Past a bound of waiting requests (10 per key; per team and per process as the operator sets them, by default 250 and 1000) the answer comes at once, without Preference-Applied. Other preferences are ignored.';

export const WAIT_DESCRIPTION = `Send ${PREFER}`;

export const WaitHeadersSchema = Type.Object({ prefer: Type.Optional(Type.String({ description: PREFER })) });

const CANCEL_AFTER =
  'A deadline: a run not final this long after its start is canceled by the service (its hold released, run.canceled sent, ' +
  'its error saying why). Seconds (90) or hours, minutes and seconds (1h30m, 10m, 45s); at most 24h.';

export const StartHeadersSchema = Type.Object({
  // Length (at most 255) is checked in the handler, so that a bad tool answers 404 first and a
  // long key is reported with the body's problems; StartHeadersDocumented states it. The same
  // for Cancel-After's form and range.
  'idempotency-key': Type.Optional(Type.String({ description: IDEMPOTENCY_KEY })),
  'cancel-after': Type.Optional(Type.String({ description: CANCEL_AFTER })),
  prefer: Type.Optional(Type.String({ description: PREFER })),
});

/** The start headers as the OpenAPI document states them: with the bounds the handler checks. */
export const StartHeadersDocumented = Type.Object({
  'idempotency-key': Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: IDEMPOTENCY_KEY })),
  'cancel-after': Type.Optional(Type.String({ pattern: '^([0-9]{1,5}|([0-9]{1,2}h)?([0-9]{1,4}m)?([0-9]{1,5}s)?)$', maxLength: 16, description: CANCEL_AFTER })),
  prefer: Type.Optional(Type.String({ description: PREFER })),
});

export const EstimateSchema = Type.Object(
  {
    object: Type.Literal('estimate'),
    tool_id: Type.String(),
    product_id: Type.String(),
    sparks: Type.Integer({ description: 'Expected cost; a successful run of these inputs costs exactly this' }),
    reserve_sparks: Type.Integer({ description: 'Held from the balance while the run works; unused Sparks are refunded' }),
  },
  {
    additionalProperties: false,
    $id: 'Estimate',
    title: 'estimate',
    examples: [{ object: 'estimate', tool_id: 'image_upscale', product_id: 'image_upscale', sparks: 3, reserve_sparks: 3 }],
  },
);
export type Estimate = Static<typeof EstimateSchema>;

const nullable = <T extends ReturnType<typeof Type.String> | ReturnType<typeof Type.Integer> | ReturnType<typeof Type.Number>>(t: T) =>
  Type.Union([t, Type.Null()]);

export const RunOutputSchema = Type.Object(
  {
    asset_id: Type.String({ format: 'uuid', description: 'Used in the output-URL endpoint' }),
    mime_type: Type.Optional(nullable(Type.String())),
    width: Type.Optional(nullable(Type.Integer())),
    height: Type.Optional(nullable(Type.Integer())),
    duration_seconds: Type.Optional(nullable(Type.Number())),
    size_bytes: Type.Optional(nullable(Type.Integer())),
    file_name: Type.Optional(nullable(Type.String())),
  },
  { additionalProperties: false, $id: 'RunOutput', title: 'run output' },
);
export type RunOutput = Static<typeof RunOutputSchema>;

const EXAMPLE_RUN = exampleRun('succeeded');

export const RunSchema = Type.Object(
  {
    object: Type.Literal('run'),
    id: Type.String({ format: 'uuid' }),
    tool_id: nullable(Type.String()),
    product_id: Type.String(),
    status: Type.String({
      enum: ['queued', 'running', 'succeeded', 'failed', 'canceled'],
      description: 'succeeded, failed and canceled are final; poll every 2 to 5 seconds until one appears',
    }),
    progress: Type.Number({ minimum: 0, maximum: 1 }),
    cost_sparks: Type.Integer({ description: 'The hold while in flight; the amount charged once final' }),
    outputs: Type.Array(Type.Ref('RunOutput'), { description: 'Files produced by a succeeded run; empty until then' }),
    error: nullable(Type.String({ description: 'Why a failed run failed' })),
    api_key_id: nullable(Type.String()),
    created_at: nullable(Type.String({ format: 'date-time' })),
    started_at: nullable(Type.String({ format: 'date-time' })),
    finished_at: nullable(Type.String({ format: 'date-time' })),
  },
  {
    additionalProperties: false,
    $id: 'Run',
    title: 'run',
    examples: [EXAMPLE_RUN],
  },
);
export type Run = Static<typeof RunSchema>;

export const RunListSchema = Type.Object(
  {
    object: Type.Literal('list'),
    data: Type.Array(Type.Ref('Run'), { description: "Runs started with this team's API keys, newest first" }),
    has_more: Type.Boolean({ description: 'true when more runs follow: pass the last id as starting_after for the next page' }),
  },
  {
    additionalProperties: false,
    $id: 'RunList',
    title: 'list of run',
    examples: [{ object: 'list', data: [EXAMPLE_RUN], has_more: false }],
  },
);

export const RUN_LIST_MAX = 100;
export const RUN_LIST_DEFAULT = 20;
const RUN_STATUS_ENUM = ['queued', 'running', 'succeeded', 'failed', 'canceled'];

export const RunListQuerySchema = Type.Object(
  {
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: RUN_LIST_MAX, default: RUN_LIST_DEFAULT, description: `Runs per page, 1 to ${RUN_LIST_MAX}` })),
    starting_after: Type.Optional(PathUuid('The id of the last run of the previous page: the page starts after it')),
    status: Type.Optional(Type.String({ enum: RUN_STATUS_ENUM, description: 'Only runs in this state' })),
    tool_id: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'Only runs of this tool' })),
    created_after: Type.Optional(Type.String({ format: 'date-time', description: 'Only runs created after this instant (exclusive)' })),
    created_before: Type.Optional(Type.String({ format: 'date-time', description: 'Only runs created before this instant (exclusive)' })),
  },
  { additionalProperties: false },
);
export type RunListQuery = Static<typeof RunListQuerySchema>;

export const OutputUrlSchema = Type.Object(
  {
    object: Type.Literal('output_url'),
    asset_id: Type.String(),
    url: Type.String({ description: 'Signed download URL; fetch straight away' }),
    expires_in_seconds: Type.Integer({ description: 'How long the URL works; then ask for a new one' }),
  },
  {
    additionalProperties: false,
    $id: 'OutputUrl',
    title: 'output_url',
    examples: [
      {
        object: 'output_url',
        asset_id: EXAMPLE_ASSET_ID,
        url: `https://toolrun.example.com/storage/objects/outputs/${EXAMPLE_RUN_ID}/photo-upscaled.png?expires=1746092100&signature=3f9a0c`,
        expires_in_seconds: 300,
      },
    ],
  },
);
export type OutputUrl = Static<typeof OutputUrlSchema>;
