// Strings the service cannot keep: NUL (PostgreSQL refuses U+0000 in text and jsonb) and lone
// surrogates (not Unicode; jsonb refuses the escape). Every string an operation takes in (body
// values and keys at any depth, path parameters, the Idempotency-Key header) is refused with 422
// invalid_request, code invalid_character and a loc naming where, before anything is written.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { assertError } from './helpers/error-envelope.js';
import { makeTeam, type TeamFixture } from './helpers/fixtures.js';
import { makePng } from './helpers/media.js';
import { rawExchange } from './helpers/raw-exchange.js';
import { assertFieldErrors, call, estimate, runOf, start, teamState, uploadReady } from './helpers/runs.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { testRegistry } from './helpers/test-tools.js';
import { createEndpoint, req, webhookTeam } from './helpers/webhooks.js';

let s: TestServer;
let team: TeamFixture;
let png: string;

const NUL = '\u0000';
const LONE_HIGH = '\ud800';
const LONE_LOW = '\udc00';
const EMOJI = '\ud83d\ude00';

/** Upload directories and file rows: what a started upload leaves behind. */
async function uploadsLeft(): Promise<{ dirs: number; rows: number }> {
  const root = s.config.storage.kind === 'local' ? path.join(s.config.storage.root, 'uploads') : '';
  const dirs = fs.existsSync(root) ? fs.readdirSync(root).length : 0;
  const { rows } = await s.database.db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM files WHERE team_id = $1::uuid', [team.teamId]);
  return { dirs, rows: rows[0]?.n ?? 0 };
}

const uploadUrl = (body: unknown) => call(s, team.key, 'POST', '/v1/files/upload-url', body);

/** Sends the Idempotency-Key over a real socket exactly as given (Node sends U+0080..U+00FF as one byte each). */
function startWithKey(tool: string, body: unknown, idempotencyKey: string): Promise<LightMyRequestResponse> {
  const url = new URL(s.url);
  const payload = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const r = http.request(
      {
        host: url.hostname,
        port: url.port,
        method: 'POST',
        path: `/v1/tools/${tool}/runs`,
        headers: { authorization: `Bearer ${team.key}`, 'content-type': 'application/json', 'idempotency-key': idempotencyKey },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          // The shape assertError and assertFieldErrors read.
          resolve({ statusCode: res.statusCode ?? 0, headers: res.headers, body: text, json: () => JSON.parse(text) } as unknown as LightMyRequestResponse);
        });
        res.on('error', reject);
      },
    );
    r.on('error', reject);
    r.end(payload);
  });
}

before(async () => {
  s = await startTestServer({ tools: testRegistry() });
  team = await makeTeam(s.database.db, { plan: 'pro', sparks: 10_000, rate: 300 });
  png = await uploadReady(s, team.key, await makePng(32, 24), 'a.png', 'image/png');
});
after(() => s.close());

describe('upload-url: file_name and mime_type', () => {
  test('NUL or a lone surrogate in file_name or mime_type: 422 invalid_character, no row and no storage upload', async () => {
    const before = await uploadsLeft();
    const valid = { file_name: 'a.png', mime_type: 'image/png', size_bytes: 100 };
    for (const [field, value] of [
      ['file_name', `a${NUL}.png`],
      ['mime_type', `image/png${NUL}`],
      ['file_name', `a${LONE_HIGH}.png`],
      ['file_name', `${LONE_LOW}a.png`],
      ['mime_type', `image/${LONE_HIGH}`],
    ] as const) {
      const res = await uploadUrl({ ...valid, [field]: value });
      const error = assertError(res, 422, 'invalid_request');
      assert.deepEqual(error.errors?.map((e) => [e.loc, e.code]), [[['body', field], 'invalid_character']], res.body);
      assert.match(error.errors?.[0]?.message ?? '', value.includes(NUL) ? /NUL character \(U\+0000\)/ : /unpaired surrogate \(U\+D[8C]00\)/);
    }
    assert.deepEqual(await uploadsLeft(), before);
  });

  test('character and schema problems are reported together, one entry per field', async () => {
    const res = await uploadUrl({ file_name: `a${NUL}`, mime_type: `x${NUL}${'y'.repeat(300)}`, [`odd${NUL}key`]: 1 });
    assertFieldErrors(res, [
      { loc: ['body', 'file_name'], code: 'invalid_character' },
      { loc: ['body', 'mime_type'], code: 'invalid_character' },
      { loc: ['body', `odd${NUL}key`], code: 'invalid_character' },
      { loc: ['body', 'size_bytes'], code: 'missing' },
    ]);
  });

  test('mime_type is printable ASCII: it becomes the stored object Content-Type header', async () => {
    const before = await uploadsLeft();
    for (const mime of ['image/p\u00f1g', 'image/png\n', `image/${EMOJI}`]) {
      assertFieldErrors(await uploadUrl({ file_name: 'a.png', mime_type: mime, size_bytes: 100 }), [{ loc: ['body', 'mime_type'], code: 'invalid_format' }]);
    }
    assert.deepEqual(await uploadsLeft(), before);
  });

  test('a well-formed surrogate pair (an emoji) and other Unicode are accepted', async () => {
    const res = await uploadUrl({ file_name: `${EMOJI} caf\u00e9 \u4e2d.png`, mime_type: 'image/png', size_bytes: 100 });
    assert.equal(res.statusCode, 201, res.body);
    const { rows } = await s.database.db.pool.query<{ file_name: string }>('SELECT file_name FROM files WHERE id = $1::uuid', [res.json<{ file_id: string }>().file_id]);
    assert.equal(rows[0]?.file_name, `${EMOJI} caf\u00e9 \u4e2d.png`);
  });

  test('when the row cannot be written after the storage upload was created, the storage upload is removed', async () => {
    const pool = s.database.db.pool;
    await pool.query(`CREATE FUNCTION refuse_file() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused by the test'; END $$`);
    await pool.query('CREATE TRIGGER refuse_file BEFORE INSERT ON files FOR EACH ROW EXECUTE FUNCTION refuse_file()');
    try {
      const before = await uploadsLeft();
      const res = await uploadUrl({ file_name: 'a.png', mime_type: 'image/png', size_bytes: 100 });
      assertError(res, 500, 'internal_error');
      assert.deepEqual(await uploadsLeft(), before);
    } finally {
      await pool.query('DROP TRIGGER refuse_file ON files');
      await pool.query('DROP FUNCTION refuse_file()');
    }
  });
});

describe('estimate and start: text slots, slot names, nested values', () => {
  /** Both estimate and start answer 422 with exactly these entries, and nothing is written. */
  async function rejects(body: unknown, expected: { loc: (string | number)[]; code: string }[]): Promise<void> {
    const before = await teamState(s.database.db.pool, team.teamId);
    assertFieldErrors(await estimate(s, team.key, 'brand_kit_extract', body), expected);
    assertFieldErrors(await start(s, team.key, 'brand_kit_extract', body), expected);
    assert.deepEqual(await teamState(s.database.db.pool, team.teamId), before);
  }

  test('a lone surrogate in a text slot: 422 on start (was 500) and on estimate alike', async () => {
    await rejects({ inputs: { url: `https://example.com/${LONE_HIGH}` } }, [{ loc: ['body', 'inputs', 'url'], code: 'invalid_character' }]);
    await rejects({ inputs: { url: `https://example.com/${LONE_LOW}x` } }, [{ loc: ['body', 'inputs', 'url'], code: 'invalid_character' }]);
    await rejects({ inputs: { url: `https://example.com/a${NUL}b` } }, [{ loc: ['body', 'inputs', 'url'], code: 'invalid_character' }]);
  });

  test('bad characters in slot names and at any depth, with the schema problems beside them', async () => {
    await rejects({ inputs: { [`u${LONE_HIGH}rl`]: 'x' } }, [{ loc: ['body', 'inputs', `u${LONE_HIGH}rl`], code: 'invalid_character' }]);
    await rejects({ inputs: { url: 'https://example.com/', deep: [{ a: [`${NUL}`] }] } }, [{ loc: ['body', 'inputs', 'deep', 0, 'a'], code: 'invalid_character' }]);
    await rejects({ inputs: { url: `https://example.com/${NUL}` }, duration_seconds: -1 }, [
      { loc: ['body', 'inputs', 'url'], code: 'invalid_character' },
      { loc: ['body', 'duration_seconds'], code: 'out_of_range' },
    ]);
  });

  test('a well-formed surrogate pair in a text slot is accepted by estimate and start', async () => {
    const body = { inputs: { url: `https://example.com/${EMOJI}` } };
    assert.equal((await estimate(s, team.key, 'brand_kit_extract', body)).statusCode, 200);
    assert.equal(runOf(await start(s, team.key, 'brand_kit_extract', body)).status, 'queued');
  });
});

describe('Idempotency-Key: printable ASCII', () => {
  test('bytes from 0x80 (read as Latin-1) or a tab: 422 on ["header","Idempotency-Key"], with the body problems too', async () => {
    const before = await teamState(s.database.db.pool, team.teamId);
    const good = { inputs: { image: [png] } };
    for (const key of ['caf\u00e9', 'a\tb', '\u00ff']) {
      const res = await startWithKey('image_upscale', good, key);
      const error = assertError(res, 422, 'invalid_request');
      assert.deepEqual(error.errors?.map((e) => [e.loc, e.code]), [[['header', 'Idempotency-Key'], 'invalid_character']], res.body);
      assert.match(error.errors?.[0]?.message ?? '', /printable ASCII/);
    }
    assertFieldErrors(await startWithKey('image_upscale', { inputs: { image: [png] }, [NUL]: 1 }, 'caf\u00e9'), [
      { loc: ['header', 'Idempotency-Key'], code: 'invalid_character' },
      { loc: ['body', NUL], code: 'invalid_character' },
    ]);
    assert.deepEqual(await teamState(s.database.db.pool, team.teamId), before);
    assert.equal(runOf(await startWithKey('image_upscale', good, 'order-42 ~!"#$%&()*+,-./:;<=>?@[]^_`{|}')).status, 'queued');
  });

  test('NUL and other controls never arrive: Node refuses the request with 400 bad_request', async () => {
    const head = `POST /v1/tools/image_upscale/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${team.key}\r\nContent-Type: application/json\r\n`;
    const x = await rawExchange(Number(new URL(s.url).port), [`${head}Idempotency-Key: a${NUL}b\r\nContent-Length: 2\r\n\r\n{}`]);
    assert.equal(x.responses.length, 1);
    assert.equal(x.responses[0]?.status, 400);
    assert.equal((JSON.parse(x.responses[0]?.body ?? '{}') as { error: { code: string } }).error.code, 'bad_request');
  });
});

describe('path parameters', () => {
  test('%00 in a path id: 422 invalid_character on ["path", name], after the key is checked', async () => {
    const cases: [string, 'GET' | 'POST', string, unknown?][] = [
      ['run_id', 'GET', '/v1/runs/%00'],
      ['run_id', 'POST', '/v1/runs/abc%00def/cancel'],
      ['tool_id', 'POST', '/v1/tools/image_upscale%00/estimate', { inputs: {} }],
      ['tool_id', 'POST', '/v1/tools/%00/runs', { inputs: {} }],
      ['file_id', 'POST', '/v1/files/%00/complete', { upload_id: 'u', parts: [{ part_number: 1, etag: 'e' }] }],
    ];
    for (const [name, method, url, body] of cases) {
      const res = await call(s, team.key, method, url, body);
      assert.deepEqual(assertError(res, 422, 'invalid_request').errors?.map((e) => [e.loc, e.code]), [[['path', name], 'invalid_character']], `${url}: ${res.body}`);
      assertError(await call(s, null, method, url, body), 401, 'api_key_required');
    }
    const outputs = await call(s, team.key, 'GET', '/v1/runs/00000000-0000-4000-8000-000000000000/outputs/%00/url');
    assertFieldErrors(outputs, [{ loc: ['path', 'asset_id'], code: 'invalid_character' }]);
  });

  test('an encoded lone surrogate is not UTF-8: 422 malformed_path', async () => {
    for (const url of ['/v1/runs/%ED%A0%80', '/v1/tools/%ED%B0%80/estimate']) {
      const res = await call(s, team.key, url.endsWith('estimate') ? 'POST' : 'GET', url, url.endsWith('estimate') ? {} : undefined);
      assertFieldErrors(res, [{ loc: ['path'], code: 'malformed_path' }]);
    }
  });
});

describe('webhook endpoint URL', () => {
  test('a raw NUL or lone surrogate is refused as invalid_character; %00 is ordinary URL text and accepted', async () => {
    const hooks = await webhookTeam(s.database.db);
    for (const url of [`https://93.184.215.14/a${NUL}b`, `https://93.184.215.14/${LONE_HIGH}`]) {
      assertFieldErrors(await req(s, hooks.key, 'POST', '/v1/webhook-endpoints', { url }), [{ loc: ['body', 'url'], code: 'invalid_character' }]);
    }
    const created = await createEndpoint(s, hooks.key, 'https://93.184.215.14/hook%00?x=%00');
    assert.equal(created.url, 'https://93.184.215.14/hook%00?x=%00');
  });
});
