// Invite links bound to their maker and to the member's role (issue 25 items 1 and 2), over real
// sockets: a role change of the member, or the removal or demotion of the maker, voids a link; only
// owners make a link that resets an existing password; the pending links of a team are listed and
// revoked; a member sees the reset links made for them.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import { createInvite } from '../src/console/invites.js';
import { ConsoleClient, signedInMember, STRONG_PASSWORD, tokenOf, type SignedInMember } from './helpers/console.js';
import { consoleSuite } from './helpers/console-suite.js';
import { assertError } from './helpers/error-envelope.js';
import { makeTeam } from './helpers/fixtures.js';
import { startTestServer } from './helpers/server.js';

const { database, db, url } = consoleSuite();

interface Added {
  member: { id: string; email: string; role: string };
  invite_url: string;
  expires_at: string;
}

interface PendingLink {
  id: string;
  member: { id: string; email: string; role: string };
  created_by: { id: string; email: string } | null;
  created_at: string;
  expires_at: string;
  resets_password: boolean;
}

interface ResetNotice {
  created_by: { id: string; email: string } | null;
  created_at: string;
  expires_at: string;
  used_at: string | null;
  revoked_at: string | null;
}

/** A team with a signed-in owner and a signed-in admin. */
async function ownerAndAdmin(): Promise<{ owner: SignedInMember; admin: SignedInMember; teamId: string }> {
  const team = await makeTeam(db());
  const owner = await signedInMember(url(), db(), team.teamId, 'owner');
  const admin = await signedInMember(url(), db(), team.teamId, 'admin');
  return { owner, admin, teamId: team.teamId };
}

async function add(by: SignedInMember, role = 'member'): Promise<Added> {
  const res = await by.client.call('POST', '/console/api/members', { email: `new-${randomUUID()}@example.test`, role });
  assert.equal(res.statusCode, 201, res.body);
  return res.json<Added>();
}

const accept = (link: string, password = 'the password someone chose') =>
  new ConsoleClient(url()).call('POST', '/console/api/invites/accept', { token: tokenOf(link), password });

describe('item 1: a link is bound to the role the member had when it was made', () => {
  test("an admin's link for a member stops working once an owner promotes the member to owner", async () => {
    const { owner, admin } = await ownerAndAdmin();
    const added = await add(admin);
    const promoted = await owner.client.call('PATCH', `/console/api/members/${added.member.id}`, { role: 'owner' });
    assert.equal(promoted.statusCode, 200, promoted.body);
    assertError(await accept(added.invite_url), 404, 'invite_invalid');
    const { rows } = await db().pool.query('SELECT 1 FROM member_passwords WHERE member_id = $1::uuid', [added.member.id]);
    assert.equal(rows.length, 0, 'no password was set');
  });

  test('any role change voids the member\'s links, even one back to the same role', async () => {
    const { owner } = await ownerAndAdmin();
    const added = await add(owner);
    assert.equal((await owner.client.call('PATCH', `/console/api/members/${added.member.id}`, { role: 'admin' })).statusCode, 200);
    assert.equal((await owner.client.call('PATCH', `/console/api/members/${added.member.id}`, { role: 'member' })).statusCode, 200);
    assertError(await accept(added.invite_url), 404, 'invite_invalid');
  });

  test('variant: the member has a password; an admin cannot mint a link that resets it; an owner\'s reset link dies with a promotion', async () => {
    const { owner, admin, teamId } = await ownerAndAdmin();
    const m = await signedInMember(url(), db(), teamId, 'member');
    const refused = assertError(await admin.client.call('POST', `/console/api/members/${m.memberId}/invite`), 403, 'insufficient_role');
    assert.equal(refused.details?.required_role, 'owner');
    const reset = await owner.client.call('POST', `/console/api/members/${m.memberId}/invite`);
    assert.equal(reset.statusCode, 201, reset.body);
    assert.equal((await owner.client.call('PATCH', `/console/api/members/${m.memberId}`, { role: 'owner' })).statusCode, 200);
    assertError(await accept(reset.json<{ invite_url: string }>().invite_url), 404, 'invite_invalid');
    // The member's own password still signs in: nothing was reset.
    await new ConsoleClient(url()).signIn(m.email);
  });

  test('a link an admin made before the member had a password does not set one over it', async () => {
    const { owner, admin } = await ownerAndAdmin();
    const added = await add(admin);
    // The member sets a password through a later owner's link, then the admin's row is forced
    // back to live (as if two links had raced): accepting must still refuse it.
    const ownerLink = await owner.client.call('POST', `/console/api/members/${added.member.id}/invite`);
    assert.equal(ownerLink.statusCode, 201, ownerLink.body);
    await new ConsoleClient(url()).accept(tokenOf(ownerLink.json<{ invite_url: string }>().invite_url));
    await db().pool.query('UPDATE member_invites SET revoked_at = NULL WHERE created_by = $1::uuid', [admin.memberId]);
    assertError(await accept(added.invite_url), 404, 'invite_invalid');
    await new ConsoleClient(url()).signIn(added.member.email);
  });
});

describe('item 2: links do not outlive their maker, and resets are seen', () => {
  test("removing the maker voids the links they made; so does demoting them", async () => {
    const { owner, admin, teamId } = await ownerAndAdmin();
    const byRemoved = await add(admin);
    assert.equal((await owner.client.call('DELETE', `/console/api/members/${admin.memberId}`)).statusCode, 200);
    assertError(await accept(byRemoved.invite_url), 404, 'invite_invalid');

    const admin2 = await signedInMember(url(), db(), teamId, 'admin');
    const byDemoted = await add(admin2);
    assert.equal((await owner.client.call('PATCH', `/console/api/members/${admin2.memberId}`, { role: 'member' })).statusCode, 200);
    assertError(await accept(byDemoted.invite_url), 404, 'invite_invalid');
  });

  test('a maker removed by hand in SQL (no voiding) still cannot have their link accepted', async () => {
    const { admin } = await ownerAndAdmin();
    const added = await add(admin);
    await db().pool.query('UPDATE members SET removed_at = now() WHERE id = $1::uuid', [admin.memberId]);
    assertError(await accept(added.invite_url), 404, 'invite_invalid');
  });

  test('pending links: owners and admins list them (for whom, made by, expiry); members may not', async () => {
    const { owner, admin, teamId } = await ownerAndAdmin();
    const byAdmin = await add(admin);
    const byOwner = await add(owner, 'admin');
    const res = await owner.client.call('GET', '/console/api/invites');
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.headers['cache-control'], 'no-store');
    const list = res.json<{ data: PendingLink[] }>().data;
    // The owner's and admin's own links from signedInMember were used: only the two pending ones.
    assert.deepEqual(
      list.map((l) => [l.member.id, l.created_by?.id, l.resets_password]),
      [
        [byAdmin.member.id, admin.memberId, false],
        [byOwner.member.id, owner.memberId, false],
      ],
    );
    assert.equal(list[0]?.expires_at, byAdmin.expires_at);
    assert.ok(!JSON.stringify(list).includes(tokenOf(byAdmin.invite_url)), 'the list never carries a token');
    assert.equal((await admin.client.call('GET', '/console/api/invites')).statusCode, 200);
    const m = await signedInMember(url(), db(), teamId, 'member');
    assertError(await m.client.call('GET', '/console/api/invites'), 403, 'insufficient_role');
    assertError(await new ConsoleClient(url()).call('GET', '/console/api/invites'), 401, 'session_required');
    // Another team sees none of them.
    const other = await ownerAndAdmin();
    assert.deepEqual((await other.owner.client.call('GET', '/console/api/invites')).json<{ data: PendingLink[] }>().data, []);
  });

  test('revoke: the link stops working; errors for unknown, foreign, owner\'s target, non-uuid, no CSRF, members', async () => {
    const { owner, admin, teamId } = await ownerAndAdmin();
    const added = await add(admin);
    const [link] = (await owner.client.call('GET', '/console/api/invites')).json<{ data: PendingLink[] }>().data;
    assert.ok(link);
    const other = await ownerAndAdmin();
    assertError(await other.owner.client.call('POST', `/console/api/invites/${link.id}/revoke`), 404, 'invite_invalid');
    const m = await signedInMember(url(), db(), teamId, 'member');
    assertError(await m.client.call('POST', `/console/api/invites/${link.id}/revoke`), 403, 'insufficient_role');
    assertError(await owner.client.call('POST', `/console/api/invites/${link.id}/revoke`, undefined, { 'x-csrf-token': null }), 403, 'csrf_failed');
    const bad = assertError(await owner.client.call('POST', '/console/api/invites/not-a-uuid/revoke'), 422, 'invalid_request');
    assert.deepEqual(bad.errors?.map((e) => e.loc), [['path', 'id']]);
    assertError(await owner.client.call('POST', `/console/api/invites/${randomUUID()}/revoke`), 404, 'invite_invalid');
    const revoked = await admin.client.call('POST', `/console/api/invites/${link.id}/revoke`);
    assert.equal(revoked.statusCode, 200, revoked.body);
    assert.deepEqual(revoked.json(), { id: link.id, revoked: true });
    assertError(await accept(added.invite_url), 404, 'invite_invalid');
    assertError(await admin.client.call('POST', `/console/api/invites/${link.id}/revoke`), 404, 'invite_invalid');
    assert.deepEqual((await owner.client.call('GET', '/console/api/invites')).json<{ data: PendingLink[] }>().data, []);
    // An admin cannot revoke an owner's link (who may change whom); the owner can.
    const forOwner = await add(owner, 'owner');
    const ownerLink = (await owner.client.call('GET', '/console/api/invites')).json<{ data: PendingLink[] }>().data.find((l) => l.member.id === forOwner.member.id);
    assert.ok(ownerLink);
    assertError(await admin.client.call('POST', `/console/api/invites/${ownerLink.id}/revoke`), 403, 'insufficient_role');
    assert.equal((await owner.client.call('POST', `/console/api/invites/${ownerLink.id}/revoke`)).statusCode, 200);
  });

  test('the member sees the reset links made for them, by whom, and when one was used', async () => {
    const { owner, teamId } = await ownerAndAdmin();
    const m = await signedInMember(url(), db(), teamId, 'member');
    const before = await m.client.call('GET', '/console/api/password-resets');
    assert.equal(before.statusCode, 200, before.body);
    assert.deepEqual(before.json<{ data: ResetNotice[] }>().data, [], 'the first invite is not a reset');
    const reset = (await owner.client.call('POST', `/console/api/members/${m.memberId}/invite`)).json<{ invite_url: string; expires_at: string }>();
    const pending = (await owner.client.call('GET', '/console/api/invites')).json<{ data: PendingLink[] }>().data;
    assert.deepEqual(pending.map((l) => [l.member.id, l.resets_password]), [[m.memberId, true]]);
    const made = (await m.client.call('GET', '/console/api/password-resets')).json<{ data: ResetNotice[] }>().data;
    assert.deepEqual(made.map((n) => [n.created_by?.email, n.expires_at, n.used_at, n.revoked_at]), [[owner.email, reset.expires_at, null, null]]);
    // Used: the member's sessions end; at the next sign-in the notice says it was used.
    await new ConsoleClient(url()).accept(tokenOf(reset.invite_url), 'a reset password of mine');
    assertError(await m.client.call('GET', '/console/api/password-resets'), 401, 'session_required');
    const again = new ConsoleClient(url());
    await again.signIn(m.email, 'a reset password of mine');
    const used = (await again.call('GET', '/console/api/password-resets')).json<{ data: ResetNotice[] }>().data;
    assert.equal(used.length, 1);
    assert.ok(used[0]?.used_at, 'used_at is set');
    assertError(await new ConsoleClient(url()).call('GET', '/console/api/password-resets'), 401, 'session_required');
  });

  test("an operator's link (toolrun admin member invite) is listed with no maker and still works", async () => {
    const { owner, teamId } = await ownerAndAdmin();
    const m = await signedInMember(url(), db(), teamId, 'member');
    const cli = await createInvite(db(), url(), m.memberId);
    const list = (await owner.client.call('GET', '/console/api/invites')).json<{ data: PendingLink[] }>().data;
    assert.deepEqual(list.map((l) => [l.member.id, l.created_by, l.resets_password]), [[m.memberId, null, true]]);
    assert.equal((await new ConsoleClient(url()).accept(tokenOf(cli.invite_url), STRONG_PASSWORD + '!')).member.id, m.memberId);
  });
});
