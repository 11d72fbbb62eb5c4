import { Type, type Static } from 'typebox';
import { PathUuid } from '../http/schemas.js';

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
  { additionalProperties: false },
);
export type RunBody = Static<typeof RunBodySchema>;

export const ToolIdParamsSchema = Type.Object({ tool_id: Type.String({ minLength: 1, maxLength: 100 }) });
export const RunIdParamsSchema = Type.Object({ run_id: PathUuid() });
export const OutputParamsSchema = Type.Object({
  run_id: PathUuid(),
  asset_id: PathUuid(),
});

export const StartHeadersSchema = Type.Object({
  // Length (at most 255) is checked in the handler, so that a bad tool answers 404 first.
  'idempotency-key': Type.Optional(
    Type.String({ description: 'At most 255 characters. Repeating a key returns the run already started, with Idempotent-Replayed: true' }),
  ),
});

export const EstimateSchema = Type.Object(
  {
    object: Type.Literal('estimate'),
    tool_id: Type.String(),
    product_id: Type.String(),
    sparks: Type.Integer({ description: 'Expected cost; a successful run of these inputs costs exactly this' }),
    reserve_sparks: Type.Integer({ description: 'Held from the balance while the run works; unused Sparks are refunded' }),
  },
  { additionalProperties: false, $id: 'Estimate', title: 'estimate' },
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
  { additionalProperties: false, $id: 'Run', title: 'run' },
);
export type Run = Static<typeof RunSchema>;

export const OutputUrlSchema = Type.Object(
  {
    object: Type.Literal('output_url'),
    asset_id: Type.String(),
    url: Type.String({ description: 'Signed download URL; fetch straight away' }),
    expires_in_seconds: Type.Integer({ description: 'How long the URL works; then ask for a new one' }),
  },
  { additionalProperties: false, $id: 'OutputUrl', title: 'output_url' },
);
export type OutputUrl = Static<typeof OutputUrlSchema>;
