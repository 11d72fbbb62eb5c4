// The password policy (issue 25 item 8, issue 34 item 9): 12 to 1024 characters, not containing the
// local part of the member's email, and at least 10^10 guesses as zxcvbn-ts estimates them (its
// breached-password, word and name lists, patterns, the email and the team's name), judged on the
// first 32 characters without separators. Every password is set through an invite link (a first
// password or a reset): the one place the console sets one (the operator CLI only prints links).
import assert from 'node:assert/strict';
import { randomBytes, randomInt } from 'node:crypto';
import { describe, test } from 'node:test';
import { createInvite } from '../src/console/invites.js';
import { addMember, createTeam } from '../src/teams/repository.js';
import { ConsoleClient, STRONG_PASSWORD, tokenOf } from './helpers/console.js';
import { consoleSuite } from './helpers/console-suite.js';
import { assertError } from './helpers/error-envelope.js';
import { makeTeam } from './helpers/fixtures.js';

const { db, url } = consoleSuite();

async function invitedMember(email: string, teamName?: string) {
  const teamId = teamName ? (await createTeam(db(), { name: teamName, plan: 'pro' })).id : (await makeTeam(db())).teamId;
  const member = await addMember(db(), { teamId, email, role: 'member' });
  const invite = await createInvite(db(), url(), member.id);
  return { memberId: member.id, token: tokenOf(invite.invite_url) };
}

const accept = (token: string, password: string) => new ConsoleClient(url()).call('POST', '/console/api/invites/accept', { token, password });

async function assertRefused(m: { memberId: string; token: string }, password: string, code: string, why: RegExp): Promise<void> {
  const e = assertError(await accept(m.token, password), 422, 'invalid_request');
  assert.deepEqual(
    e.errors?.map((x) => [x.loc, x.code]),
    [[['body', 'password'], code]],
  );
  assert.match(e.errors?.[0]?.message ?? '', why);
  assert.match(e.message, why);
  assert.ok(e.message.startsWith('The password '), e.message);
  const { rows } = await db().pool.query('SELECT 1 FROM member_passwords WHERE member_id = $1::uuid', [m.memberId]);
  assert.equal(rows.length, 0, 'no password was set');
}

/** Four words drawn at random from the EFF's 7,776-word list (zxcvbn-ts's own diceware list). */
async function randomPassphrase(words = 4): Promise<string> {
  const list = (await import('@zxcvbn-ts/language-common')).dictionary['diceware-common'];
  return Array.from({ length: words }, () => list[randomInt(list.length)]).join(' ');
}

describe('setting a password through an invite link', () => {
  test('the passwords of issue 34 are refused as common, saying why and what would do; the link stays usable', async () => {
    for (const password of ['correcthorsebatterystaple', 'correct horse battery staple 91!', 'Correct-Horse-Battery-Staple']) {
      const m = await invitedMember('maria.lopez@example.test');
      await assertRefused(m, password, 'common_password', /common passwords in published breaches.*four or more random words, or 12 or more random characters, would do/);
      assert.equal((await accept(m.token, STRONG_PASSWORD)).statusCode, 200);
    }
  });

  const refused: [string, string, RegExp][] = [
    ['aaaaaaaaaaaa', 'repeated', /repeats/],
    ['password1234', 'common_password', /common/],
    ['Password1234', 'common_password', /common.*capital first letter does not help/],
    ['PASSWORD1234!', 'common_password', /common/],
    ['iloveyou2024', 'common_password', /common/],
    ['123456789012', 'common_password', /common/],
    ['qwertyuiop12', 'common_password', /common/],
    ['tuliptuliptulip', 'repeated', /repeats/],
    ['abcdefghijklmn', 'sequence', /sequence such as abc/],
    ['december 31 1987', 'too_guessable', /guessed too soon \(about 10\^\d guesses; at least 10\^10 are needed\)/],
    ['maria.lopez was here', 'contains_email', /email/],
    ['my MARIA.LOPEZ password', 'contains_email', /email/],
  ];
  for (const [password, code, why] of refused) {
    test(`"${password}" is refused at body.password (${code}), saying why; nothing is written and the link stays usable`, async () => {
      const m = await invitedMember('maria.lopez@example.test');
      await assertRefused(m, password, code, why);
      assert.equal((await accept(m.token, STRONG_PASSWORD)).statusCode, 200);
    });
  }

  test("the team's name counts as known to an attacker: refused in its own team, accepted in another", async () => {
    const password = 'quillfeather cartography 2024';
    await assertRefused(await invitedMember('ana@example.test', 'Quillfeather Cartography'), password, 'personal', /team's name/);
    assert.equal((await accept((await invitedMember('ben@example.test', 'Acme')).token, password)).statusCode, 200);
  });

  test('random passphrases of four words and random strings of 16 characters are accepted; so are long passphrases', async () => {
    const passwords = [
      ...(await Promise.all(Array.from({ length: 4 }, () => randomPassphrase()))),
      ...Array.from({ length: 4 }, () => randomBytes(12).toString('base64')),
      'violet kettle under the stairs',
    ];
    for (const password of passwords) {
      const m = await invitedMember(`member-${randomInt(1e9)}@example.test`);
      const res = await accept(m.token, password);
      assert.equal(res.statusCode, 200, `${password}: ${res.body}`);
    }
    // "jo" is in "journey": a local part under 3 characters says nothing about the password.
    const j = await invitedMember('jo@example.test');
    assert.equal((await accept(j.token, 'a long journey to the coast')).statusCode, 200);
  });

  test('only the first 32 characters are judged: a weak start is refused whatever follows, a strong start passes at 1024 characters', async () => {
    const weakStart = `${'password'.repeat(4)}${randomBytes(30).toString('base64')}`;
    await assertRefused(await invitedMember('cho@example.test'), weakStart, 'repeated', /repeats/);
    const strongStart = `${randomBytes(24).toString('base64')}${'a'.repeat(1024 - 32)}`;
    assert.equal([...strongStart].length, 1024);
    assert.equal((await accept((await invitedMember('dee@example.test')).token, strongStart)).statusCode, 200);
  });

  test('a reset link (an owner\'s, for a member who has a password) is held to the same policy; the old password still signs in', async () => {
    const team = await makeTeam(db());
    const ownerClient = new ConsoleClient(url());
    await ownerClient.accept(tokenOf((await createInvite(db(), url(), team.memberId)).invite_url));
    const member = await addMember(db(), { teamId: team.teamId, email: `reset-${randomInt(1e9)}@example.test`, role: 'member' });
    await new ConsoleClient(url()).accept(tokenOf((await createInvite(db(), url(), member.id)).invite_url));
    const reset = await ownerClient.call('POST', `/console/api/members/${member.id}/invite`);
    assert.equal(reset.statusCode, 201, reset.body);
    const token = tokenOf(reset.json<{ invite_url: string }>().invite_url);
    const e = assertError(await accept(token, 'correct horse battery staple 91!'), 422, 'invalid_request');
    assert.deepEqual(e.errors?.map((x) => [x.loc, x.code]), [[['body', 'password'], 'common_password']]);
    await new ConsoleClient(url()).signIn(member.email);
  });
});
