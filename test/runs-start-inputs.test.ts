import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { Loc } from '../src/core/errors.js';
import { assertError } from './helpers/error-envelope.js';
import { makeTeam, type TeamFixture } from './helpers/fixtures.js';
import { makeMp4, makePng } from './helpers/media.js';
import { assertFieldErrors, beginUpload, estimate, runOf, start, teamState, uploadFile, uploadReady, type Headers } from './helpers/runs.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { testRegistry } from './helpers/test-tools.js';

/** Input validation on estimate and start: one errors[] entry per bad slot or field. */

let s: TestServer;
let team: TeamFixture;
const f = { png: '', png2: '', mp4: '', mp4b: '', uploading: '', rejected: '', foreign: '' };

const slot = (name: string): Loc => ['body', 'inputs', name];

/** An entry about one item of a list slot: loc ends with the slot, the message names the item. */
interface Expected {
  loc: Loc;
  code: string;
  item?: number;
}
const item = (name: string, index: number, code: string): Expected => ({ loc: slot(name), code, item: index });

/** Both estimate and start answer 422 with exactly these entries, and nothing is written. */
async function rejects(tool: string, body: unknown, expected: Expected[], headers: Headers = {}): Promise<void> {
  const before = await teamState(s.database.db.pool, team.teamId);
  for (const res of [await estimate(s, team.key, tool, body), await start(s, team.key, tool, body, headers)]) {
    assertFieldErrors(res, expected.map(({ loc, code }) => ({ loc, code })));
    const errors = res.json<{ error: { errors: { loc: Loc; message: string }[] } }>().error.errors;
    for (const e of expected) {
      if (e.item === undefined) continue;
      const entry = errors.find((x) => JSON.stringify(x.loc) === JSON.stringify(e.loc));
      assert.ok(entry?.message.startsWith(`item ${e.item + 1} (index ${e.item}): `), `${entry?.message} names item ${e.item + 1}`);
    }
  }
  assert.deepEqual(await teamState(s.database.db.pool, team.teamId), before);
}

before(async () => {
  s = await startTestServer({ tools: testRegistry() });
  team = await makeTeam(s.database.db, { plan: 'pro', sparks: 10_000, rate: 300 });
  const other = await makeTeam(s.database.db, { plan: 'pro', sparks: 100 });
  const png = await makePng(320, 240);
  const mp4 = await makeMp4({ seconds: 3, width: 160, height: 120, audio: false });
  f.png = await uploadReady(s, team.key, png, 'a.png', 'image/png');
  f.png2 = await uploadReady(s, team.key, png, 'b.png', 'image/png');
  f.mp4 = await uploadReady(s, team.key, mp4, 'a.mp4', 'video/mp4');
  f.mp4b = await uploadReady(s, team.key, mp4, 'b.mp4', 'video/mp4');
  f.uploading = (await beginUpload(s, team.key, png, 'c.png', 'image/png')).file_id;
  const rejected = await uploadFile(s, team.key, Buffer.from('not an image at all\n'.repeat(50)), 'd.png', 'image/png');
  assert.equal(rejected.status, 'rejected');
  f.rejected = rejected.id;
  f.foreign = await uploadReady(s, other.key, png, 'e.png', 'image/png');
});
after(() => s.close());

describe('slots: presence, names and counts', () => {
  test('a required slot left out, or null: missing', async () => {
    await rejects('image_upscale', { inputs: {} }, [{ loc: slot('image'), code: 'missing' }]);
    await rejects('image_upscale', {}, [{ loc: slot('image'), code: 'missing' }]);
    await rejects('image_upscale', { inputs: { image: null } }, [{ loc: slot('image'), code: 'missing' }]);
  });

  test('a slot the tool does not have: unknown_slot', async () => {
    await rejects('image_upscale', { inputs: { image: [f.png], sharpen: 4 } }, [{ loc: slot('sharpen'), code: 'unknown_slot' }]);
  });

  test('too many or too few files (video_transition takes 2 to 10 clips)', async () => {
    await rejects('video_transition', { inputs: { clips: [f.mp4] } }, [{ loc: slot('clips'), code: 'too_few' }]);
    const eleven = Array.from({ length: 11 }, () => randomUUID());
    await rejects('video_transition', { inputs: { clips: eleven } }, [{ loc: slot('clips'), code: 'too_many' }]);
    await rejects('image_upscale', { inputs: { image: [f.png, f.png2] } }, [{ loc: slot('image'), code: 'too_many' }]);
    await rejects('image_upscale', { inputs: { image: [] } }, [{ loc: slot('image'), code: 'too_few' }]);
    const ok = await estimate(s, team.key, 'video_transition', { inputs: { clips: [f.mp4, f.mp4b] } });
    assert.equal(ok.statusCode, 200, ok.body);
  });

  test('a media slot takes a list of ids, not one id', async () => {
    await rejects('image_upscale', { inputs: { image: f.png } }, [{ loc: slot('image'), code: 'wrong_type' }]);
  });
});

describe('files: ids, ownership, readiness and kind', () => {
  test('an id that is not a UUID: invalid_id at its index', async () => {
    await rejects('image_upscale', { inputs: { image: ['abc'] } }, [item('image', 0, 'invalid_id')]);
    await rejects('video_transition', { inputs: { clips: [f.mp4, 42] } }, [item('clips', 1, 'invalid_id')]);
  });

  test("another team's file is indistinguishable from an unknown id: workspace_asset_not_found", async () => {
    const messages: string[] = [];
    for (const id of [f.foreign, randomUUID()]) {
      await rejects('video_transition', { inputs: { clips: [f.mp4, id] } }, [item('clips', 1, 'workspace_asset_not_found')]);
      const e = assertError(await estimate(s, team.key, 'image_upscale', { inputs: { image: [id] } }), 422, 'invalid_request');
      messages.push(e.errors?.[0]?.message ?? '');
    }
    assert.equal(messages[0], messages[1]);
  });

  test('an upload not completed, and a rejected file: file_not_ready', async () => {
    await rejects('image_upscale', { inputs: { image: [f.uploading] } }, [item('image', 0, 'file_not_ready')]);
    await rejects('image_upscale', { inputs: { image: [f.rejected] } }, [item('image', 0, 'file_not_ready')]);
  });

  test('a file of the wrong kind: wrong_media_kind', async () => {
    await rejects('image_upscale', { inputs: { image: [f.mp4] } }, [item('image', 0, 'wrong_media_kind')]);
    await rejects('video_transition', { inputs: { clips: [f.mp4, f.png] } }, [item('clips', 1, 'wrong_media_kind')]);
  });

  test('a file listed twice: duplicate', async () => {
    await rejects('video_transition', { inputs: { clips: [f.mp4, f.mp4] } }, [item('clips', 1, 'duplicate')]);
  });
});

describe('values: choices, ranges, types and text', () => {
  test('an enum value not among the choices: invalid_choice', async () => {
    await rejects('video_transition', { inputs: { clips: [f.mp4, f.mp4b], style: 'spin' } }, [{ loc: slot('style'), code: 'invalid_choice' }]);
    await rejects('image_color_grade', { inputs: { image: [f.png], preset: 3 } }, [{ loc: slot('preset'), code: 'invalid_choice' }]);
  });

  test('a number outside its constraints: out_of_range; the bounds themselves are accepted', async () => {
    await rejects('image_color_grade', { inputs: { image: [f.png], temperature: 101 } }, [{ loc: slot('temperature'), code: 'out_of_range' }]);
    await rejects('image_color_grade', { inputs: { image: [f.png], exposure: -3.5 } }, [{ loc: slot('exposure'), code: 'out_of_range' }]);
    await rejects('video_transition', { inputs: { clips: [f.mp4, f.mp4b], duration_seconds: 0 } }, [
      { loc: slot('duration_seconds'), code: 'out_of_range' },
    ]);
    const ok = await estimate(s, team.key, 'image_color_grade', { inputs: { image: [f.png], temperature: 100, exposure: -3, grain: 0 } });
    assert.equal(ok.statusCode, 200, ok.body);
  });

  test('wrong types: a string for a number, a number for a bool, a number for text', async () => {
    await rejects('image_color_grade', { inputs: { image: [f.png], temperature: '5' } }, [{ loc: slot('temperature'), code: 'wrong_type' }]);
    await rejects('brand_kit_extract', { inputs: { url: 'https://example.com', save: 1 } }, [{ loc: slot('save'), code: 'wrong_type' }]);
    await rejects('brand_kit_extract', { inputs: { url: 5 } }, [{ loc: slot('url'), code: 'wrong_type' }]);
  });

  test('text constraints: at most 2048 characters, an http or https URL', async () => {
    const base = 'https://example.com/';
    const long = base + 'a'.repeat(2049 - base.length);
    await rejects('brand_kit_extract', { inputs: { url: long } }, [{ loc: slot('url'), code: 'too_long' }]);
    await rejects('brand_kit_extract', { inputs: { url: 'ftp://example.com/logo.png' } }, [{ loc: slot('url'), code: 'invalid_url' }]);
    await rejects('brand_kit_extract', { inputs: { url: 'example dot com' } }, [{ loc: slot('url'), code: 'invalid_url' }]);
    await rejects('brand_kit_extract', { inputs: { url: '' } }, [{ loc: slot('url'), code: 'too_short' }]);
    // Runs keep their inputs in jsonb, which cannot hold U+0000: refused, not a 500.
    await rejects('brand_kit_extract', { inputs: { url: 'https://example.com/a\u0000b' } }, [{ loc: slot('url'), code: 'invalid_character' }]);
    const ok = await estimate(s, team.key, 'brand_kit_extract', { inputs: { url: long.slice(0, 2048), save: true } });
    assert.equal(ok.statusCode, 200, ok.body);
  });

  test('several bad slots at once: one entry each', async () => {
    await rejects(
      'image_color_grade',
      { inputs: { image: [f.mp4], temperature: 101, exposure: -3.5, preset: 'sepia', grain: 'x', hue: 10 } },
      [
        item('image', 0, 'wrong_media_kind'),
        { loc: slot('temperature'), code: 'out_of_range' },
        { loc: slot('exposure'), code: 'out_of_range' },
        { loc: slot('preset'), code: 'invalid_choice' },
        { loc: slot('grain'), code: 'wrong_type' },
        { loc: slot('hue'), code: 'unknown_slot' },
      ],
    );
    await rejects('video_transition', { inputs: { clips: [f.uploading, f.rejected], style: 'spin', duration_seconds: 9 } }, [
      item('clips', 0, 'file_not_ready'),
      { loc: slot('style'), code: 'invalid_choice' },
      { loc: slot('duration_seconds'), code: 'out_of_range' },
    ]);
  });
});

describe('the body and the Idempotency-Key header', () => {
  test('an unknown top-level field: unknown_field on ["body", name]', async () => {
    await rejects('image_upscale', { inputs: { image: [f.png] }, priority: 'high' }, [{ loc: ['body', 'priority'], code: 'unknown_field' }]);
  });

  test('duration_seconds must be a number greater than 0, or null', async () => {
    await rejects('image_upscale', { inputs: { image: [f.png] }, duration_seconds: 0 }, [{ loc: ['body', 'duration_seconds'], code: 'out_of_range' }]);
    await rejects('image_upscale', { inputs: { image: [f.png] }, duration_seconds: -5 }, [{ loc: ['body', 'duration_seconds'], code: 'out_of_range' }]);
    await rejects('image_upscale', { inputs: { image: [f.png] }, duration_seconds: '30' }, [{ loc: ['body', 'duration_seconds'], code: 'wrong_type' }]);
    // A hint no file could have prices past any integer: 422 on the hint, not a 500.
    for (const hint of [1e20, 1e300]) {
      assertFieldErrors(await estimate(s, team.key, 'video_transition', { duration_seconds: hint }), [{ loc: ['body', 'duration_seconds'], code: 'out_of_range' }]);
    }
    const ok = await estimate(s, team.key, 'image_upscale', { inputs: { image: [f.png] }, duration_seconds: null });
    assert.equal(ok.statusCode, 200, ok.body);
  });

  test('inputs that are not an object, and a body that is not an object', async () => {
    for (const inputs of [[f.png], 'image', null, 7]) {
      await rejects('image_upscale', { inputs }, [{ loc: ['body', 'inputs'], code: 'wrong_type' }]);
    }
    await rejects('image_upscale', [{ inputs: {} }], [{ loc: ['body'], code: 'wrong_type' }]);
  });

  test('malformed JSON: malformed_json on ["body"]', async () => {
    await rejects('image_upscale', '{"inputs": {"image": [', [{ loc: ['body'], code: 'malformed_json' }]);
  });

  test("body-level and slot problems together: one entry for each", async () => {
    await rejects('image_upscale', { inputs: { image: ['abc'], sharpen: 2 }, priority: 'high', duration_seconds: 0 }, [
      { loc: ['body', 'priority'], code: 'unknown_field' },
      { loc: ['body', 'duration_seconds'], code: 'out_of_range' },
      item('image', 0, 'invalid_id'),
      { loc: slot('sharpen'), code: 'unknown_slot' },
    ]);
  });

  test('Idempotency-Key: over 255 characters is 422 on ["header","Idempotency-Key"]; 255 is accepted', async () => {
    const before = await teamState(s.database.db.pool, team.teamId);
    const res = await start(s, team.key, 'image_upscale', { inputs: { image: [f.png] } }, { 'idempotency-key': 'k'.repeat(256) });
    assertFieldErrors(res, [{ loc: ['header', 'Idempotency-Key'], code: 'too_long' }]);
    // With bad inputs too, both are named.
    const both = await start(s, team.key, 'image_upscale', { inputs: { image: [f.mp4] } }, { 'idempotency-key': 'k'.repeat(300) });
    assertFieldErrors(both, [
      { loc: ['header', 'Idempotency-Key'], code: 'too_long' },
      { loc: slot('image'), code: 'wrong_media_kind' },
    ]);
    assert.deepEqual(await teamState(s.database.db.pool, team.teamId), before);
    const ok = runOf(await start(s, team.key, 'image_upscale', { inputs: { image: [f.png] } }, { 'idempotency-key': 'k'.repeat(255) }));
    assert.equal(ok.status, 'queued');
  });
});
