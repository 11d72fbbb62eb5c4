// Role changes and removals are authorised under the lock that changes the row (issue 25 item 7):
// an owner's promotion and an admin's demotion of the same member race over real sockets, 40
// times; an admin's demotion never lands on an owner. Also a removal racing a promotion.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { signedInMember, type SignedInMember } from './helpers/console.js';
import { createTestDatabase, type TestDatabase } from './helpers/db.js';
import { makeTeam } from './helpers/fixtures.js';
import { startTestServer, type TestServer } from './helpers/server.js';

let database: TestDatabase;
let s: TestServer;

before(async () => {
  database = await createTestDatabase();
  s = await startTestServer({ database });
});
after(async () => {
  await s.close();
  await database.db.close();
});

const db = () => database.db;
const TRIES = 40;

async function roleOf(id: string): Promise<{ role: string; removed: boolean }> {
  const { rows } = await db().pool.query<{ role: string; removed: boolean }>('SELECT role, removed_at IS NOT NULL AS removed FROM members WHERE id = $1::uuid', [id]);
  const row = rows[0];
  assert.ok(row);
  return row;
}

async function setup(): Promise<{ owner: SignedInMember; admin: SignedInMember; target: SignedInMember }> {
  const team = await makeTeam(db());
  const owner = await signedInMember(s.url, db(), team.teamId, 'owner');
  const admin = await signedInMember(s.url, db(), team.teamId, 'admin');
  const target = await signedInMember(s.url, db(), team.teamId, 'admin');
  return { owner, admin, target };
}

describe('item 7: who may change whom is decided under the lock', () => {
  test(`${TRIES} races of owner-promote vs admin-demote: no admin demotion lands on an owner`, async () => {
    const { owner, admin, target } = await setup();
    const landed: number[] = [];
    let adminWon = 0;
    for (let i = 0; i < TRIES; i++) {
      await db().pool.query("UPDATE members SET role = 'admin' WHERE id = $1::uuid", [target.memberId]);
      const [promote, demote] = await Promise.all([
        owner.client.call('PATCH', `/console/api/members/${target.memberId}`, { role: 'owner' }),
        admin.client.call('PATCH', `/console/api/members/${target.memberId}`, { role: 'member' }),
      ]);
      assert.equal(promote.statusCode, 200, promote.body);
      assert.ok([200, 403].includes(demote.statusCode), demote.body);
      const { role } = await roleOf(target.memberId);
      // The admin's 200 is only right if it came first: the owner's promotion then ends at owner.
      if (demote.statusCode === 200) {
        adminWon++;
        if (role !== 'owner') landed.push(i);
      } else {
        assert.equal(role, 'owner');
      }
    }
    assert.deepEqual(landed, [], `an admin's demotion landed on an owner in ${landed.length} of ${TRIES} tries (admin answered 200 ${adminWon} times)`);
  });

  test(`${TRIES} races of owner-promote vs admin-remove: no admin removal lands on an owner`, async () => {
    const { owner, admin } = await setup();
    const landed: number[] = [];
    for (let i = 0; i < TRIES; i++) {
      const target = await signedInMember(s.url, db(), owner.session.team.id, 'member');
      const [promote, remove] = await Promise.all([
        owner.client.call('PATCH', `/console/api/members/${target.memberId}`, { role: 'owner' }),
        admin.client.call('DELETE', `/console/api/members/${target.memberId}`),
      ]);
      assert.ok([200, 404].includes(promote.statusCode), promote.body);
      assert.ok([200, 403].includes(remove.statusCode), remove.body);
      const after = await roleOf(target.memberId);
      // Removed by the admin: only right if the promotion had not happened (it then found no member).
      if (after.removed && promote.statusCode === 200) landed.push(i);
    }
    assert.deepEqual(landed, [], `an admin's removal landed on an owner in ${landed.length} of ${TRIES} tries`);
  });
});
