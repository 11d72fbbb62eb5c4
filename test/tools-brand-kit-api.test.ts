// brand_kit_extract through the API and a real worker, on two servers (private networks allowed
// or not), each with its own database: the 422 without a source, the test site end to end (its
// outputs stored, save: true keeping the kit, `toolrun admin brand-kits list` showing it), images
// only, and a run on a private address failing clearly with its hold released. The runner
// called directly: tools-brand-kit-runner.test.ts.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import sharp from 'sharp';
import type { RunWorker } from '../src/runs/worker.js';
import { ledgerDrift } from '../src/sparks/ledger.js';
import type { BrandKit } from '../src/tools/brand-kit/schema.js';
import { createToolRegistry } from '../src/tools/registry.js';
import { assertSiteKit, assertValidKit, pixel, twoColourPng } from './helpers/brand-kit.js';
import { BrandSite } from './helpers/brand-site.js';
import { bearer, makeTeam, type TeamFixture } from './helpers/fixtures.js';
import { cleanupDataDir, cliEnv, killLiveChildren, makeDataDir, runCli } from './helpers/process.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { startTestWorker, waitFor } from './helpers/worker.js';

let site: BrandSite;

before(async () => {
  site = await new BrandSite().start();
});
after(async () => {
  killLiveChildren();
  await site.close();
});

interface RunBody {
  id: string;
  status: string;
  cost_sparks: number;
  error: string | null;
  outputs: { asset_id: string; file_name: string; mime_type: string; width: number | null; height: number | null; size_bytes: number }[];
}

/** One API server with its own database and an in-process worker. */
class Api {
  s!: TestServer;
  worker!: RunWorker;
  team!: TeamFixture;

  async start(env: Record<string, string>): Promise<this> {
    const tools = createToolRegistry();
    this.s = await startTestServer({ tools, env: { TOOLRUN_WORKER_POLL_MS: '100', ...env } });
    this.worker = await startTestWorker(this.s, tools, { concurrency: 1 });
    this.team = await makeTeam(this.s.database.db, { sparks: 100, plan: 'pro' });
    return this;
  }

  async stop(): Promise<void> {
    await this.worker?.stop(1000);
    await this.s?.close();
  }

  call(method: string, url: string, body?: unknown, headers: Record<string, string> = {}): Promise<Response> {
    return fetch(`${this.s.url}${url}`, {
      method,
      headers: { ...bearer(this.team.key), ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  }

  async sparks(): Promise<number> {
    return ((await (await this.call('GET', '/v1/me')).json()) as { sparks_available: number }).sparks_available;
  }

  async runToEnd(inputs: Record<string, unknown>): Promise<RunBody> {
    const start = await this.call('POST', '/v1/tools/brand_kit_extract/runs', { inputs });
    assert.equal(start.status, 202, await start.clone().text());
    const run = (await start.json()) as RunBody;
    // Prefer: wait, so a slow run is a few requests, not the key's whole minute of them.
    return waitFor(`run ${run.id} to finish`, async () => {
      const r = (await (await this.call('GET', `/v1/runs/${run.id}`, undefined, { prefer: 'wait=10' })).json()) as RunBody;
      return ['succeeded', 'failed', 'canceled'].includes(r.status) ? r : undefined;
    });
  }

  async download(runId: string, assetId: string): Promise<Buffer> {
    const url = await waitFor('output check', async () => {
      const r = await this.call('GET', `/v1/runs/${runId}/outputs/${assetId}/url`);
      if (r.status === 409) return undefined;
      assert.equal(r.status, 200);
      return ((await r.json()) as { url: string }).url;
    });
    const res = await fetch(url);
    assert.equal(res.status, 200);
    return Buffer.from(await res.arrayBuffer());
  }

  async upload(name: string, bytes: Buffer): Promise<string> {
    const res = await this.call('POST', '/v1/files/upload-url', { file_name: name, mime_type: 'image/png', size_bytes: bytes.length });
    const up = (await res.json()) as { file_id: string; upload_id: string; parts: { part_number: number; url: string }[]; part_size_bytes: number };
    const parts = [];
    for (const p of up.parts) {
      const chunk = bytes.subarray((p.part_number - 1) * up.part_size_bytes, p.part_number * up.part_size_bytes);
      const r = await fetch(p.url, { method: 'PUT', body: Uint8Array.from(chunk) });
      parts.push({ part_number: p.part_number, etag: r.headers.get('etag') ?? '' });
    }
    const done = await this.call('POST', `/v1/files/${up.file_id}/complete`, { upload_id: up.upload_id, parts });
    assert.equal(((await done.json()) as { status: string }).status, 'ready');
    return up.file_id;
  }
}

describe('brand_kit_extract through the API and a real worker', () => {
  const open = new Api();
  const closed = new Api();
  let dataDir: string;

  before(async () => {
    dataDir = makeDataDir('brand-kits');
    await Promise.all([open.start({ TOOLRUN_ALLOW_PRIVATE_NETWORK: '1' }), closed.start({})]);
  });
  after(async () => {
    await Promise.all([open.stop(), closed.stop()]);
    await cleanupDataDir(dataDir);
  });

  test('neither url nor files: 422 on body.inputs.url, nothing held', async () => {
    const before = await open.sparks();
    for (const inputs of [{}, { save: true, files: [] }]) {
      const res = await open.call('POST', '/v1/tools/brand_kit_extract/runs', { inputs });
      assert.equal(res.status, 422);
      const body = (await res.json()) as { error: { code: string; errors: { loc: unknown[]; code: string; message: string }[] } };
      assert.equal(body.error.code, 'invalid_request');
      assert.deepEqual(body.error.errors, [{ loc: ['body', 'inputs', 'url'], message: 'a url or files (at least one image) is needed', code: 'missing_source' }]);
    }
    assert.equal(await open.sparks(), before);
  });

  test('the test site end to end: outputs stored, kit valid, save: true keeps it and the CLI lists it', async () => {
    const run = await open.runToEnd({ url: `${site.url}/`, save: true });
    assert.equal(run.status, 'succeeded', run.error ?? '');
    assert.equal(run.cost_sparks, 5);
    assert.deepEqual(
      run.outputs.map((o) => [o.file_name, o.mime_type, o.width, o.height]),
      [
        ['brand-kit.json', 'application/json', null, null],
        ['logo-1.png', 'image/png', 512, 171],
        ['logo-2.png', 'image/png', 200, 60],
        ['logo-3.png', 'image/png', 180, 180],
        ['logo-4.jpg', 'image/jpeg', 300, 157],
      ],
    );
    const kit: unknown = JSON.parse((await open.download(run.id, run.outputs[0]!.asset_id)).toString('utf8'));
    assertValidKit(kit);
    assertSiteKit(kit, site.url);
    const logo = await open.download(run.id, run.outputs[2]!.asset_id);
    assert.equal((await sharp(logo).metadata()).format, 'png');
    assert.equal(await pixel(logo, 10, 10), '#1a73e8');

    const { rows } = await open.s.database.db.pool.query<{ team_id: string; name: string; kit: BrandKit }>(
      'SELECT team_id, name, kit FROM brand_kits WHERE run_id = $1::uuid',
      [run.id],
    );
    assert.equal(rows.length, 1);
    assert.equal(rows[0]!.team_id, open.team.teamId);
    assert.equal(rows[0]!.name, 'Acme Rockets');
    assert.deepEqual(rows[0]!.kit, kit);

    const cli = await runCli(['admin', 'brand-kits', 'list', '--team', open.team.teamId], cliEnv({ DATABASE_URL: open.s.database.url, TOOLRUN_DATA_DIR: dataDir }));
    assert.equal(cli.code, 0, cli.stderr);
    const listed = JSON.parse(cli.stdout) as { object: string; data: { object: string; id: string; team_id: string; run_id: string; name: string; created_at: string; kit: unknown }[] };
    assert.equal(listed.object, 'list');
    assert.equal(listed.data.length, 1);
    const [item] = listed.data;
    assert.deepEqual({ ...item, id: '', created_at: '' }, { object: 'brand_kit', id: '', team_id: open.team.teamId, run_id: run.id, name: 'Acme Rockets', created_at: '', kit });
    assert.ok(!Number.isNaN(Date.parse(item!.created_at)));
  });

  test('images only through the API, save: false keeps nothing', async () => {
    const fileId = await open.upload('two.png', await twoColourPng(120, 80, '#2e7d32', '#fbc02d'));
    const run = await open.runToEnd({ files: [fileId] });
    assert.equal(run.status, 'succeeded', run.error ?? '');
    assert.equal(run.cost_sparks, 1);
    assert.deepEqual(run.outputs.map((o) => o.file_name), ['brand-kit.json']);
    const kit: unknown = JSON.parse((await open.download(run.id, run.outputs[0]!.asset_id)).toString('utf8'));
    assertValidKit(kit);
    assert.deepEqual(kit.images[0]!.palette.map((p) => p.hex), ['#2e7d32', '#fbc02d']);
    assert.deepEqual(kit.images[0]!.file_id, fileId);
    const { rows } = await open.s.database.db.pool.query('SELECT 1 FROM brand_kits WHERE run_id = $1::uuid', [run.id]);
    assert.equal(rows.length, 0);
  });

  test('private networks not allowed: a loopback url fails the run clearly and releases the hold', async () => {
    const before = await closed.sparks();
    // A name that does not resolve reads exactly like one that resolves inside; the log says which.
    const hosts = ['127.0.0.1', 'localhost', 'does-not-exist.invalid'];
    const refused = () => closed.s.logs.lines.map((l) => JSON.parse(l) as { msg: string; cause?: string }).filter((l) => l.msg === 'outbound host refused');
    const seen = refused().length;
    for (const host of hosts) {
      const run = await closed.runToEnd({ url: `http://${host}:${site.port}/`, save: true });
      assert.equal(run.status, 'failed');
      assert.equal(run.error, `The url is not public: the host ${host} does not resolve to a public address. Only pages on the public internet can be read.`);
      assert.equal(run.cost_sparks, 0);
      assert.deepEqual(run.outputs, []);
    }
    assert.deepEqual(
      refused().slice(seen).map((l) => l.cause),
      [
        'the host 127.0.0.1 resolves to 127.0.0.1: private, loopback or reserved',
        'the host localhost resolves to 127.0.0.1, ::1: private, loopback or reserved',
        'the host does-not-exist.invalid does not resolve (A: ENOTFOUND, AAAA: ENOTFOUND)',
      ],
    );
    assert.equal(await closed.sparks(), before);
    assert.deepEqual(await ledgerDrift(closed.s.database.db.pool), []);
    const { rows } = await closed.s.database.db.pool.query('SELECT 1 FROM brand_kits');
    assert.equal(rows.length, 0);
  });
});
