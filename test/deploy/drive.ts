// The drive both ways of running go through (compose and `podman kube play`), from the host and
// through the public API only, except where an operator would use the operator CLI: a key made
// with `toolrun admin` inside an API container; an image uploaded through one API replica and
// image_upscale started through the other; a worker stopped gracefully, the run started, the
// other worker killed (SIGKILL) mid-run and the stopped one started again, which must finish the
// run (unless killWorker is off); the output downloaded and checked; the run.succeeded webhook
// received on the host and its signature verified. With a browser in the image, a render-mode
// brand kit as well.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { Toolrun, verifyWebhook, type Run } from '@toolrun/sdk';
import { RENDERED_BRAND, ShellPage, WebhookReceiver, type RunCa } from './host-servers.js';
import { note, waitFor } from './podman.js';

export interface WorkerHandle {
  name: string;
  /** SIGTERM and wait; resolves with the exit status. */
  stop(): Promise<number>;
  start(): Promise<void>;
  /** SIGKILL: a crash, as far as the run is concerned. */
  kill(): Promise<void>;
  logs(): Promise<string>;
}

export interface Stack {
  name: string;
  /** Where the host reaches each API replica. */
  apiUrls: string[];
  /** The host's address on the containers' network. */
  gateway: string;
  /** `toolrun admin <args>` in an API container; its stdout. */
  admin(args: string[]): Promise<string>;
  workers: [WorkerHandle, WorkerHandle];
  /** Whether the image has Chromium (TOOLRUN_BROWSER_PATH). */
  browser: boolean;
}

export interface DriveResult {
  runId: string;
  /** Seconds from the kill to the run's success on the other worker (null: no worker killed). */
  takeoverSeconds: number | null;
}

export interface DriveOptions {
  /** Stop one worker, kill the other mid-run, start the first again (default true). */
  killWorker?: boolean;
  /** Where output URLs must point (the S3 endpoint), when not at the API. */
  storageUrl?: string;
}

/** A team, its owner and a key with every scope, made with the operator CLI as an operator would. */
async function operatorKey(stack: Stack): Promise<string> {
  const team = JSON.parse(await stack.admin(['team', 'create', '--name', `deploy test ${stack.name}`, '--plan', 'pro', '--sparks', '100000'])) as { team: { id: string } };
  const member = JSON.parse(await stack.admin(['member', 'add', '--team', team.team.id, '--email', `ci-${stack.name}@example.com`, '--role', 'owner'])) as { member: { id: string } };
  const key = JSON.parse(await stack.admin(['key', 'create', '--member', member.member.id, '--name', 'deploy test', '--scopes', 'read,run,webhooks', '--rate', '300'])) as { key: string };
  assert.match(key.key, /^svc_test_/);
  return key.key;
}

/** Noise, so the upscale takes long enough to kill a worker in the middle of it. */
async function testImage(dir: string, width: number, height: number): Promise<string> {
  const file = path.join(dir, 'input.jpg');
  await sharp({ create: { width, height, channels: 3, background: '#808080', noise: { type: 'gaussian', mean: 128, sigma: 40 } } }).jpeg({ quality: 85 }).toFile(file);
  return file;
}

async function renderedKit(client: Toolrun, page: ShellPage): Promise<void> {
  const run = await client.runs.start('brand_kit_extract', { inputs: { url: page.url } });
  const done = await client.runs.wait(run, { timeoutMs: 180_000 });
  assert.equal(done.status, 'succeeded', JSON.stringify(done.error));
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'toolrun-deploy-kit-'));
  try {
    const files = await client.runs.download(done, dir);
    const kitFile = files.find((f) => f.path.endsWith('.json'));
    assert.ok(kitFile, `no JSON output among ${files.map((f) => f.path).join(', ')}`);
    const kit = JSON.parse(fs.readFileSync(kitFile.path, 'utf8')) as { name: string; roles: { primary?: string }; warnings: string[] };
    assert.deepEqual(kit.warnings.filter((w) => /could not be rendered|scripts/.test(w)), [], 'the page was read without a browser');
    assert.equal(kit.name, RENDERED_BRAND.name);
    assert.equal(kit.roles.primary, RENDERED_BRAND.primary);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** image_upscale started through one replica; with killWorker, one worker killed under it. */
async function upscaleRun(stack: Stack, via: Toolrun, fileId: string, killWorker: boolean): Promise<{ done: Run; takeoverSeconds: number | null }> {
  const [workerA, workerB] = stack.workers;
  if (!killWorker) {
    const started = await via.runs.start('image_upscale', { inputs: { image: [fileId], method: 'learned' } });
    return { done: await via.runs.wait(started, { timeoutMs: 300_000 }), takeoverSeconds: null };
  }
  assert.equal(await workerB.stop(), 0, `${workerB.name} did not exit 0 on SIGTERM`);
  const started = await via.runs.start('image_upscale', { inputs: { image: [fileId], method: 'learned' } });
  await waitFor(`run ${started.id} running on ${workerA.name}`, async () => ((await via.runs.get(started)).status === 'running' ? true : undefined), 120_000, 200);
  await workerB.start();
  await workerA.kill();
  const killedAt = Date.now();
  note(`${stack.name}: ${workerA.name} killed while run ${started.id} was running; ${workerB.name} started again`);

  const done = await via.runs.wait(started, { timeoutMs: 300_000 });
  const takeoverSeconds = (Date.now() - killedAt) / 1000;
  assert.equal(done.status, 'succeeded', JSON.stringify(done.error));
  const succeededIn = (log: string) => log.split('\n').some((l) => l.includes(started.id) && l.includes('"run succeeded"'));
  assert.ok(succeededIn(await workerB.logs()), `${workerB.name}'s log has no "run succeeded" for ${started.id}`);
  assert.ok(!succeededIn(await workerA.logs()), `${workerA.name} finished the run before it was killed`);
  note(`${stack.name}: run finished by ${workerB.name} ${takeoverSeconds.toFixed(1)} s after the kill`);
  return { done, takeoverSeconds };
}

export async function drive(stack: Stack, ca: RunCa, opts: DriveOptions = {}): Promise<DriveResult> {
  const apiKey = await operatorKey(stack);
  note(`${stack.name}: key made with the operator CLI`);
  const [urlA, urlB = urlA] = stack.apiUrls;
  assert.ok(urlA);
  const viaA = new Toolrun({ apiKey, baseUrl: urlA });
  const viaB = new Toolrun({ apiKey, baseUrl: urlB });
  // Both replicas know the key at once: keys live in PostgreSQL.
  assert.equal((await viaA.me()).team.plan, 'pro');
  assert.equal((await viaB.me()).team.plan, 'pro');

  const receiver = await new WebhookReceiver(stack.gateway, ca).start();
  const page = stack.browser ? await new ShellPage(stack.gateway).start() : null;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'toolrun-deploy-run-'));
  try {
    const endpoint = await viaA.webhookEndpoints.create({ url: receiver.url, events: ['run.succeeded'] });
    const secret = endpoint.signing_secret;
    assert.ok(secret);

    const [width, height] = [2400, 2000];
    const file = await viaB.files.upload(await testImage(dir, width, height));
    assert.equal(file.status, 'ready');
    note(`${stack.name}: ${width}x${height} JPEG uploaded through the second API replica`);

    const { done, takeoverSeconds } = await upscaleRun(stack, viaA, file.id, opts.killWorker ?? true);
    assert.equal(done.status, 'succeeded', JSON.stringify(done.error));

    const output = done.outputs[0];
    assert.ok(output);
    // download() waits out 409 output_not_ready (the stored copy's check can outlast the run's
    // end, longer on S3); the URL is asked for after it, when a second ask answers at once.
    const outputs = await viaB.runs.download(done, dir);
    assert.equal(outputs.length, 1);
    const signed = await viaB.runs.outputUrl(done.id, output.asset_id);
    assert.ok(signed.url.startsWith(opts.storageUrl ?? urlA), `the output is served from ${new URL(signed.url).origin}`);
    const meta = await sharp(outputs[0]!.path).metadata();
    assert.deepEqual([meta.width, meta.height], [width * 2, height * 2]);

    const delivery = await waitFor('the run.succeeded webhook on the host', async () => receiver.deliveries.find((d) => d.body.includes(done.id)), 120_000);
    const event = verifyWebhook(delivery.body, delivery.headers['service-signature'], secret);
    assert.equal(event.type, 'run.succeeded');
    note(`${stack.name}: output ${meta.width}x${meta.height} downloaded; signed webhook verified`);

    if (page) {
      await renderedKit(viaA, page);
      note(`${stack.name}: brand_kit_extract rendered a script-built page with Chromium`);
    }
    return { runId: done.id, takeoverSeconds };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
    await receiver.close();
    await page?.close();
  }
}
