// Item 4 of issue 25: on a database whose ctype folds beyond ASCII (glibc C.utf8, as an operator's
// external PostgreSQL often is), lower('İnfo@…') is 'info@…' while JavaScript lowers 'İ' to 'i̇':
// the İ spellings of one email each had a bucket of their own and all signed in. Console emails
// are ASCII, so sign-in matches them ASCII-only and keys its buckets on exactly what it matches.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { addMember, createTeam } from '../src/teams/repository.js';
import { ConsoleClient, inviteAndSignIn, STRONG_PASSWORD } from './helpers/console.js';
import { assertError } from './helpers/error-envelope.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { createUtf8Database, type Utf8Database } from './helpers/utf8-database.js';

let made: Utf8Database;
let s: TestServer | null = null;

before(async () => {
  made = await createUtf8Database();
  if ('database' in made) s = await startTestServer({ database: made.database });
});
after(async () => {
  await s?.close();
  if ('close' in made) await made.close();
});

const attempt = (email: string, password: string, from: string) =>
  new ConsoleClient(s?.url ?? '', { localAddress: from }).call('POST', '/console/api/session', { email, password });

describe('sign-in on a C.utf8 database', () => {
  test("the 'İ' spellings of an email do not sign in; its ASCII spellings share one bucket", async (t) => {
    if (!('database' in made) || !s) {
      t.skip(made && 'skip' in made ? made.skip : 'no database');
      return;
    }
    const db = made.database.db;
    const team = await createTeam(db, { name: 'Dotted I', plan: 'pro' });
    const member = await addMember(db, { teamId: team.id, email: 'info.inbox@example.test', role: 'owner' });
    await inviteAndSignIn(s.url, db, member.id);

    for (const spelling of ['İnfo.inbox@example.test', 'info.İnbox@example.test', 'İNFO.İNBOX@EXAMPLE.TEST']) {
      assertError(await attempt(spelling, STRONG_PASSWORD, '127.0.6.1'), 401, 'invalid_credentials');
    }
    assert.equal((await attempt('INFO.Inbox@Example.Test', STRONG_PASSWORD, '127.0.6.2')).statusCode, 200);

    // Ten failures in mixed ASCII case from one client: its next try, in any ASCII spelling, is refused.
    for (let i = 0; i < 10; i++) {
      const spelling = i % 2 ? 'INFO.INBOX@EXAMPLE.TEST' : 'info.inbox@example.test';
      assertError(await attempt(spelling, `wrong password ${i}`, '127.0.6.3'), 401, 'invalid_credentials');
    }
    assertError(await attempt('Info.Inbox@example.test', STRONG_PASSWORD, '127.0.6.3'), 429, 'rate_limited');
    // and a dotted spelling is no way round it: it matches no member at all.
    assertError(await attempt('İnfo.inbox@example.test', STRONG_PASSWORD, '127.0.6.3'), 401, 'invalid_credentials');
  });
});
