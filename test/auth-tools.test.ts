// GET /v1/tools with an API key: the five tools of the spec with every field of each (inputs,
// their ranges, choices and defaults, the Sparks estimate hint), and `allowed` following the
// team's plan.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Plan } from '../src/auth/repository.js';
import type { TestApp } from './helpers/app.js';
import { authCalls, startAuthApp } from './helpers/auth.js';
import { bearer, makeTeam, type TeamFixture } from './helpers/fixtures.js';

let t: TestApp;
let team: TeamFixture;

before(async () => {
  ({ t, team } = await startAuthApp());
});
after(async () => {
  await t.close();
});

const { db } = authCalls(() => t);

interface ToolBody {
  object: string;
  id: string;
  name: string;
  description: string;
  family: string;
  inputs: {
    name: string;
    kind: string;
    required: boolean;
    min: number;
    max: number;
    constraints?: Record<string, unknown>;
    choices?: string[] | null;
    default?: unknown;
  }[];
  output_kind: string;
  consent: string;
  allowed: boolean;
  estimate_hint: { sparks_min: number; sparks_max: number };
}

async function listTools(key: string): Promise<ToolBody[]> {
  const res = await t.app.inject({ method: 'GET', url: '/v1/tools', headers: bearer(key) });
  assert.equal(res.statusCode, 200, res.body);
  const body = res.json<{ object: string; data: ToolBody[] }>();
  assert.deepEqual(Object.keys(body).sort(), ['data', 'object']);
  assert.equal(body.object, 'list');
  return body.data;
}

describe('GET /v1/tools', () => {
  const SPEC: Record<string, { name: string; family: string; output_kind: string; slots: [string, string, boolean, string[] | null][] }> = {
    image_upscale: {
      name: 'Upscale image',
      family: 'enhance',
      output_kind: 'image',
      slots: [
        ['image', 'image', true, null],
        ['method', 'enum', false, ['learned', 'lanczos']],
        ['scale', 'number', false, null],
      ],
    },
    video_transition: {
      name: 'Video transition',
      family: 'edit',
      output_kind: 'video',
      slots: [
        ['clips', 'video', true, null],
        ['style', 'enum', false, ['fade', 'dissolve', 'wipe_left', 'wipe_right']],
        ['duration_seconds', 'number', false, null],
      ],
    },
    image_color_grade: {
      name: 'Colour grade',
      family: 'edit',
      output_kind: 'image',
      slots: [
        ['image', 'image', true, null],
        ['temperature', 'number', false, null],
        ['contrast', 'number', false, null],
        ['saturation', 'number', false, null],
        ['exposure', 'number', false, null],
        ['grain', 'number', false, null],
        ['preset', 'enum', false, ['natural', 'warm_film', 'cool_matte', 'bw_16mm', 'none']],
      ],
    },
    video_upscale: {
      name: 'Upscale video',
      family: 'enhance',
      output_kind: 'video',
      slots: [
        ['video', 'video', true, null],
        ['target', 'enum', false, ['1080p', '4k']],
        ['method', 'enum', false, ['learned', 'lanczos']],
      ],
    },
    brand_kit_extract: {
      name: 'Extract brand kit',
      family: 'analyze',
      output_kind: 'json',
      slots: [
        ['url', 'text', false, null],
        ['files', 'image', false, null],
        ['save', 'bool', false, null],
      ],
    },
  };

  test('lists the five tools of the spec with every field', async () => {
    const tools = await listTools(team.key);
    assert.deepEqual(
      tools.map((x) => x.id),
      ['image_upscale', 'video_transition', 'image_color_grade', 'video_upscale', 'brand_kit_extract'],
    );
    for (const tool of tools) {
      const spec = SPEC[tool.id];
      assert.ok(spec, tool.id);
      assert.deepEqual(Object.keys(tool).sort(), [
        'allowed',
        'consent',
        'description',
        'estimate_hint',
        'family',
        'id',
        'inputs',
        'name',
        'object',
        'output_kind',
      ]);
      assert.equal(tool.object, 'tool');
      assert.equal(tool.name, spec.name);
      assert.equal(tool.family, spec.family);
      assert.equal(tool.output_kind, spec.output_kind);
      assert.equal(tool.consent, 'none');
      assert.ok(tool.description.length > 10, `${tool.id} has a description`);
      assert.equal(tool.allowed, true, `${tool.id} is allowed on pro`);

      assert.deepEqual(Object.keys(tool.estimate_hint).sort(), ['sparks_max', 'sparks_min']);
      const { sparks_min, sparks_max } = tool.estimate_hint;
      assert.ok(Number.isInteger(sparks_min) && Number.isInteger(sparks_max), `${tool.id} hint is integers`);
      assert.ok(sparks_min >= 1, `${tool.id} sparks_min >= 1`);
      assert.ok(sparks_min <= sparks_max, `${tool.id} sparks_min <= sparks_max`);

      assert.deepEqual(
        tool.inputs.map((s) => [s.name, s.kind, s.required, s.choices ?? null]),
        spec.slots,
        `${tool.id} slots`,
      );
      for (const slot of tool.inputs) {
        const where = `${tool.id}.${slot.name}`;
        for (const k of Object.keys(slot)) {
          assert.ok(['name', 'kind', 'required', 'min', 'max', 'constraints', 'choices', 'default'].includes(k), `${where} has no field ${k}`);
        }
        assert.ok(Number.isInteger(slot.min) && Number.isInteger(slot.max), `${where} min/max are integers`);
        assert.ok(slot.min >= 0 && slot.min <= slot.max, `${where} 0 <= min <= max`);
        assert.equal(slot.min >= 1, slot.required, `${where}: required exactly when min >= 1`);
        if (!['image', 'video', 'audio'].includes(slot.kind)) assert.equal(slot.max, 1, `${where}: a value slot takes one value`);
        if (slot.kind === 'number') {
          const c = slot.constraints;
          assert.ok(c && typeof c.minimum === 'number' && typeof c.maximum === 'number', `${where} has a number range`);
          assert.ok(c.minimum < c.maximum, `${where} range is not empty`);
          if (slot.default !== undefined) {
            assert.equal(typeof slot.default, 'number');
            assert.ok(Number(slot.default) >= c.minimum && Number(slot.default) <= c.maximum, `${where} default in range`);
          }
        }
        if (slot.kind === 'enum') {
          assert.ok(Array.isArray(slot.choices) && slot.choices.length > 0, `${where} has choices`);
          if (slot.default !== undefined) assert.ok(slot.choices.includes(String(slot.default)), `${where} default is a choice`);
        } else {
          assert.ok(slot.choices === undefined || slot.choices === null, `${where} has no choices`);
        }
        if (slot.kind === 'bool' && slot.default !== undefined) assert.equal(typeof slot.default, 'boolean');
      }
    }
    // Media slots that take a list say how long the list may be.
    const clips = tools.find((x) => x.id === 'video_transition')?.inputs.find((s) => s.name === 'clips');
    assert.deepEqual([clips?.min, clips?.max], [2, 10]);
    const files = tools.find((x) => x.id === 'brand_kit_extract')?.inputs.find((s) => s.name === 'files');
    assert.deepEqual([files?.min, files?.max], [0, 10]);
  });

  test('allowed follows the plan: video_upscale needs pro or team', async () => {
    const expectations: [Plan, boolean][] = [
      ['plus', false],
      ['pro', true],
      ['team', true],
    ];
    for (const [plan, videoUpscale] of expectations) {
      const f = await makeTeam(db(), { plan });
      const allowed = Object.fromEntries((await listTools(f.key)).map((x) => [x.id, x.allowed]));
      assert.deepEqual(
        allowed,
        {
          image_upscale: true,
          video_transition: true,
          image_color_grade: true,
          video_upscale: videoUpscale,
          brand_kit_extract: true,
        },
        plan,
      );
    }
  });
});
