// The Members page's pending invite links and the Overview's reset notice in a real Chromium
// (issue 25 item 2): an owner sees every pending link with its member, maker and expiry, a reset
// link marked as such, and revokes one (the link then fails over the API); the member a reset link
// was made for sees it on their Overview. Writes docs/console/members-links.png and
// docs/console/overview-reset-notice.png.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { createInvite } from '../src/console/invites.js';
import { addMember, createTeam } from '../src/teams/repository.js';
import { axeScan, launchBrowser, newPage, screenshot, seriousViolations } from './helpers/browser.js';
import { ConsoleClient, tokenOf } from './helpers/console.js';
import { acceptInvite, openPage, signIn } from './helpers/console-browser.js';
import { consoleSuite } from './helpers/console-suite.js';
import { assertError } from './helpers/error-envelope.js';

const OWNER_PASSWORD = 'owner password 4 the console';
const ADMIN_PASSWORD = 'admin password 4 the console';
const MEMBER_PASSWORD = 'member password 4 the console';

let browser: Browser;
const team = { ownerEmail: 'ada@example.test', adminEmail: 'grace@example.test', memberEmail: 'linus@example.test', ownerLink: '' };
let admin: ConsoleClient;

const { url } = consoleSuite({
  async setUp(s) {
    browser = await launchBrowser();
    const db = s.database.db;
    const t = await createTeam(db, { name: 'Acme Studio', plan: 'pro', sparks: 500 });
    const owner = await addMember(db, { teamId: t.id, email: team.ownerEmail, role: 'owner' });
    team.ownerLink = (await createInvite(db, s.url, owner.id)).invite_url;
    const a = await addMember(db, { teamId: t.id, email: team.adminEmail, role: 'admin' });
    admin = new ConsoleClient(s.url);
    await admin.accept(tokenOf((await createInvite(db, s.url, a.id)).invite_url), ADMIN_PASSWORD);
    const m = await addMember(db, { teamId: t.id, email: team.memberEmail, role: 'member' });
    await new ConsoleClient(s.url).accept(tokenOf((await createInvite(db, s.url, m.id)).invite_url), MEMBER_PASSWORD);
  },
  async tearDown() {
    await browser?.close();
  },
});

describe('pending invite links in Chromium', () => {
  test('the owner sees each pending link (for, made by, expires), a reset marked, and revokes one', async () => {
    const { page, problems } = await newPage(browser);
    await acceptInvite(page, team.ownerLink, OWNER_PASSWORD);
    // An admin invites someone over the API: the owner's page lists it as the admin's.
    const byAdmin = await admin.call('POST', '/console/api/members', { email: 'alan@example.test', role: 'member' });
    assert.equal(byAdmin.statusCode, 201, byAdmin.body);

    await openPage(page, 'Members');
    const pending = page.getByRole('region', { name: 'Pending invite links' });
    await pending.getByRole('row', { name: /alan@example.test/ }).waitFor();
    // The owner invites someone, and makes a reset link for a member who has a password.
    await page.getByLabel('Email').fill('margaret@example.test');
    await page.getByRole('button', { name: 'Create invite link' }).click();
    await page.getByRole('textbox', { name: /Invite link for margaret@example.test/ }).waitFor();
    await page.getByRole('button', { name: 'Done' }).click();
    await page.getByRole('button', { name: `New reset link for ${team.memberEmail}` }).click();
    await page.getByRole('textbox', { name: new RegExp(`Invite link for ${team.memberEmail}`) }).waitFor();
    await page.getByRole('button', { name: 'Done' }).click();

    const alan = pending.getByRole('row', { name: /alan@example.test/ });
    const margaret = pending.getByRole('row', { name: /margaret@example.test/ });
    const linus = pending.getByRole('row', { name: /linus@example.test/ });
    await margaret.waitFor();
    await linus.waitFor();
    assert.match(await alan.innerText(), new RegExp(team.adminEmail));
    assert.match(await margaret.innerText(), new RegExp(team.ownerEmail));
    assert.match(await linus.innerText(), /Resets password/);
    assert.doesNotMatch(await margaret.innerText(), /Resets password/);
    assert.equal(await pending.getByRole('row').count(), 4, 'a header and three links');
    assert.deepEqual(seriousViolations(await axeScan(page)), [], 'axe-core on the members page with pending links');
    await screenshot(page, 'members-links');

    await alan.getByRole('button', { name: 'Revoke the link for alan@example.test' }).click();
    await alan.waitFor({ state: 'detached' });
    await page.getByRole('status').filter({ hasText: 'The link for alan@example.test was revoked.' }).waitFor();
    const alanLink = byAdmin.json<{ invite_url: string }>().invite_url;
    assertError(await new ConsoleClient(url()).call('POST', '/console/api/invites/accept', { token: tokenOf(alanLink), password: 'a passphrase nobody guesses' }), 404, 'invite_invalid');
    assert.deepEqual(problems, []);
    await page.context().close();
  });

  test('the member a reset link was made for sees it on the Overview, with who made it', async () => {
    const { page, problems } = await newPage(browser);
    await signIn(page, url(), team.memberEmail, MEMBER_PASSWORD);
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
    const notice = page.getByRole('region', { name: 'Password reset links were made for you' });
    await notice.waitFor();
    assert.match(await notice.innerText(), new RegExp(`by ${team.ownerEmail}: not used yet`));
    assert.deepEqual(seriousViolations(await axeScan(page)), [], 'axe-core on the overview with a reset notice');
    await screenshot(page, 'overview-reset-notice');
    // A member sees no pending-links list on the Members page.
    await openPage(page, 'Members');
    assert.equal(await page.getByRole('heading', { name: 'Pending invite links' }).count(), 0);
    assert.deepEqual(problems, []);
    await page.context().close();
  });
});
