import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, test } from 'node:test';
import { createInvite } from '../src/console/invites.js';
import { addMember, createTeam, removeMember } from '../src/teams/repository.js';
import { ConsoleClient, inviteAndSignIn, setCookieOf, signedInMember, STRONG_PASSWORD, tokenOf } from './helpers/console.js';
import { consoleSuite } from './helpers/console-suite.js';
import { assertError } from './helpers/error-envelope.js';
import { makeTeam } from './helpers/fixtures.js';
import { startTestServer } from './helpers/server.js';
import { socketRequest } from './helpers/socket-request.js';

const { database, db, url } = consoleSuite();
const sha256 = (t: string) => createHash('sha256').update(t).digest();

async function owner() {
  const team = await makeTeam(db());
  return inviteAndSignIn(url(), db(), team.memberId);
}

describe('invite links', () => {
  test('accepting sets the password, signs in with a cookie that is HttpOnly, SameSite=Lax, Path=/console', async () => {
    const team = await makeTeam(db());
    const invite = await createInvite(db(), url(), team.memberId);
    assert.match(invite.invite_url, new RegExp(`^${url()}/console/invite#token=[A-Za-z0-9_-]{43}$`));
    const hours = (Date.parse(invite.expires_at) - Date.now()) / 3_600_000;
    assert.ok(hours > 71.9 && hours <= 72, `expires in ${hours} h`);
    const client = new ConsoleClient(url());
    const res = await client.call('POST', '/console/api/invites/accept', { token: tokenOf(invite.invite_url), password: STRONG_PASSWORD });
    const session = client.keep(res);
    assert.equal(session.member.id, team.memberId);
    assert.equal(session.member.role, 'owner');
    assert.equal(session.team.id, team.teamId);
    assert.equal(res.headers['cache-control'], 'no-store');
    const cookie = setCookieOf(res);
    assert.ok(cookie && cookie.value.length >= 43);
    // Max-Age: the 7-day absolute lifetime left (the statement that read it ran a moment later).
    assert.match(cookie.attributes, /^Path=\/console; Max-Age=(60479\d|604800); HttpOnly; SameSite=Lax$/);
    // Only hashes are kept: of the session token, of the password (scrypt with its parameters).
    const { rows } = await db().pool.query<{ token_hash: Buffer }>('SELECT token_hash FROM console_sessions WHERE member_id = $1::uuid', [team.memberId]);
    assert.deepEqual(rows.map((r) => r.token_hash), [sha256(cookie.value)]);
    const pw = await db().pool.query<{ hash: string }>('SELECT hash FROM member_passwords WHERE member_id = $1::uuid', [team.memberId]);
    assert.match(pw.rows[0]?.hash ?? '', /^scrypt:32768:8:1:[A-Za-z0-9_-]{22}:[A-Za-z0-9_-]{43}$/);
    assert.ok(!pw.rows[0]?.hash.includes(STRONG_PASSWORD));
    // The session works, and the password signs in afterwards.
    assert.equal(client.keep(await client.call('GET', '/console/api/session')).csrf_token, session.csrf_token);
    await new ConsoleClient(url()).signIn(session.member.email);
  });

  test('Secure is set when PUBLIC_BASE_URL is https', async () => {
    const https = await startTestServer({ database: database(), env: { PUBLIC_BASE_URL: 'https://console.example.test' } });
    try {
      const team = await makeTeam(db());
      const invite = await createInvite(db(), 'https://console.example.test', team.memberId);
      const client = new ConsoleClient(https.url);
      const res = await client.call('POST', '/console/api/invites/accept', { token: tokenOf(invite.invite_url), password: STRONG_PASSWORD });
      assert.equal(res.statusCode, 200, res.body);
      assert.match(setCookieOf(res)?.attributes ?? '', /^Path=\/console; Max-Age=(60479\d|604800); HttpOnly; SameSite=Lax; Secure$/);
    } finally {
      await https.close();
    }
  });

  test('a password under 12 characters is refused at body.password; the link stays usable', async () => {
    const team = await makeTeam(db());
    const invite = await createInvite(db(), url(), team.memberId);
    const client = new ConsoleClient(url());
    const e = assertError(await client.call('POST', '/console/api/invites/accept', { token: tokenOf(invite.invite_url), password: 'short pass1' }), 422, 'invalid_request');
    assert.deepEqual(e.errors?.map((x) => x.loc), [['body', 'password']]);
    await client.accept(tokenOf(invite.invite_url));
  });

  test('a later link replaces the earlier; a used, expired or unknown link is invite_invalid', async () => {
    const team = await makeTeam(db());
    const first = await createInvite(db(), url(), team.memberId);
    const second = await createInvite(db(), url(), team.memberId);
    const client = new ConsoleClient(url());
    const accept = (link: string) => client.call('POST', '/console/api/invites/accept', { token: tokenOf(link), password: STRONG_PASSWORD });
    assertError(await accept(first.invite_url), 404, 'invite_invalid');
    assert.equal((await accept(second.invite_url)).statusCode, 200);
    assertError(await accept(second.invite_url), 404, 'invite_invalid');
    const third = await createInvite(db(), url(), team.memberId);
    await db().pool.query("UPDATE member_invites SET expires_at = now() - interval '1 second' WHERE member_id = $1::uuid", [team.memberId]);
    assertError(await accept(third.invite_url), 404, 'invite_invalid');
    assertError(await client.call('POST', '/console/api/invites/accept', { token: 'x'.repeat(43), password: STRONG_PASSWORD }), 404, 'invite_invalid');
  });

  test("a new password from a link ends the member's other sessions", async () => {
    const m = await owner();
    const invite = await createInvite(db(), url(), m.memberId);
    await new ConsoleClient(url()).accept(tokenOf(invite.invite_url), 'a brand new passphrase');
    assertError(await m.client.call('GET', '/console/api/session'), 401, 'session_required');
    assertError(await new ConsoleClient(url()).call('POST', '/console/api/session', { email: m.email, password: STRONG_PASSWORD }), 401, 'invalid_credentials');
  });

  test('a removed member\'s link no longer works', async () => {
    const team = await makeTeam(db());
    const admin = await addMember(db(), { teamId: team.teamId, email: 'gone-admin@example.test', role: 'admin' });
    const invite = await createInvite(db(), url(), admin.id);
    await removeMember(db(), admin.id);
    assertError(await new ConsoleClient(url()).call('POST', '/console/api/invites/accept', { token: tokenOf(invite.invite_url), password: STRONG_PASSWORD }), 404, 'invite_invalid');
  });
});

describe('sign-in', () => {
  test('email (any case) and password sign in; a wrong password and an unknown email get the same answer', async () => {
    const m = await owner();
    const session = await new ConsoleClient(url()).signIn(m.email.toUpperCase());
    assert.equal(session.member.id, m.memberId);
    const wrong = assertError(await new ConsoleClient(url()).call('POST', '/console/api/session', { email: m.email, password: 'not the password at all' }), 401, 'invalid_credentials');
    const unknown = assertError(await new ConsoleClient(url()).call('POST', '/console/api/session', { email: 'nobody@example.test', password: 'not the password at all' }), 401, 'invalid_credentials');
    assert.deepEqual({ ...wrong, request_id: null }, { ...unknown, request_id: null });
    // A member without a password yet is the same as an unknown email.
    const team = await makeTeam(db());
    const fresh = await db().pool.query<{ email: string }>('SELECT email FROM members WHERE id = $1::uuid', [team.memberId]);
    const none = assertError(await new ConsoleClient(url()).call('POST', '/console/api/session', { email: fresh.rows[0]?.email, password: 'not the password at all' }), 401, 'invalid_credentials');
    assert.deepEqual({ ...none, request_id: null }, { ...unknown, request_id: null });
  });

  test('an email in two teams: the password picks the member', async () => {
    const email = 'two-teams@example.test';
    const a = await createTeam(db(), { name: 'Team A', plan: 'pro' });
    const b = await createTeam(db(), { name: 'Team B', plan: 'plus' });
    const ma = await addMember(db(), { teamId: a.id, email, role: 'owner' });
    const mb = await addMember(db(), { teamId: b.id, email, role: 'member' });
    await new ConsoleClient(url()).accept(tokenOf((await createInvite(db(), url(), ma.id)).invite_url), 'password of the first team');
    await new ConsoleClient(url()).accept(tokenOf((await createInvite(db(), url(), mb.id)).invite_url), 'password of the second team');
    assert.equal((await new ConsoleClient(url()).signIn(email, 'password of the first team')).team.id, a.id);
    const inB = await new ConsoleClient(url()).signIn(email, 'password of the second team');
    assert.deepEqual([inB.team.id, inB.member.id, inB.member.role], [b.id, mb.id, 'member']);
  });

  test('missing fields are named', async () => {
    const e = assertError(await new ConsoleClient(url()).call('POST', '/console/api/session', { email: 'a@example.test' }), 422, 'invalid_request');
    assert.deepEqual(e.errors?.map((x) => x.loc), [['body', 'password']]);
  });

  // Throttling: test/console-signin-throttle.test.ts.
});

describe('sessions', () => {
  test('GET /console/api/session without a cookie, or with an unknown one, is 401 session_required', async () => {
    assertError(await new ConsoleClient(url()).call('GET', '/console/api/session'), 401, 'session_required');
    const client = new ConsoleClient(url());
    client.cookie = 'x'.repeat(43);
    const res = await client.call('GET', '/console/api/session');
    assertError(res, 401, 'session_required');
    assert.equal(client.cookie, null, 'the dead cookie is cleared');
  });

  test('a session ends after its absolute lifetime and after 12 idle hours', async () => {
    const a = await owner();
    await db().pool.query("UPDATE console_sessions SET expires_at = now() - interval '1 second' WHERE member_id = $1::uuid", [a.memberId]);
    assertError(await a.client.call('GET', '/console/api/session'), 401, 'session_required');
    const b = await owner();
    await db().pool.query("UPDATE console_sessions SET last_seen_at = now() - interval '12 hours 1 second' WHERE member_id = $1::uuid", [b.memberId]);
    assertError(await b.client.call('GET', '/console/api/overview'), 401, 'session_required');
  });

  test('use renews the idle lifetime at most once a minute', async () => {
    const m = await owner();
    const seen = async () =>
      (await db().pool.query<{ t: Date }>('SELECT last_seen_at AS t FROM console_sessions WHERE member_id = $1::uuid', [m.memberId])).rows[0]?.t.getTime();
    await db().pool.query("UPDATE console_sessions SET last_seen_at = now() - interval '11 hours' WHERE member_id = $1::uuid", [m.memberId]);
    const before = await seen();
    assert.equal((await m.client.call('GET', '/console/api/session')).statusCode, 200);
    const renewed = await seen();
    assert.ok(renewed !== undefined && before !== undefined && renewed - before > 10 * 3_600_000);
    assert.equal((await m.client.call('GET', '/console/api/session')).statusCode, 200);
    assert.equal(await seen(), renewed, 'not written again within the minute');
  });

  test('sign-out ends the session and clears the cookie', async () => {
    const m = await owner();
    const token = m.client.cookie;
    const res = await m.client.call('DELETE', '/console/api/session');
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json(), { signed_out: true });
    assert.equal(setCookieOf(res)?.value, '');
    assert.match(setCookieOf(res)?.attributes ?? '', /Max-Age=0/);
    const again = new ConsoleClient(url());
    again.cookie = token;
    assertError(await again.call('GET', '/console/api/session'), 401, 'session_required');
  });

  test('removing a member ends their sessions at once (console and CLI alike)', async () => {
    const o = await owner();
    const m = await signedInMember(url(), db(), o.session.team.id, 'member');
    const res = await o.client.call('DELETE', `/console/api/members/${m.memberId}`);
    assert.equal(res.statusCode, 200, res.body);
    assertError(await m.client.call('GET', '/console/api/session'), 401, 'session_required');
    const n = await signedInMember(url(), db(), o.session.team.id, 'admin');
    await removeMember(db(), n.memberId);
    assertError(await n.client.call('GET', '/console/api/keys'), 401, 'session_required');
    const { rows } = await db().pool.query('SELECT 1 FROM console_sessions WHERE member_id = ANY ($1::uuid[])', [[m.memberId, n.memberId]]);
    assert.equal(rows.length, 0);
  });

  test('a role change applies to the open session at once', async () => {
    const o = await owner();
    const m = await signedInMember(url(), db(), o.session.team.id, 'admin');
    assert.equal((await o.client.call('PATCH', `/console/api/members/${m.memberId}`, { role: 'member' })).statusCode, 200);
    assert.equal((await m.client.call('GET', '/console/api/session')).json<{ member: { role: string } }>().member.role, 'member');
    assertError(await m.client.call('POST', '/console/api/keys', { name: 'nope' }), 403, 'insufficient_role');
  });
});

describe('CSRF', () => {
  test('a state-changing request without the token, or with a wrong one, is 403 csrf_failed; with it, it passes', async () => {
    const m = await owner();
    const e = assertError(await m.client.call('POST', '/console/api/keys', { name: 'k' }, { 'x-csrf-token': null }), 403, 'csrf_failed');
    assert.equal(e.details?.reason, 'token');
    assertError(await m.client.call('POST', '/console/api/keys', { name: 'k' }, { 'x-csrf-token': 'x'.repeat(43) }), 403, 'csrf_failed');
    assertError(await m.client.call('DELETE', '/console/api/session', undefined, { 'x-csrf-token': null }), 403, 'csrf_failed');
    // Another session's token is wrong too.
    const other = await owner();
    assertError(await m.client.call('POST', '/console/api/keys', { name: 'k' }, { 'x-csrf-token': other.session.csrf_token }), 403, 'csrf_failed');
    const { rows } = await db().pool.query("SELECT 1 FROM api_keys WHERE name = 'k' AND member_id = $1::uuid", [m.memberId]);
    assert.equal(rows.length, 0, 'nothing was created');
    assert.equal((await m.client.call('POST', '/console/api/keys', { name: 'k' })).statusCode, 201);
  });

  test("an Origin other than PUBLIC_BASE_URL's is refused, sign-in and invite accept included", async () => {
    const m = await owner();
    const evil = { origin: 'https://evil.example' };
    const e = assertError(await m.client.call('POST', '/console/api/keys', { name: 'k2' }, evil), 403, 'csrf_failed');
    assert.equal(e.details?.reason, 'origin');
    assertError(await m.client.call('POST', '/console/api/session', { email: m.email, password: STRONG_PASSWORD }, evil), 403, 'csrf_failed');
    assertError(await m.client.call('POST', '/console/api/invites/accept', { token: 'x'.repeat(43), password: STRONG_PASSWORD }, evil), 403, 'csrf_failed');
    assertError(await m.client.call('POST', '/console/api/keys', { name: 'k2' }, { origin: 'null' }), 403, 'csrf_failed');
    // The service's own origin passes.
    assert.equal((await m.client.call('POST', '/console/api/keys', { name: 'k2' }, { origin: url() })).statusCode, 201);
    const same = new ConsoleClient(url(), { origin: url() });
    await same.signIn(m.email);
  });

  test('without a session, a state-changing request is 401 session_required', async () => {
    assertError(await new ConsoleClient(url()).call('POST', '/console/api/keys', { name: 'k' }), 401, 'session_required');
  });
});

describe('a console session never authenticates /v1', () => {
  test('the session token as Bearer, or the cookie, on /v1/me is 401 api_key_required', async () => {
    const m = await owner();
    const token = m.client.cookie ?? '';
    assertError(await socketRequest(url(), '/v1/me', { headers: { authorization: `Bearer ${token}` } }), 401, 'api_key_required');
    assertError(await socketRequest(url(), '/v1/me', { headers: { cookie: `toolrun_session=${token}` } }), 401, 'api_key_required');
  });
});
