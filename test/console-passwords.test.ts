// The password policy (issue 25, item 8): besides 12 to 1024 characters, a password is not one of
// the most common breached passwords (a bundled list), not one short run repeated or a run of
// consecutive characters, and does not contain the local part of the member's email.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createInvite } from '../src/console/invites.js';
import { addMember } from '../src/teams/repository.js';
import { ConsoleClient, STRONG_PASSWORD, tokenOf } from './helpers/console.js';
import { consoleSuite } from './helpers/console-suite.js';
import { assertError } from './helpers/error-envelope.js';
import { makeTeam } from './helpers/fixtures.js';
import { startTestServer } from './helpers/server.js';

const { database, db, url } = consoleSuite();

async function invitedMember(email: string) {
  const team = await makeTeam(db());
  const member = await addMember(db(), { teamId: team.teamId, email, role: 'member' });
  const invite = await createInvite(db(), url(), member.id);
  return { memberId: member.id, token: tokenOf(invite.invite_url) };
}

const accept = (token: string, password: string) => new ConsoleClient(url()).call('POST', '/console/api/invites/accept', { token, password });

describe('setting a password through an invite link', () => {
  const refused: [string, RegExp][] = [
    ['aaaaaaaaaaaa', /repeat/],
    ['password1234', /common/],
    ['Password1234', /common/],
    ['PASSWORD1234!', /common/],
    ['iloveyou2024', /common/],
    ['123456789012', /common/],
    ['qwertyuiop12', /common/],
    ['tuliptuliptulip', /repeat/],
    ['abcdefghijklmn', /consecutive/],
    ['maria.lopez was here', /email/],
    ['my MARIA.LOPEZ password', /email/],
  ];
  for (const [password, why] of refused) {
    test(`"${password}" is refused at body.password, saying why; nothing is written and the link stays usable`, async () => {
      const m = await invitedMember('maria.lopez@example.test');
      const e = assertError(await accept(m.token, password), 422, 'invalid_request');
      assert.deepEqual(e.errors?.map((x) => x.loc), [['body', 'password']]);
      assert.match(e.errors?.[0]?.message ?? '', why);
      assert.match(e.message, why);
      const { rows } = await db().pool.query('SELECT 1 FROM member_passwords WHERE member_id = $1::uuid', [m.memberId]);
      assert.equal(rows.length, 0, 'no password was set');
      assert.equal((await accept(m.token, STRONG_PASSWORD)).statusCode, 200);
    });
  }

  test('a long passphrase, and one with a short local part inside, are accepted', async () => {
    const m = await invitedMember('maria.lopez@example.test');
    assert.equal((await accept(m.token, 'violet kettle under the stairs')).statusCode, 200);
    // "jo" is in "journey": a local part under 3 characters says nothing about the password.
    const j = await invitedMember('jo@example.test');
    assert.equal((await accept(j.token, 'a long journey to the coast')).statusCode, 200);
  });
});
