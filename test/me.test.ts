import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createTestApp, type TestApp } from './helpers/app.js';
import { bearer, makeTeam, type TeamFixture } from './helpers/fixtures.js';

let t: TestApp;
let team: TeamFixture;

before(async () => {
  t = await createTestApp();
  team = await makeTeam(t.database.db, { sparks: 250, scopes: ['read', 'run', 'webhooks'], rate: 120 });
});
after(() => t.close());

describe('GET /v1/me', () => {
  test('returns the team, the key and the balance', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/v1/me', headers: bearer(team.key) });
    assert.equal(res.statusCode, 200);
    const body = res.json();
    assert.equal(body.object, 'me');
    assert.equal(body.team.id, team.teamId);
    assert.equal(body.team.plan, 'pro');
    assert.equal(body.api_key.id, team.keyId);
    assert.equal(body.api_key.prefix, team.key.slice('svc_test_'.length, 'svc_test_'.length + 8));
    assert.deepEqual(body.api_key.scopes, ['read', 'run', 'webhooks']);
    assert.equal(body.api_key.rate_limit_per_minute, 120);
    assert.equal(body.sparks_available, 250);
    assert.equal(res.headers['x-request-id'], res.headers['x-request-id']?.toString());
    assert.match(String(res.headers['x-request-id']), /^[0-9a-f-]{36}$/);
    assert.equal(res.headers['ratelimit-limit'], '120');
  });
});
