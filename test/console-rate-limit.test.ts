// The console API's per-member rate limit (issue 25 item 6), over real sockets: every session
// request takes from the member's bucket in the shared rate_buckets table; webhook test pings and
// playground uploads also take from tighter lanes. Over a limit: 429 rate_limited with
// Retry-After in the spec's envelope. Other members, and the member's other requests, go on.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CONSOLE_RATES } from '../src/console/rate-limit.js';
import { signedInMember } from './helpers/console.js';
import { consoleSettingsSuite } from './helpers/console-settings.js';
import { assertError } from './helpers/error-envelope.js';
import { closeReceivers, Receiver } from './helpers/receiver.js';

let receiver: Receiver;

const { db, ownerOf, url } = consoleSettingsSuite({
  async setUp() {
    receiver = await Receiver.start();
  },
  tearDown: closeReceivers,
});

const retryAfterOf = (headers: Record<string, unknown>) => Number(headers['retry-after']);

describe('console rate limit', () => {
  test('a burst of webhook test pings from one session is cut at the outbound lane; another admin and browsing go on', async () => {
    const o = await ownerOf();
    const ep = (await o.client.call('POST', '/console/api/webhooks', { url: receiver.url('/burst') })).json<{ id: string }>();
    const before = receiver.requests.length;
    // Sent at once, as the review did (150 in 2 s): only the lane's worth reach the endpoint.
    const answers = await Promise.all(Array.from({ length: 30 }, () => o.client.call('POST', `/console/api/webhooks/${ep.id}/test`)));
    const statuses = answers.map((a) => a.statusCode);
    assert.equal(statuses.filter((c) => c === 200).length, CONSOLE_RATES.outbound, statuses.join(','));
    assert.equal(statuses.filter((c) => c === 429).length, 30 - CONSOLE_RATES.outbound, statuses.join(','));
    assert.equal(receiver.requests.length - before, CONSOLE_RATES.outbound, 'one outbound connection per ping let through');
    const refused = answers.find((a) => a.statusCode === 429);
    assert.ok(refused);
    const error = assertError(refused, 429, 'rate_limited');
    assert.deepEqual(error.details, { limit_per_minute: CONSOLE_RATES.outbound, reason: 'webhook_tests' });
    const wait = retryAfterOf(refused.headers);
    assert.ok(Number.isInteger(wait) && wait >= 1 && wait <= 60 / CONSOLE_RATES.outbound, `Retry-After ${String(refused.headers['retry-after'])}`);

    // The same session browses on: the pages' reads take from the general lane only.
    for (const path of ['/console/api/session', '/console/api/webhooks', `/console/api/webhooks/${ep.id}/deliveries`, '/console/api/keys', '/console/api/members']) {
      const res = await o.client.call('GET', path);
      assert.equal(res.statusCode, 200, `${path}: ${res.body}`);
    }
    // Another admin of the same team has a bucket of their own.
    const admin = await signedInMember(url(), db(), o.session.team.id, 'admin');
    const tested = await admin.client.call('POST', `/console/api/webhooks/${ep.id}/test`);
    assert.equal(tested.statusCode, 200, tested.body);
  });

  test('playground uploads are cut at the upload lane; another member of the team is not', async () => {
    const o = await ownerOf();
    const start = (c: typeof o.client) => c.call('POST', '/console/api/files/upload-url', { file_name: 'a.png', mime_type: 'image/png', size_bytes: 10 });
    for (let i = 0; i < CONSOLE_RATES.upload; i++) {
      const res = await start(o.client);
      assert.equal(res.statusCode, 201, `upload ${i + 1}: ${res.body}`);
    }
    const refused = await start(o.client);
    const error = assertError(refused, 429, 'rate_limited');
    assert.deepEqual(error.details, { limit_per_minute: CONSOLE_RATES.upload, reason: 'uploads' });
    assert.ok(retryAfterOf(refused.headers) >= 1);
    // Completing an upload counts as one too: refused before its body is even read.
    assertError(await o.client.call('POST', '/console/api/files/00000000-0000-4000-8000-000000000000/complete', { upload_id: 'x', parts: [] }), 429, 'rate_limited');
    const member = await signedInMember(url(), db(), o.session.team.id, 'member');
    assert.equal((await start(member.client)).statusCode, 201);
    assert.equal((await o.client.call('GET', '/console/api/tools')).statusCode, 200);
  });

  test('every session request takes from the member bucket: an empty one answers 429, other members and public routes go on', async () => {
    const o = await ownerOf();
    const other = await signedInMember(url(), db(), o.session.team.id, 'member');
    assert.equal((await o.client.call('GET', '/console/api/session')).statusCode, 200);
    // The bucket row is in the table the keys' buckets are in; empty it, with no refill for a day.
    const { rowCount } = await db().pool.query(
      "UPDATE rate_buckets SET tokens = 0.5, refilled_at = clock_timestamp() + interval '1 day' WHERE member_id = $1::uuid AND lane = 'console'",
      [o.memberId],
    );
    assert.equal(rowCount, 1);
    for (const [method, path] of [
      ['GET', '/console/api/session'],
      ['GET', '/console/api/webhooks'],
      ['POST', '/console/api/keys'],
    ] as const) {
      const res = await o.client.call(method, path, method === 'POST' ? { name: 'k' } : undefined);
      const error = assertError(res, 429, 'rate_limited');
      assert.deepEqual(error.details, { limit_per_minute: CONSOLE_RATES.console, reason: 'console' });
      assert.ok(retryAfterOf(res.headers) >= 1, path);
    }
    assert.equal((await other.client.call('GET', '/console/api/session')).statusCode, 200);
    // Public routes (the document, sign-in, invite accept) are not behind the member's bucket.
    assert.equal((await o.client.call('GET', '/console/api/openapi.json')).statusCode, 200);
  });

  test('normal browsing is not limited: a minute of polling pages and clicking stays far under the limit', async () => {
    const o = await ownerOf();
    // Two tabs polling every 2 s for a minute, plus page loads: about 100 requests.
    for (let i = 0; i < 100; i++) {
      const res = await o.client.call('GET', i % 2 ? '/console/api/runs' : '/console/api/session');
      assert.equal(res.statusCode, 200, res.body);
    }
    const { rows } = await db().pool.query<{ tokens: number }>("SELECT tokens FROM rate_buckets WHERE member_id = $1::uuid AND lane = 'console'", [o.memberId]);
    assert.ok((rows[0]?.tokens ?? 0) >= CONSOLE_RATES.console - 101, String(rows[0]?.tokens));
  });

  test('the console OpenAPI document lists 429 for routes behind a session, not for public ones', async () => {
    const o = await ownerOf();
    const doc = (await o.client.call('GET', '/console/api/openapi.json')).json<{ paths: Record<string, Record<string, { responses: Record<string, unknown> }>> }>();
    assert.ok(doc.paths['/console/api/webhooks/{id}/test']?.post?.responses['429']);
    assert.ok(doc.paths['/console/api/keys']?.get?.responses['429']);
    assert.equal(doc.paths['/console/api/openapi.json']?.get?.responses['429'], undefined);
  });
});
