// brand_kit_extract's render mode through the API and a real worker: a service started with
// TOOLRUN_BROWSER_PATH reads the empty-shell page (test/helpers/brand-shell.ts) as rendered, one
// started without it reads the shell and warns. The runner called directly:
// tools-brand-kit-render.test.ts.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { SHELL_WARNING } from '../src/tools/brand-kit/render/shell.js';
import { createToolRegistry } from '../src/tools/registry.js';
import type { RunWorker } from '../src/runs/worker.js';
import { assertValidKit } from './helpers/brand-kit.js';
import { SHELL_BRAND, ShellSite } from './helpers/brand-shell.js';
import { CHROMIUM } from './helpers/browser.js';
import { bearer, makeTeam, type TeamFixture } from './helpers/fixtures.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { startTestWorker, waitFor } from './helpers/worker.js';

const present = fs.existsSync(CHROMIUM);
const MISSING = `no Chromium at ${CHROMIUM}: install Debian's chromium (apt-get install chromium), as .ci/run does`;

let site: ShellSite;
before(async () => {
  site = await new ShellSite().start();
});
after(async () => {
  await site.close();
});

/** One service with its own database and an in-process worker. */
async function service(env: Record<string, string>): Promise<{ s: TestServer; worker: RunWorker; team: TeamFixture }> {
  const tools = createToolRegistry();
  const s = await startTestServer({ tools, env: { TOOLRUN_WORKER_POLL_MS: '100', TOOLRUN_ALLOW_PRIVATE_NETWORK: '1', ...env } });
  const worker = await startTestWorker(s, tools, { concurrency: 1 });
  // A render takes seconds (more on a busy CI machine): polls wait on the server (Prefer: wait)
  // and the key's rate has room for them.
  const team = await makeTeam(s.database.db, { sparks: 100, plan: 'pro', rate: 300 });
  return { s, worker, team };
}

async function kitThroughApi(svc: { s: TestServer; team: TeamFixture }, url: string): Promise<unknown> {
  const call = (method: string, path: string, body?: unknown, extra: Record<string, string> = {}) =>
    fetch(`${svc.s.url}${path}`, {
      method,
      headers: { ...bearer(svc.team.key), ...extra, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  const start = await call('POST', '/v1/tools/brand_kit_extract/runs', { inputs: { url } });
  assert.equal(start.status, 202, await start.clone().text());
  const { id } = (await start.json()) as { id: string };
  const run = await waitFor(`run ${id} to finish`, async () => {
    const r = (await (await call('GET', `/v1/runs/${id}`, undefined, { prefer: 'wait=10' })).json()) as { status: string; error: string | null; outputs: { asset_id: string; file_name: string }[] };
    return ['succeeded', 'failed', 'canceled'].includes(r.status) ? r : undefined;
  }, 90_000);
  assert.equal(run.status, 'succeeded', run.error ?? '');
  const output = run.outputs.find((o) => o.file_name === 'brand-kit.json');
  assert.ok(output);
  const download = await waitFor('the output checked', async () => {
    const r = await call('GET', `/v1/runs/${id}/outputs/${output.asset_id}/url`);
    if (r.status === 409) return undefined;
    assert.equal(r.status, 200);
    return ((await r.json()) as { url: string }).url;
  });
  return (await fetch(download)).json();
}

describe('brand_kit_extract render mode through the API', () => {
  test('TOOLRUN_BROWSER_PATH set: the shell page as rendered; unset: the shell, with the warning', async (t) => {
    if (!present) return t.skip(MISSING);
    for (const [env, rendered] of [
      [{ TOOLRUN_BROWSER_PATH: CHROMIUM }, true],
      [{}, false],
    ] as const) {
      const svc = await service(env);
      try {
        const kit = await kitThroughApi(svc, `${site.url}/`);
        assertValidKit(kit);
        if (rendered) {
          assert.equal(kit.name, SHELL_BRAND.name);
          assert.equal(kit.roles.primary, SHELL_BRAND.primary);
          assert.ok(!kit.warnings.includes(SHELL_WARNING));
        } else {
          assert.notEqual(kit.name, SHELL_BRAND.name);
          assert.ok(kit.warnings.includes(SHELL_WARNING));
        }
      } finally {
        await svc.worker.stop(1000);
        await svc.s.close();
      }
    }
  });
});
