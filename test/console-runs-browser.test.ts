// The console's runs, playground and usage pages (issue 15) in a real Chromium against the real
// server, a real run worker and the real image_upscale tool: a run left queued (no worker yet) is
// canceled and its hold released, as the Usage page's ledger shows; a PNG uploaded in the
// playground is upscaled, its progress reaches the end, the before/after preview shows both images
// and the downloaded output has the size the run lists; the app run is not visible through /v1;
// with a ceiling of 2 runs an hour, an app run and an API run make the third start 429 on both
// sides. axe-core finds no serious or critical violation on the four pages; their screenshots in
// docs/console come from here. Every wait is on state, never a fixed sleep.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { describe, test, type TestContext } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import sharp from 'sharp';
import type { RunWorker } from '../src/runs/worker.js';
import { updateTeam } from '../src/teams/repository.js';
import { createToolRegistry } from '../src/tools/registry.js';
import { axeScan, launchBrowser, newPage, screenshot, seriousViolations } from './helpers/browser.js';
import { acceptInvite, clickRun, consoleBackendPresent, fillPlayground, inviteLinkFor, openPage } from './helpers/console-browser.js';
import { consoleSuite } from './helpers/console-suite.js';
import { api, uploadReadyFile } from './helpers/faults.js';
import { makeTeam, type TeamFixture } from './helpers/fixtures.js';
import { makePng } from './helpers/media.js';
import { killLiveChildren } from './helpers/process.js';
import { startTestWorker } from './helpers/worker.js';

const MISSING = 'the console runs back end (/console/api/runs) is not in this tree';
const PASSWORD = 'owner password 4 the console';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

let present = false;
let browser: Browser | null = null;
let worker: RunWorker | null = null;
let owner: { page: Page; problems: string[] } | null = null;
/** The main team; the ceiling team has runs_per_hour = 2. */
let team: TeamFixture;
let ceilingTeam: TeamFixture;
let freeTeam: TeamFixture;
let png: Buffer;

/** True when the run routes answer (401 without a session), not 404 unknown path. */
async function runsBackendPresent(baseUrl: string): Promise<boolean> {
  if (!(await consoleBackendPresent(baseUrl))) return false;
  const res = await fetch(`${baseUrl}/console/api/runs`);
  return res.status !== 404;
}

const { server, url } = consoleSuite({
  async setUp(s) {
    present = await runsBackendPresent(s.url);
    if (!present) return;
    browser = await launchBrowser();
    png = await makePng(64, 48);
    team = await makeTeam(s.database.db, { plan: 'pro', sparks: 500 });
    ceilingTeam = await makeTeam(s.database.db, { plan: 'pro', sparks: 500 });
    await updateTeam(s.database.db.pool, ceilingTeam.teamId, { runsPerHour: 2 });
    // Made on Pro (a key needs a paid plan), then moved to Free.
    freeTeam = await makeTeam(s.database.db, { plan: 'pro', sparks: 50 });
    await updateTeam(s.database.db.pool, freeTeam.teamId, { plan: 'free' });
  },
  async tearDown() {
    await worker?.stop(5_000);
    await browser?.close();
    killLiveChildren();
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

/** The run as the console API answers it, asked from inside the signed-in page. */
async function consoleRun(page: Page, runId: string): Promise<{ status: string; outputs: { asset_id: string; file_name: string; size_bytes: number; width: number | null; height: number | null }[] }> {
  return page.evaluate(async (id) => (await fetch(`/console/api/runs/${id}`)).json(), runId);
}

/** The status badge of the run page, once it reads `status`. */
async function waitStatus(page: Page, status: string): Promise<void> {
  await page.locator('.stats').getByText(status, { exact: true }).waitFor();
}

describe('runs, playground and usage in Chromium', () => {
  test('sign in through an invite link; the new pages are in the navigation', async (t) => {
    if (!present) return t.skip(MISSING);
    assert.ok(browser);
    owner = await newPage(browser);
    await acceptInvite(owner.page, await inviteLinkFor(server(), team.memberId), PASSWORD);
    for (const link of ['Runs', 'Playground', 'Usage'] as const) await openPage(owner.page, link);
  });

  test('an app run left queued (no worker) is canceled: its hold is released, on the run page and in the Usage ledger', async (t) => {
    const page = ownerPage(t);
    if (!page) return;
    await openPage(page, 'Playground');
    const sparks = await fillPlayground(page, 'image_upscale', 'Image', { name: 'queued.png', buffer: png });
    // 2 Sparks plus 1 per started megapixel.
    assert.equal(sparks, 3);
    const runId = await clickRun(page);
    await page.getByRole('heading', { level: 1, name: 'Upscale image' }).waitFor();
    await waitStatus(page, 'Queued');
    // Where it stands: its team's queue, not everyone's (issue 20).
    await page.getByText(/^Next in your team's queue: your team is running 0 of the \d+ runs it may run at once\.$/).waitFor();
    await page.getByRole('row', { name: /^Hold/ }).waitFor();

    await page.getByRole('button', { name: 'Cancel run' }).click();
    const dialog = page.getByRole('dialog', { name: /Cancel this/ });
    await dialog.getByRole('button', { name: 'Cancel run' }).click();
    await dialog.waitFor({ state: 'detached' });
    await waitStatus(page, 'Canceled');
    assert.equal(await page.getByRole('button', { name: 'Cancel run' }).count(), 0, 'no Cancel on a final run');
    const release = page.getByRole('row', { name: /^Release/ });
    await release.waitFor();
    assert.match(await release.innerText(), /\+3/);

    await openPage(page, 'Usage');
    await page.getByLabel('Kind', { exact: true }).selectOption('release');
    const ledger = page.getByRole('region', { name: 'Ledger entries' });
    // The filtered page has come when no other kind is left in the table.
    await page.waitForFunction(() => {
      const kinds = [...document.querySelectorAll('[aria-label="Ledger entries"] tbody th')].map((th) => th.textContent);
      return kinds.length > 0 && kinds.every((k) => k === 'Release');
    });
    const row = ledger.getByRole('row').filter({ has: page.locator(`a[href="/console/runs/${runId}"]`) });
    assert.match(await row.innerText(), /Release[\s\S]*\+3/);

    // Another run, left queued for the next test: the runs page shows it working.
    await openPage(page, 'Playground');
    await fillPlayground(page, 'image_upscale', 'Image', { name: 'later.png', buffer: png });
    await clickRun(page);
    await waitStatus(page, 'Queued');
    await openPage(page, 'Runs');
    const queued = page.getByRole('region', { name: 'Runs', exact: true }).locator('tbody tr').first();
    await queued.getByText('Queued', { exact: true }).waitFor();
    await queued.getByRole('progressbar').waitFor();
    assert.deepEqual(owner?.problems, []);
  });

  test('upload a PNG in the playground, run image_upscale: progress reaches the end, before/after preview, download has the listed size; /v1 does not see the app run', async (t) => {
    const page = ownerPage(t);
    if (!page) return;
    // The runs page follows the queued run to its end by itself, without reloading the page.
    await page.evaluate(() => ((window as unknown as { notReloaded: boolean }).notReloaded = true));
    worker = await startTestWorker(server(), createToolRegistry(), { concurrency: 2 });
    const first = page.getByRole('region', { name: 'Runs', exact: true }).locator('tbody tr').first();
    await first.getByText('Succeeded', { exact: true }).waitFor();
    assert.equal(await first.getByRole('progressbar').count(), 0, 'no progress bar on a final run');
    assert.equal(await page.evaluate(() => (window as unknown as { notReloaded?: boolean }).notReloaded), true);

    // The tool named in the address is the one chosen.
    await page.goto(`${url()}/console/playground?tool=image_upscale`);
    await page.getByRole('heading', { level: 1, name: 'Playground' }).waitFor();
    assert.equal(await page.getByLabel('Tool', { exact: true }).inputValue(), 'image_upscale');
    await fillPlayground(page, 'image_upscale', 'Image', { name: 'photo.png', buffer: png });
    const upload = page.getByRole('progressbar', { name: 'Upload of photo.png' });
    assert.equal(await upload.evaluate((p: HTMLProgressElement) => p.value), 1);
    await assertAccessible(page, 'the playground');
    await screenshot(page, 'playground');

    const runId = await clickRun(page);
    assert.match(runId, UUID);
    await page.getByRole('heading', { level: 1, name: 'Upscale image' }).waitFor();
    // Polled live until final: the progress bar ends full and the status reads Succeeded.
    await waitStatus(page, 'Succeeded');
    await page.waitForFunction(() => (document.querySelector('progress[aria-label="Run progress"]') as HTMLProgressElement | null)?.value === 1);
    await page.getByRole('row', { name: /^Charge/ }).waitFor();

    // The before/after comparison: the 64 x 48 input under the 128 x 96 output, a Compare slider.
    const beforeImg = page.getByRole('img', { name: 'Before: photo.png' });
    const afterImg = page.getByRole('img', { name: /^After: / });
    await page.waitForFunction(() => [...document.querySelectorAll<HTMLImageElement>('.compare img')].every((i) => i.complete && i.naturalWidth > 0));
    assert.equal(await beforeImg.evaluate((i: HTMLImageElement) => i.naturalWidth), 64);
    assert.equal(await afterImg.evaluate((i: HTMLImageElement) => i.naturalWidth), 128);
    const compare = page.getByLabel('Compare');
    await compare.fill('20');
    assert.equal(await compare.inputValue(), '20');

    // Download asks for a fresh signed URL at the click; the file has the size the run lists.
    const run = await consoleRun(page, runId);
    const output = run.outputs[0];
    assert.ok(output, 'one output');
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: `Download ${output.file_name}` }).click()]);
    const file = await download.path();
    const bytes = fs.readFileSync(file);
    assert.equal(bytes.length, output.size_bytes);
    const meta = await sharp(bytes).metadata();
    assert.deepEqual([meta.width, meta.height], [128, 96]);
    assert.deepEqual([output.width, output.height], [128, 96]);
    await assertAccessible(page, 'the run page');
    await screenshot(page, 'run');

    // An app run is not an API run: any key of the team gets 404 run_not_found.
    const v1 = await api<{ error: { code: string } }>(url(), team.key, 'GET', `/v1/runs/${runId}`);
    assert.equal(v1.status, 404);
    assert.equal(v1.body.error.code, 'run_not_found');

    // The runs page: both app runs, newest first, marked App with the member; filters narrow it.
    await openPage(page, 'Runs');
    const rows = page.getByRole('region', { name: 'Runs', exact: true }).locator('tbody tr');
    await page.getByRole('link', { name: 'Upscale image' }).first().waitFor();
    assert.equal(await rows.count(), 3);
    assert.match(await rows.nth(0).innerText(), /Succeeded[\s\S]*App/);
    assert.match(await rows.nth(1).innerText(), /Succeeded[\s\S]*App/);
    assert.match(await rows.nth(2).innerText(), /Canceled[\s\S]*App/);
    await page.getByLabel('Status', { exact: true }).selectOption('canceled');
    await page.waitForFunction(() => document.querySelectorAll('[aria-label="Runs"] tbody tr').length === 1);
    assert.match(await rows.nth(0).innerText(), /Canceled/);
    await page.getByLabel('Status', { exact: true }).selectOption('');
    await page.waitForFunction(() => document.querySelectorAll('[aria-label="Runs"] tbody tr').length === 3);
    await assertAccessible(page, 'the runs page');
    await screenshot(page, 'runs');
    // A row leads to its run's page.
    await rows.nth(0).getByRole('link', { name: 'Upscale image' }).click();
    await page.waitForURL(`${url()}/console/runs/${runId}`);

    // Usage: Sparks available, the chart of 30 days, runs per tool, the ledger.
    await openPage(page, 'Usage');
    await page.getByRole('img', { name: /Sparks spent per day/ }).waitFor();
    assert.equal(await page.locator('.chart rect.bar').count(), 30);
    await page.getByRole('row', { name: /Upscale image/ }).waitFor();
    await page.getByRole('region', { name: 'Ledger entries' }).waitFor();
    await assertAccessible(page, 'the usage page');
    await screenshot(page, 'usage');
    assert.deepEqual(owner?.problems, []);
  });

  test('an API run of brand_kit_extract on an image: the run page draws the kit as colour swatches', async (t) => {
    const page = ownerPage(t);
    if (!page) return;
    const fileId = await uploadReadyFile(url(), team.key, png, 'brand.png', 'image/png');
    const started = await api<{ id: string }>(url(), team.key, 'POST', '/v1/tools/brand_kit_extract/runs', { inputs: { files: [fileId] } });
    assert.equal(started.status, 202, JSON.stringify(started.body));
    await page.goto(`${url()}/console/runs/${started.body.id}`);
    await page.getByRole('heading', { level: 1, name: 'Extract brand kit' }).waitFor();
    await waitStatus(page, 'Succeeded');
    await page.getByRole('heading', { name: 'Colours' }).waitFor();
    assert.ok((await page.locator('.swatch').count()) > 0, 'at least one swatch');
    assert.match((await page.locator('.swatch').first().innerText()).trim(), /^#[0-9a-f]{6}$/);
    await page.getByRole('button', { name: /^Download .*\.json$/ }).waitFor();
    await assertAccessible(page, 'a brand kit run page');
    assert.deepEqual(owner?.problems, []);
  });

  test('a scale 4 run from the playground: the Compare slider lays the 64 x 48 input over its 256 x 192 output, both drawn the same size', async (t) => {
    const page = ownerPage(t);
    if (!page) return;
    await page.goto(`${url()}/console/playground?tool=image_upscale`);
    await page.getByRole('heading', { level: 1, name: 'Playground' }).waitFor();
    await fillPlayground(page, 'image_upscale', 'Image', { name: 'small.png', buffer: png });
    const scale = page.getByLabel('Scale', { exact: true });
    await scale.fill('4');
    await page.getByText(/in steps of 2/).waitFor();
    await page.getByText(/^Estimate: \d+ Sparks$/).waitFor();
    await clickRun(page);
    await page.getByRole('heading', { level: 1, name: 'Upscale image' }).waitFor();
    await waitStatus(page, 'Succeeded');
    const beforeImg = page.getByRole('img', { name: 'Before: small.png' });
    const afterImg = page.getByRole('img', { name: /^After: / });
    await page.waitForFunction(() => [...document.querySelectorAll<HTMLImageElement>('.compare img')].every((i) => i.complete && i.naturalWidth > 0));
    assert.equal(await beforeImg.evaluate((i: HTMLImageElement) => i.naturalWidth), 64);
    assert.equal(await afterImg.evaluate((i: HTMLImageElement) => i.naturalWidth), 256);
    assert.equal(await afterImg.evaluate((i: HTMLImageElement) => i.naturalHeight), 192);
    const [b, a] = [await beforeImg.boundingBox(), await afterImg.boundingBox()];
    assert.ok(a && b && a.width > 0, 'both images are drawn');
    assert.ok(Math.abs(a.width - b.width) <= 1 && Math.abs(a.height - b.height) <= 1, `before ${JSON.stringify(b)} vs after ${JSON.stringify(a)}`);
    const compare = page.getByLabel('Compare');
    await compare.fill('70');
    assert.match(await beforeImg.evaluate((i: HTMLImageElement) => i.style.clipPath), /inset\(0(px)? 30% 0(px)? 0(px)?\)/);
    await assertAccessible(page, 'a 4x run page');
    assert.deepEqual(owner?.problems, []);
  });

  test('a ceiling of 2 runs an hour: one app run and one API run, then the third start is 429 in the console and on /v1', async (t) => {
    if (!present) return t.skip(MISSING);
    assert.ok(browser);
    const { page, problems } = await newPage(browser);
    await acceptInvite(page, await inviteLinkFor(server(), ceilingTeam.memberId), PASSWORD);
    await openPage(page, 'Playground');
    await fillPlayground(page, 'image_upscale', 'Image', { name: 'first.png', buffer: png });
    await clickRun(page);

    const fileId = await uploadReadyFile(url(), ceilingTeam.key, png, 'second.png', 'image/png');
    const second = await api(url(), ceilingTeam.key, 'POST', '/v1/tools/image_upscale/runs', { inputs: { image: [fileId] } });
    assert.equal(second.status, 202, JSON.stringify(second.body));

    // The third through the console: 429, said next to the Run button.
    await openPage(page, 'Playground');
    await fillPlayground(page, 'image_upscale', 'Image', { name: 'third.png', buffer: png });
    const [answer] = await Promise.all([
      page.waitForResponse((r) => r.url().endsWith('/console/api/tools/image_upscale/runs') && r.request().method() === 'POST'),
      page.getByRole('button', { name: 'Run', exact: true }).click(),
    ]);
    assert.equal(answer.status(), 429);
    assert.equal(((await answer.json()) as { error: { code: string } }).error.code, 'rate_limited');
    await page.getByRole('alert').filter({ hasText: /2 runs/ }).waitFor();
    assert.match(page.url(), /\/console\/playground/, 'no run page for a refused start');

    // And the third through /v1.
    const third = await api<{ error: { code: string } }>(url(), ceilingTeam.key, 'POST', '/v1/tools/image_upscale/runs', { inputs: { image: [fileId] } });
    assert.equal(third.status, 429);
    assert.equal(third.body.error.code, 'rate_limited');
    assert.ok(third.headers.get('retry-after'), 'Retry-After on the 429');

    // The runs page lists both: the API run by its key's name, the app run as App; the Key filter keeps the API run.
    await openPage(page, 'Runs');
    const rows = page.getByRole('region', { name: 'Runs', exact: true }).locator('tbody tr');
    await page.getByRole('link', { name: 'Upscale image' }).nth(1).waitFor();
    assert.match(await rows.nth(0).innerText(), /Key “[^”]+”/);
    assert.match(await rows.nth(1).innerText(), /App/);
    await page.getByLabel('Key', { exact: true }).selectOption({ index: 1 });
    await page.waitForFunction(() => document.querySelectorAll('[aria-label="Runs"] tbody tr').length === 1);
    assert.match(await rows.nth(0).innerText(), /Key “/);

    // A 422 on a tool input is shown next to its field (the estimate follows the inputs).
    await openPage(page, 'Playground');
    await fillPlayground(page, 'image_color_grade', 'Image', { name: 'grade.png', buffer: png });
    const temperature = page.getByLabel('Temperature', { exact: true });
    await temperature.fill('500');
    await page.locator('input[aria-invalid="true"]').waitFor();
    assert.equal(await temperature.getAttribute('aria-invalid'), 'true');
    const describedBy = (await temperature.getAttribute('aria-describedby')) ?? '';
    assert.match(await page.locator(`[id="${describedBy.split(' ')[0]}"]`).innerText(), /Temperature must be from -100 to 100/);
    await temperature.fill('10');
    await page.getByText(/^Estimate: \d+ Sparks$/).waitFor();
    assert.equal(await temperature.getAttribute('aria-invalid'), null);
    assert.deepEqual(problems, []);
    await page.context().close();
  });

  test('a Free team sees why the playground is closed, and no form', async (t) => {
    if (!present) return t.skip(MISSING);
    assert.ok(browser);
    const { page, problems } = await newPage(browser);
    await acceptInvite(page, await inviteLinkFor(server(), freeTeam.memberId), PASSWORD);
    await openPage(page, 'Playground');
    await page.getByRole('note').getByText(/Free plan/).waitFor();
    assert.equal(await page.getByLabel('Tool', { exact: true }).count(), 0);
    assert.equal(await page.getByRole('button', { name: 'Run', exact: true }).count(), 0);
    await assertAccessible(page, "a Free team's playground");
    assert.deepEqual(problems, []);
    await page.context().close();
  });
});
