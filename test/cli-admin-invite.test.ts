// `toolrun admin member invite` as a real child process: the link's JSON, that it sets the
// password, and (issue 34 item 10) which base URL the link was built on and where that came from
// (--base-url, PUBLIC_BASE_URL, or the default from HOST and PORT), said on stderr with how to
// set it: the operator's environment is not the server's, and a link on the wrong port is dead.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { CliAdmin, cliCalls, DATABASE_LINE, EX_USAGE, parseOneJson, sortedKeys } from './helpers/cli-admin.js';

let cli: CliAdmin;

before(async () => {
  cli = await CliAdmin.start({ api: true });
});
after(async () => {
  await cli.close();
});

const { ok, refused, toolrun, createTeam, addMember } = cliCalls(() => cli);

const accept = (token: string) =>
  cli.api.app.inject({ method: 'POST', url: '/console/api/invites/accept', payload: { token, password: 'a long enough password for tests' } });
const tokenOf = (url: string) => url.slice(url.indexOf('#token=') + '#token='.length);

/** The invite command's output: the JSON on stdout, and stderr without the database line. */
async function invite(memberId: string, extraArgs: string[], env: Record<string, string>): Promise<{ json: { invite_url: string; expires_at: string }; said: string }> {
  const args = ['admin', 'member', 'invite', '--member', memberId, ...extraArgs];
  const r = await toolrun(args, env);
  assert.equal(r.code, 0, `exit ${r.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
  assert.match(r.stderr, DATABASE_LINE);
  return { json: parseOneJson(args, r.stdout), said: r.stderr.replace(DATABASE_LINE, '') };
}

describe('toolrun admin member invite', () => {
  const BASE = 'https://toolrun.example.test';

  test('prints {"invite_url","expires_at"}: a 72-hour link under PUBLIC_BASE_URL that sets the password; a later link replaces it', async () => {
    const team = await createTeam();
    const owner = await addMember(team.id, 'owner');
    const first = await ok<{ invite_url: string; expires_at: string }>(['admin', 'member', 'invite', '--member', owner.id], { PUBLIC_BASE_URL: BASE });
    assert.deepEqual(sortedKeys(first), ['expires_at', 'invite_url']);
    assert.match(first.invite_url, /^https:\/\/toolrun\.example\.test\/console\/invite#token=[A-Za-z0-9_-]{43}$/);
    const hours = (Date.parse(first.expires_at) - Date.now()) / 3_600_000;
    assert.ok(hours > 71.9 && hours <= 72, `valid for ${hours} h`);
    const second = await ok<{ invite_url: string }>(['admin', 'member', 'invite', '--member', owner.id], { PUBLIC_BASE_URL: BASE });
    assert.equal((await accept(tokenOf(first.invite_url))).statusCode, 404, 'the earlier link stopped working');
    const res = await accept(tokenOf(second.invite_url));
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json<{ member: { id: string } }>().member.id, owner.id);
  });

  test('an unknown or removed member is refused; a malformed id is a usage error', async () => {
    await refused(['admin', 'member', 'invite', '--member', randomUUID()], 1, /no active member/);
    await refused(['admin', 'member', 'invite', '--member', 'nope'], EX_USAGE, /--member must be an id/);
    const team = await createTeam();
    await addMember(team.id, 'owner');
    const admin = await addMember(team.id, 'admin');
    await ok(['admin', 'member', 'remove', '--member', admin.id]);
    await refused(['admin', 'member', 'invite', '--member', admin.id], 1, /no active member/);
  });
});

describe('the base URL of an invite link, and where it came from (issue 34 item 10)', () => {
  test('PUBLIC_BASE_URL unset: the default from HOST and PORT, said on stderr with how to set it', async () => {
    const owner = await addMember((await createTeam()).id, 'owner');
    const plain = await invite(owner.id, [], {});
    assert.match(plain.json.invite_url, /^http:\/\/127\.0\.0\.1:8080\/console\/invite#token=/);
    assert.match(
      plain.said,
      /^toolrun: invite links use http:\/\/127\.0\.0\.1:8080, the default \(PUBLIC_BASE_URL is not set here, so http:\/\/HOST:PORT\); if members open the console elsewhere, set PUBLIC_BASE_URL as the server has it, or pass --base-url\n$/,
    );
    // This environment's PORT, not the server's: the line shows which.
    const port = await invite(owner.id, [], { PORT: '18080' });
    assert.match(port.json.invite_url, /^http:\/\/127\.0\.0\.1:18080\/console\/invite#token=/);
    assert.match(port.said, /^toolrun: invite links use http:\/\/127\.0\.0\.1:18080, the default /);
  });

  test('PUBLIC_BASE_URL set: said to come from it', async () => {
    const owner = await addMember((await createTeam()).id, 'owner');
    const out = await invite(owner.id, [], { PUBLIC_BASE_URL: 'https://console.example.test/' });
    assert.match(out.json.invite_url, /^https:\/\/console\.example\.test\/console\/invite#token=/);
    assert.equal(out.said, 'toolrun: invite links use https://console.example.test from PUBLIC_BASE_URL (--base-url overrides it)\n');
  });

  test('--base-url wins over PUBLIC_BASE_URL; the link works', async () => {
    const owner = await addMember((await createTeam()).id, 'owner');
    const out = await invite(owner.id, ['--base-url', 'https://tools.example.test:18443/'], { PUBLIC_BASE_URL: 'http://127.0.0.1:8080' });
    assert.match(out.json.invite_url, /^https:\/\/tools\.example\.test:18443\/console\/invite#token=[A-Za-z0-9_-]{43}$/);
    assert.equal(out.said, 'toolrun: invite links use https://tools.example.test:18443 from --base-url\n');
    const res = await accept(tokenOf(out.json.invite_url));
    assert.equal(res.statusCode, 200, res.body);
  });

  test('a --base-url that is not an http(s) URL is a usage error, before the database is opened', async () => {
    const owner = await addMember((await createTeam()).id, 'owner');
    for (const bad of ['console.example.test', 'ftp://console.example.test', 'https://console.example.test/?x=1', 'https://user:pw@console.example.test']) {
      const r = await refused(['admin', 'member', 'invite', '--member', owner.id, '--base-url', bad], EX_USAGE, /--base-url must be/);
      assert.doesNotMatch(r.stderr, DATABASE_LINE);
    }
  });
});
