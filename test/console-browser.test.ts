// The team console in a real Chromium (Debian's, driven by playwright-core) against the real
// server and its /console/api: an owner follows an operator's invite link, sets a password, signs
// in, makes a key that works on /v1 and revokes it; adds a webhook endpoint and sends a test; a
// member sees every page without actions; the keyboard reaches and works every control; axe-core
// finds no serious or critical violation on any page. The screenshots in docs/console come from here.
import assert from 'node:assert/strict';
import { describe, test, type TestContext } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { addMember, createTeam } from '../src/teams/repository.js';
import { axeScan, launchBrowser, newPage, screenshot, seriousViolations } from './helpers/browser.js';
import { acceptInvite, consoleBackendPresent, createKey, inviteLinkFor, openPage, signIn } from './helpers/console-browser.js';
import { consoleSuite } from './helpers/console-suite.js';
import { bearer } from './helpers/fixtures.js';
import { killLiveChildren } from './helpers/process.js';
import { closeReceivers, Receiver } from './helpers/receiver.js';

const MISSING = 'the /console/api back end is not in this tree (GET /console/api/session is an unknown path)';
const OWNER_PASSWORD = 'owner password 4 the console';
const MEMBER_PASSWORD = 'member password 4 the console';

let present = false;
let browser: Browser | null = null;
let owner: { page: Page; problems: string[] } | null = null;
const team = { id: '', ownerId: '', ownerEmail: 'ada@example.test', memberId: '', memberEmail: 'grace@example.test' };

const { server, url } = consoleSuite({
  env: { TOOLRUN_ALLOW_PRIVATE_NETWORK: '1' },
  async setUp(s) {
    present = await consoleBackendPresent(s.url);
    if (!present) return;
    browser = await launchBrowser();
    const t = await createTeam(s.database.db, { name: 'Acme Studio', plan: 'pro', sparks: 500 });
    team.id = t.id;
    team.ownerId = (await addMember(s.database.db, { teamId: t.id, email: team.ownerEmail, role: 'owner' })).id;
    team.memberId = (await addMember(s.database.db, { teamId: t.id, email: team.memberEmail, role: 'member' })).id;
  },
  async tearDown() {
    await browser?.close();
    killLiveChildren();
    await closeReceivers();
  },
});

function ownerPage(t: TestContext): Page | null {
  if (!present) {
    t.skip(MISSING);
    return null;
  }
  assert.ok(owner, 'the owner signed in (the first test)');
  return owner.page;
}

async function assertAccessible(page: Page, what: string): Promise<void> {
  assert.deepEqual(seriousViolations(await axeScan(page)), [], `axe-core on ${what}`);
}

describe('the console in Chromium', () => {
  test('invite link -> set password -> signed in; sign out; sign in with email and password', async (t) => {
    if (!present) return t.skip(MISSING);
    assert.ok(browser);
    owner = await newPage(browser);
    const { page } = owner;
    const link = await inviteLinkFor(server(), team.ownerId);
    assert.ok(link.startsWith(`${url()}/console/invite#token=`), link);

    // Too short a password is refused next to the field.
    await page.goto(link);
    assert.equal(new URL(page.url()).hash, '', 'the token leaves the address bar');
    await page.getByRole('heading', { name: 'Set your password' }).waitFor();
    await assertAccessible(page, 'the invite page');
    await screenshot(page, 'invite');
    await page.getByLabel('Password', { exact: true }).fill('too short');
    await page.getByLabel('Confirm password').fill('too short');
    await page.getByRole('button', { name: 'Set password and sign in' }).click();
    const password = page.getByLabel('Password', { exact: true });
    await page.locator('input[aria-invalid="true"]').waitFor();
    assert.equal(await password.getAttribute('aria-invalid'), 'true');
    const describedBy = (await password.getAttribute('aria-describedby')) ?? '';
    const errorText = await page.locator(`[id="${describedBy.split(' ')[0]}"]`).innerText();
    assert.match(errorText, /12/, 'the error next to the field names the rule');

    await password.fill(OWNER_PASSWORD);
    await page.getByLabel('Confirm password').fill(OWNER_PASSWORD);
    await page.getByRole('button', { name: 'Set password and sign in' }).click();
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
    await page.getByText('Sparks available').waitFor();
    await assertAccessible(page, 'the overview');
    await screenshot(page, 'overview');

    // The same link does not work twice.
    const again = await newPage(browser);
    await again.page.goto(link);
    await again.page.getByLabel('Password', { exact: true }).fill(OWNER_PASSWORD);
    await again.page.getByLabel('Confirm password').fill(OWNER_PASSWORD);
    await again.page.getByRole('button', { name: 'Set password and sign in' }).click();
    await again.page.getByRole('heading', { name: 'This invite link does not work' }).waitFor();
    await again.page.context().close();

    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
    await assertAccessible(page, 'the sign-in page');
    await screenshot(page, 'sign-in');
    await page.getByLabel('Email').fill(team.ownerEmail);
    await page.getByLabel('Password').fill('not the password at all');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').filter({ hasText: /\S/ }).waitFor();
    await signIn(page, url(), team.ownerEmail, OWNER_PASSWORD);
    assert.deepEqual(owner.problems, []);
  });

  test('create a key: it answers GET /v1/me as its creator; revoke it: the same key gets 401', async (t) => {
    const page = ownerPage(t);
    if (!page) return;
    await openPage(page, 'API keys');
    await page.getByText('0 of 25 active keys in use').waitFor();
    // Read is always on and cannot be unticked; run is on and webhooks off by default.
    const scopes = page.getByRole('group', { name: 'Scopes' });
    assert.equal(await scopes.getByRole('checkbox', { name: /^Read/ }).isChecked(), true);
    assert.equal(await scopes.getByRole('checkbox', { name: /^Read/ }).isDisabled(), true);
    assert.equal(await scopes.getByRole('checkbox', { name: /^Run/ }).isChecked(), true);
    assert.equal(await scopes.getByRole('checkbox', { name: /^Webhooks/ }).isChecked(), false);
    assert.equal(await page.getByLabel('Rate limit').inputValue(), '60');

    const key = await createKey(page, 'Render farm', '120');
    assert.match(key, /^svc_test_/);
    await page.getByText('shown only once').waitFor();
    const me = await fetch(`${url()}/v1/me`, { headers: bearer(key) });
    assert.equal(me.status, 200);
    const body = (await me.json()) as { member?: { email?: string }; team?: { id?: string } };
    assert.equal(body.team?.id, team.id);
    await page.getByRole('button', { name: 'Done' }).click();

    const row = page.getByRole('row', { name: /Render farm/ });
    await row.waitFor();
    const cells = await row.innerText();
    // The 8-character prefix is what follows svc_test_ in the key.
    const prefix = key.slice('svc_test_'.length, 'svc_test_'.length + 8);
    assert.ok(cells.includes(prefix), `the row shows the key's prefix ${prefix}: ${cells}`);
    assert.match(cells, /120\/min/);
    assert.ok(cells.includes(team.ownerEmail), 'the row names its creator');
    await assertAccessible(page, 'the API keys page');
    await screenshot(page, 'api-keys');

    await row.getByRole('button', { name: 'Revoke Render farm' }).click();
    const dialog = page.getByRole('dialog', { name: /Revoke/ });
    await dialog.waitFor();
    await assertAccessible(page, 'the revoke dialog');
    await screenshot(page, 'api-keys-revoke');
    await dialog.getByRole('button', { name: 'Revoke key' }).click();
    await dialog.waitFor({ state: 'detached' });
    await row.waitFor({ state: 'detached' });
    const revoked = await fetch(`${url()}/v1/me`, { headers: bearer(key) });
    assert.equal(revoked.status, 401);
    assert.equal(((await revoked.json()) as { error: { code: string } }).error.code, 'invalid_api_key');
  });

  test('add a webhook endpoint (secret shown once) and send a test: the receiver gets the ping, the page shows the result', async (t) => {
    const page = ownerPage(t);
    if (!page) return;
    const receiver = await Receiver.start();
    await openPage(page, 'Webhooks');
    await page.getByLabel('URL').fill(receiver.url());
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    const secret = await page.getByRole('textbox', { name: /Signing secret/ }).inputValue();
    assert.match(secret, /^whsec_/);
    await page.getByRole('button', { name: 'Done' }).click();
    const card = page.getByRole('article', { name: receiver.url() });
    await card.getByRole('button', { name: 'Send test' }).click();
    await card.getByRole('status').filter({ hasText: /Test delivered: HTTP 204/ }).waitFor();
    await receiver.waitForRequests(1);
    await card.getByRole('button', { name: 'Show deliveries' }).click();
    await card.getByRole('button', { name: 'Refresh deliveries' }).waitFor();
    await card.getByRole('button', { name: 'Pause' }).click();
    await card.getByText('Paused', { exact: true }).waitFor();
    await assertAccessible(page, 'the webhooks page');
    await screenshot(page, 'webhooks');
  });

  test('members: invite shows the link to copy; removing asks first and says the keys stop for good', async (t) => {
    const page = ownerPage(t);
    if (!page) return;
    await openPage(page, 'Members');
    await page.getByLabel('Email').fill('linus@example.test');
    await page.getByRole('button', { name: 'Create invite link' }).click();
    const link = await page.getByRole('textbox', { name: /Invite link for linus@example.test/ }).inputValue();
    assert.ok(link.startsWith(`${url()}/console/invite#token=`), link);
    await page.getByRole('button', { name: 'Done' }).click();
    await page.getByRole('button', { name: 'Remove linus@example.test' }).click();
    const dialog = page.getByRole('dialog', { name: /Remove linus@example.test/ });
    assert.match(await dialog.innerText(), /stops working for good/);
    await dialog.getByRole('button', { name: 'Remove member' }).click();
    // Both rows go: the member's, and their pending link's (removal voids it).
    await page.getByRole('region', { name: 'Team members' }).getByRole('row', { name: /linus@example.test/ }).waitFor({ state: 'detached' });
    await page.getByRole('region', { name: 'Pending invite links' }).waitFor({ state: 'detached' });
    await page.getByText('No pending links.').waitFor();
    await assertAccessible(page, 'the members page');
    await screenshot(page, 'members');
  });

  test('a member sees keys, webhooks and members without any action', async (t) => {
    if (!present) return t.skip(MISSING);
    assert.ok(browser);
    const { page, problems } = await newPage(browser);
    await acceptInvite(page, await inviteLinkFor(server(), team.memberId), MEMBER_PASSWORD);
    await openPage(page, 'API keys');
    await page.getByText('Only owners and admins create and revoke keys.').waitFor();
    assert.equal(await page.getByRole('button', { name: 'Create key' }).count(), 0);
    assert.equal(await page.getByRole('button', { name: /Revoke/ }).count(), 0);
    await assertAccessible(page, "a member's API keys page");
    await openPage(page, 'Webhooks');
    await page.getByText('Only owners and admins change webhook endpoints.').waitFor();
    for (const name of ['Add endpoint', 'Send test', 'Delete', 'Pause']) assert.equal(await page.getByRole('button', { name }).count(), 0, name);
    await openPage(page, 'Members');
    await page.getByRole('row', { name: /ada@example.test/ }).waitFor();
    for (const name of [/Remove/, /Invite link/, /Change role/]) assert.equal(await page.getByRole('button', { name }).count(), 0, String(name));
    assert.deepEqual(problems, []);
    await page.context().close();
  });

  test('the keyboard alone signs in and revokes: visible focus, the dialog keeps focus and closes with Escape', async (t) => {
    const page = ownerPage(t);
    if (!page) return;
    await openPage(page, 'API keys');
    await createKey(page, 'Keyboard key');
    await page.getByRole('button', { name: 'Done' }).click();
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
    // A fresh load of the sign-in page: after the sign-out button left the document, Chromium's
    // focus navigation could start after where it was, and Tab then left the page (flaky in CI).
    await page.reload();
    await page.getByRole('button', { name: 'Sign in' }).waitFor();

    // Tab order from the top of the sign-in page: Email, Password, Sign in.
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(() => document.activeElement?.getAttribute('type')), 'email');
    const outline = await page.evaluate(() => getComputedStyle(document.activeElement ?? document.body).outlineStyle);
    assert.notEqual(outline, 'none', 'the focused control shows it');
    await page.keyboard.type(team.ownerEmail);
    await page.keyboard.press('Tab');
    await page.keyboard.type(OWNER_PASSWORD);
    await page.keyboard.press('Enter');
    await page.getByRole('navigation', { name: 'Console' }).waitFor();

    await openPage(page, 'API keys');
    const revoke = page.getByRole('button', { name: 'Revoke Keyboard key' });
    await revoke.focus();
    await page.keyboard.press('Enter');
    const dialog = page.getByRole('dialog');
    await dialog.waitFor();
    // Focus stays inside the open dialog however far one tabs.
    for (let i = 0; i < 6; i++) {
      await page.keyboard.press('Tab');
      assert.equal(await page.evaluate(() => Boolean(document.activeElement?.closest('dialog'))), true, `tab ${i + 1}`);
    }
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'detached' });
    // Focus returns to the control that opened the dialog.
    await page.waitForFunction(() => document.activeElement?.getAttribute('aria-label') === 'Revoke Keyboard key');
    await page.getByRole('row', { name: /Keyboard key/ }).waitFor();
  });
});
