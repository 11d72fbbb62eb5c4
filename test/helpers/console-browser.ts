// The team console in a browser test: the one-time invite link for a member (the operator's way in),
// whether this tree has the console's JSON back end at all, and the steps a person takes in the pages.
import type { Page } from 'playwright-core';
import type { TestServer } from './server.js';
import { cliEnv, runCli } from './process.js';

/**
 * The invite link for a member, as an operator makes it: `toolrun admin member invite --member ID`
 * (issue 14), run as a real child process against the test server's database and base URL. Any
 * link of the form ${PUBLIC_BASE_URL}/console/invite#token=... in its output is the answer.
 * (The lead may swap the child process for a direct call of the back end's invite function.)
 */
export async function inviteLinkFor(s: TestServer, memberId: string): Promise<string> {
  const result = await runCli(
    ['admin', 'member', 'invite', '--member', memberId],
    cliEnv({ DATABASE_URL: s.database.url, PUBLIC_BASE_URL: s.url, TOOLRUN_DATA_DIR: s.config.dataDir }),
  );
  const link = /https?:\/\/[^\s"']+\/console\/invite#token=[^\s"']+/.exec(result.stdout)?.[0];
  if (result.code !== 0 || !link) {
    throw new Error(`toolrun admin member invite did not print an invite link (exit ${result.code})\nstdout: ${result.stdout}\nstderr: ${result.stderr}`);
  }
  return link;
}

/**
 * False while the console's JSON routes (/console/api, built on another branch) are not in this
 * tree: GET /console/api/session is then an unknown path (404 not_found) instead of 401.
 */
export async function consoleBackendPresent(baseUrl: string): Promise<boolean> {
  const res = await fetch(`${baseUrl}/console/api/session`);
  const body = (await res.json()) as { error?: { code?: string } };
  return !(res.status === 404 && body.error?.code === 'not_found');
}

/** Opens an invite link, sets the password (typed twice) and waits to land signed in. */
export async function acceptInvite(page: Page, link: string, password: string): Promise<void> {
  await page.goto(link);
  await page.getByLabel('Password', { exact: true }).fill(password);
  await page.getByLabel('Confirm password').fill(password);
  await page.getByRole('button', { name: 'Set password and sign in' }).click();
  await page.getByRole('navigation', { name: 'Console' }).waitFor();
}

export async function signIn(page: Page, baseUrl: string, email: string, password: string): Promise<void> {
  await page.goto(`${baseUrl}/console/sign-in`);
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('navigation', { name: 'Console' }).waitFor();
}

/** Follows a navigation link and waits for the page's heading. */
export async function openPage(
  page: Page,
  link: 'Overview' | 'Runs' | 'Playground' | 'Usage' | 'API keys' | 'Webhooks' | 'Members',
): Promise<void> {
  await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: link, exact: true }).click();
  await page.getByRole('heading', { level: 1, name: link }).waitFor();
  // .first(): a page may load in several parts (Usage: the summary and the ledger); none left.
  await page.getByRole('status').filter({ hasText: 'Loading…' }).first().waitFor({ state: 'detached' });
}

/** Creates a key on the API keys page; the full key, read from the one-time box. */
export async function createKey(page: Page, name: string, rate: '30' | '60' | '120' | '300' = '60'): Promise<string> {
  await page.getByLabel('Name').fill(name);
  await page.getByLabel('Rate limit').selectOption(rate);
  await page.getByRole('button', { name: 'Create key' }).click();
  const box = page.getByRole('textbox', { name: `API key “${name}”` });
  await box.waitFor();
  return box.inputValue();
}

/**
 * In the playground: picks the tool, uploads `png` through the file picker of `slot` (its label)
 * and waits for the upload to finish and the estimate to come; the Sparks estimated.
 */
export async function fillPlayground(page: Page, tool: string, slot: string, file: { name: string; buffer: Buffer }): Promise<number> {
  await page.getByLabel('Tool', { exact: true }).selectOption(tool);
  await page.getByLabel(slot, { exact: true }).setInputFiles({ name: file.name, mimeType: 'image/png', buffer: file.buffer });
  await page.getByText('Uploaded', { exact: true }).waitFor();
  const estimate = page.getByText(/^Estimate: \d+ Sparks$/);
  await estimate.waitFor();
  return Number(/\d+/.exec(await estimate.innerText())?.[0]);
}

/** Clicks Run and waits for the run's own page; the run id from its address. */
export async function clickRun(page: Page): Promise<string> {
  await page.getByRole('button', { name: 'Run', exact: true }).click();
  await page.waitForURL(/\/console\/runs\/[0-9a-f-]{36}$/);
  const id = /[0-9a-f-]{36}$/.exec(page.url())?.[0];
  if (!id) throw new Error(`no run id in ${page.url()}`);
  return id;
}
