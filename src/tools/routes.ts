import { Type, type Static } from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { requireAuth } from '../auth/plugin.js';
import { AUTH_ERRORS, errorResponses } from '../core/schemas.js';
import { videoUpscale } from './catalog/video-upscale.js';
import type { ToolManifest } from './manifest.js';
import { estimateHint, type ToolRegistry } from './registry.js';

export const ToolInputSchema = Type.Object(
  {
    name: Type.String({ description: 'Slot name, the key used in inputs' }),
    kind: Type.String({ description: 'One of image, video, audio, text, element, enum, number, bool; media slots take file ids' }),
    required: Type.Boolean(),
    min: Type.Integer({ description: 'Fewest values the slot takes' }),
    max: Type.Integer({ description: 'Most values the slot takes' }),
    constraints: Type.Optional(
      Type.Object({}, { additionalProperties: true, description: 'Extra limits, such as minimum and maximum for numbers' }),
    ),
    choices: Type.Optional(Type.Union([Type.Array(Type.String()), Type.Null()])),
    default: Type.Optional(Type.Unknown({ description: 'Value used when the slot is left out' })),
  },
  { additionalProperties: false, $id: 'ToolInput', title: 'tool input' },
);

const EXAMPLE_TOOL = {
  object: 'tool',
  id: 'video_upscale',
  name: 'Upscale video',
  description: videoUpscale.description,
  family: 'enhance',
  inputs: [
    { name: 'video', kind: 'video', required: true, min: 1, max: 1 },
    { name: 'target', kind: 'enum', required: false, min: 0, max: 1, choices: ['1080p', '4k'], default: '1080p' },
    { name: 'method', kind: 'enum', required: false, min: 0, max: 1, choices: ['learned', 'lanczos'] },
  ],
  output_kind: 'video',
  consent: 'none',
  allowed: true,
  estimate_hint: { sparks_min: 2, sparks_max: 543419 },
};

export const ToolSchema = Type.Object(
  {
    object: Type.Literal('tool'),
    id: Type.String(),
    name: Type.String(),
    description: Type.String(),
    family: Type.String({ description: 'e.g. enhance, edit, analyze' }),
    inputs: Type.Array(Type.Ref('ToolInput')),
    output_kind: Type.String({ description: 'image, video, audio or json' }),
    consent: Type.String({ description: 'none, voice or face' }),
    allowed: Type.Boolean({ description: "false when the team's plan does not include the tool" }),
    estimate_hint: Type.Object(
      { sparks_min: Type.Integer(), sparks_max: Type.Integer() },
      {
        additionalProperties: false,
        description:
          'What a run of the tool costs, from the cheapest inputs it accepts to the dearest (files within the upload limits); ' +
          'not the price of yours: the estimate gives that',
      },
    ),
  },
  { additionalProperties: false, $id: 'Tool', title: 'tool', examples: [EXAMPLE_TOOL] },
);
export type Tool = Static<typeof ToolSchema>;

const ToolListSchema = Type.Object(
  { object: Type.Literal('list'), data: Type.Array(Type.Ref('Tool')) },
  { additionalProperties: false, $id: 'ToolList', title: 'list of tool', examples: [{ object: 'list', data: [EXAMPLE_TOOL] }] },
);

export function toolResource(tool: ToolManifest, allowed: boolean): Tool {
  return {
    object: 'tool',
    id: tool.id,
    name: tool.name,
    description: tool.description,
    family: tool.family,
    inputs: tool.inputs.map((s) => ({
      name: s.name,
      kind: s.kind,
      required: s.required,
      min: s.min,
      max: s.max,
      ...(s.constraints ? { constraints: s.constraints } : {}),
      ...(s.choices !== undefined ? { choices: s.choices } : {}),
      ...(s.default !== undefined ? { default: s.default } : {}),
    })),
    output_kind: tool.outputKind,
    consent: tool.consent,
    allowed,
    estimate_hint: estimateHint(tool),
  };
}

export function toolSchemas(app: { addSchema(s: unknown): unknown }): void {
  app.addSchema(ToolInputSchema);
  app.addSchema(ToolSchema);
  app.addSchema(ToolListSchema);
}

export function toolRoutes(registry: ToolRegistry): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(
      '/v1/tools',
      {
        config: { scope: 'read' },
        schema: {
          operationId: 'listTools',
          summary: 'Tools this key can see',
          tags: ['tools'],
          response: {
            200: Type.Ref('ToolList', { description: 'Every tool offered over the API, with allowed: false for those the plan does not include' }),
            ...errorResponses(...AUTH_ERRORS),
          },
        },
      },
      async (request) => {
        const auth = requireAuth(request);
        return {
          object: 'list' as const,
          data: registry.listed().map((t) => toolResource(t, registry.allowed(t, auth.plan))),
        };
      },
    );
  };
}
