// Small pure parts of the SDK and CLI: MIME guessing from bytes and names, the CLI's --input and
// --file parsing, and the backoff and retry rules.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';
import { guessMimeType, ToolrunError } from '@toolrun/sdk';
import { buildInputs, parseFiles, parseValue, UsageError } from '../packages/cli/src/inputs.ts';
import { isRetryable, retryDelayMs } from '../packages/sdk/src/http.ts';
import { parseRetryAfter } from '../packages/sdk/src/errors.ts';
import { makeMp4, makePng } from './helpers/media.js';
import sharp from 'sharp';

describe('MIME types', () => {
  test('from the bytes first, whatever the name says', async () => {
    const png = await makePng(8, 8);
    const jpeg = await sharp(png).jpeg().toBuffer();
    const webp = await sharp(png).webp().toBuffer();
    const gif = await sharp(png).gif().toBuffer();
    const mp4 = await makeMp4({ seconds: 0.2, width: 32, height: 32, audio: false });
    assert.equal(guessMimeType('photo.jpg', png), 'image/png');
    assert.equal(guessMimeType(undefined, jpeg), 'image/jpeg');
    assert.equal(guessMimeType(undefined, webp), 'image/webp');
    assert.equal(guessMimeType(undefined, gif), 'image/gif');
    assert.equal(guessMimeType('clip.mov', mp4.subarray(0, 64)), 'video/mp4');
    const riffWave = Buffer.concat([Buffer.from('RIFF'), Buffer.alloc(4), Buffer.from('WAVEfmt ')]);
    assert.equal(guessMimeType(undefined, riffWave), 'audio/wav');
    assert.equal(guessMimeType(undefined, Buffer.from([0x1a, 0x45, 0xdf, 0xa3, 0, 0, 0, 0, 0x42, 0x82, 0x84, ...Buffer.from('webm')])), 'video/webm');
  });

  test('then from the extension, else application/octet-stream', () => {
    const text = Buffer.from('hello there');
    assert.equal(guessMimeType('Clip.MP4', text), 'video/mp4');
    assert.equal(guessMimeType('/a/b/song.flac', text), 'audio/flac');
    assert.equal(guessMimeType('notes', text), 'application/octet-stream');
    assert.equal(guessMimeType(undefined, new Uint8Array()), 'application/octet-stream');
  });
});

describe('CLI inputs', () => {
  test('--input values: JSON when it parses, else the text', () => {
    assert.equal(parseValue('2'), 2);
    assert.equal(parseValue('-0.5'), -0.5);
    assert.equal(parseValue('true'), true);
    assert.equal(parseValue('false'), false);
    assert.equal(parseValue('null'), null);
    assert.deepEqual(parseValue('["a",1]'), ['a', 1]);
    assert.deepEqual(parseValue('{"k":"v"}'), { k: 'v' });
    assert.equal(parseValue('"42"'), '42');
    assert.equal(parseValue('warm_film'), 'warm_film');
    assert.equal(parseValue('007'), '007', 'not a JSON number: kept as text');
    assert.equal(parseValue('https://example.com/a=b'), 'https://example.com/a=b');
    assert.equal(parseValue(''), '');
  });

  test('inputs: values by name, repeated names and repeated file slots become lists', () => {
    const inputs = buildInputs(
      ['preset=warm_film', 'grain=12', 'url=https://x.test/?a=b', 'tag=a', 'tag=b'],
      [
        { slot: 'clips', fileId: 'f1' },
        { slot: 'image', fileId: 'f0' },
        { slot: 'clips', fileId: 'f2' },
      ],
    );
    assert.deepEqual(inputs, { preset: 'warm_film', grain: 12, url: 'https://x.test/?a=b', tag: ['a', 'b'], clips: ['f1', 'f2'], image: ['f0'] });
    assert.throws(() => buildInputs(['noequals'], []), UsageError);
    assert.throws(() => buildInputs(['=v'], []), UsageError);
    assert.throws(() => buildInputs(['image=x'], [{ slot: 'image', fileId: 'f' }]), /both with --input and with --file/);
  });

  test('--file checks the path before anything is sent', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cli-files-'));
    fs.writeFileSync(path.join(dir, 'a.png'), 'x');
    fs.writeFileSync(path.join(dir, 'empty.png'), '');
    assert.deepEqual(parseFiles([`image=${path.join(dir, 'a.png')}`]), [{ slot: 'image', path: path.join(dir, 'a.png') }]);
    assert.throws(() => parseFiles([`image=${path.join(dir, 'missing.png')}`]), /no such file/);
    assert.throws(() => parseFiles([`image=${path.join(dir, 'empty.png')}`]), /empty/);
    assert.throws(() => parseFiles([`image=${dir}`]), /not a regular file/);
    assert.throws(() => parseFiles(['image=']), /needs a path/);
    fs.rmSync(dir, { recursive: true, force: true });
  });
});

describe('retry rules', () => {
  const err = (status: number, retryAfterSeconds: number | null = null, cause?: unknown) =>
    new ToolrunError({ status, code: 'x', message: 'x', retryAfterSeconds, ...(cause ? { cause } : {}) });

  test('idempotent calls retry 408, 429, 5xx and no answer; others only 429 and a refused connection', () => {
    for (const status of [0, 408, 429, 500, 502, 503, 504]) assert.ok(isRetryable('idempotent', err(status)), String(status));
    for (const status of [400, 401, 403, 404, 409, 422]) assert.ok(!isRetryable('idempotent', err(status)), String(status));
    assert.ok(isRetryable('refused-only', err(429)));
    for (const status of [0, 500, 503]) assert.ok(!isRetryable('refused-only', err(status)), String(status));
    const refused = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    assert.ok(isRetryable('refused-only', err(0, null, new TypeError('fetch failed', { cause: refused }))));
  });

  test('delays: Retry-After when given (capped), else exponential with jitter up to 8 s', () => {
    const opts = { backoffBaseMs: 500, maxRetryAfterSeconds: 60 };
    assert.equal(retryDelayMs(err(429, 2), 0, opts), 2000);
    assert.equal(retryDelayMs(err(429, 61), 0, opts), null);
    for (let i = 0; i < 20; i++) {
      const d0 = retryDelayMs(err(500), 0, opts) ?? -1;
      const d3 = retryDelayMs(err(500), 3, opts) ?? -1;
      const d9 = retryDelayMs(err(500), 9, opts) ?? -1;
      assert.ok(d0 >= 250 && d0 <= 500, String(d0));
      assert.ok(d3 >= 2000 && d3 <= 4000, String(d3));
      assert.ok(d9 >= 4000 && d9 <= 8000, String(d9));
    }
    assert.equal(parseRetryAfter('3'), 3);
    assert.equal(parseRetryAfter(new Date(Date.now() + 5000).toUTCString(), Date.now()) !== null, true);
    assert.equal(parseRetryAfter('soon'), null);
    assert.equal(parseRetryAfter(null), null);
  });
});
