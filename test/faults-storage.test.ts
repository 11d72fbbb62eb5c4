// Fault: the storage is full when a run stores its output. Twice: the local backend on a real,
// small tmpfs filled until too little room is left (skipped, with the reason, where this machine
// cannot mount one), and the S3 backend whose server refuses the output PUT as MinIO does when
// its drives are full. Each run must fail with a message that says what happened, release its
// hold, leave no output rows or objects (not even a partial temporary file), and the same worker
// must go on: once there is room again, the next run succeeds.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before, describe, test } from 'node:test';
import sharp from 'sharp';
import type { RunWorker } from '../src/runs/worker.js';
import { createToolRegistry } from '../src/tools/registry.js';
import { makeTeam, type TeamFixture } from './helpers/fixtures.js';
import { api, assertTeamBalanced, uploadReadyFile } from './helpers/faults.js';
import { filesUnder, mountTmpfs, type Tmpfs } from './helpers/faults-disk.js';
import { FullS3 } from './helpers/faults-s3.js';
import { assertSettledOnce, ledgerKinds, parseLogLines, waitFinal, type RunState } from './helpers/runs-harness.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { startTestWorker } from './helpers/worker.js';

/** A server on the storage under test, one worker, a team and its uploaded image. */
class Rig {
  s!: TestServer;
  worker!: RunWorker;
  team!: TeamFixture;
  imageId = '';

  async open(env: Record<string, string>): Promise<void> {
    this.s = await startTestServer({ env });
    this.worker = await startTestWorker(this.s, createToolRegistry(), { concurrency: 1 });
    this.team = await makeTeam(this.s.database.db, { sparks: 1000, rate: 300 });
    // Noise compresses badly: the 2x output is megabytes, far more than the room left for it.
    const noisy = await sharp({ create: { width: 1000, height: 1000, channels: 3, background: '#808080', noise: { type: 'gaussian', mean: 128, sigma: 40 } } })
      .jpeg({ quality: 90 })
      .toBuffer();
    this.imageId = await uploadReadyFile(this.s.url, this.team.key, noisy, 'noisy.jpg', 'image/jpeg');
  }

  async close(): Promise<void> {
    await this.worker?.stop(1000);
    await this.s?.close();
  }

  db() {
    return this.s.database.db.pool;
  }

  async upscale(): Promise<string> {
    const res = await api<{ id: string }>(this.s.url, this.team.key, 'POST', '/v1/tools/image_upscale/runs', { inputs: { image: [this.imageId] } });
    assert.equal(res.status, 202, JSON.stringify(res.body));
    return res.body.id;
  }

  async sparks(): Promise<number> {
    return (await api<{ sparks_available: number }>(this.s.url, this.team.key, 'GET', '/v1/me')).body.sparks_available;
  }

  /** Runs an upscale that must fail as the storage refuses its output; returns the settled run. */
  async failingRun(problem: RegExp): Promise<RunState> {
    const before = await this.sparks();
    const id = await this.upscale();
    const failed = await waitFinal(this.db(), id, 60_000);
    assert.equal(failed.status, 'failed');
    assert.equal(failed.attempts, 1, 'failed once, not retried');
    assert.match(failed.error ?? '', problem);
    assert.match(failed.error ?? '', /The run was not charged; its hold was released\.$/);
    assert.doesNotMatch(failed.error ?? '', /\/|ENOSPC|127\.0\.0\.1/, 'no paths, hosts or errno names in what the client reads');
    await assertSettledOnce(this.db(), failed);
    assert.deepEqual(await ledgerKinds(this.db(), id), { hold: 1, release: 1 });
    const seen = await api<{ status: string; outputs: unknown[]; cost_sparks: number; error: string }>(this.s.url, this.team.key, 'GET', `/v1/runs/${id}`);
    assert.deepEqual([seen.status, seen.body.status, seen.body.outputs, seen.body.cost_sparks, seen.body.error], [200, 'failed', [], 0, failed.error]);
    const { rows } = await this.db().query(`SELECT id FROM run_outputs WHERE run_id = $1::uuid`, [id]);
    assert.deepEqual(rows, [], 'no output rows');
    assert.equal(await this.sparks(), before, 'the hold came back');
    await assertTeamBalanced(this.db(), this.team.teamId);
    // The operator is told what failed, once, with the cause.
    const lines = parseLogLines(this.s.logs.text()).filter((l) => l.run_id === id && l.msg === 'storing outputs failed');
    assert.equal(lines.length, 1, 'one error line for the operator');
    return failed;
  }

  /** An upscale that succeeds with the same worker; returns its run id. */
  async succeedingRun(): Promise<string> {
    const id = await this.upscale();
    const ok = await waitFinal(this.db(), id, 60_000);
    assert.equal(ok.status, 'succeeded', ok.error ?? '');
    await assertSettledOnce(this.db(), ok);
    const out = await api<{ outputs: { size_bytes: number }[] }>(this.s.url, this.team.key, 'GET', `/v1/runs/${id}`);
    assert.equal(out.body.outputs.length, 1);
    assert.ok((out.body.outputs[0]?.size_bytes ?? 0) > 256 * 1024, 'the output is bigger than the room the failed run had');
    await assertTeamBalanced(this.db(), this.team.teamId);
    return id;
  }
}

describe('local storage full (a real tmpfs)', () => {
  const rig = new Rig();
  let disk: Tmpfs | null = null;
  let skipped = '';

  before(async () => {
    const mounted = mountTmpfs(32 * 1024 * 1024);
    if ('skip' in mounted) {
      skipped = mounted.skip;
      return;
    }
    disk = mounted;
    await rig.open({ TOOLRUN_STORAGE: `file://${disk.dir}` });
  }, { timeout: 120_000 });

  after(async () => {
    await rig.close();
    disk?.unmount();
  }, { timeout: 60_000 });

  test('the run fails saying the disk is full, refunds, leaves no file; with room again the next run succeeds', { timeout: 180_000 }, async (t) => {
    if (!disk) return t.skip(skipped);
    const filesBefore = filesUnder(disk.dir);
    const filler = disk.fill(256 * 1024);
    const failed = await rig.failingRun(/^The output could not be stored: the storage is full \(no space left on the device\)\./);
    assert.deepEqual(filesUnder(disk.dir), [...filesBefore, 'filler.bin'].sort(), 'no output file, not even a partial temporary one');
    const line = parseLogLines(rig.s.logs.text()).find((l) => l.run_id === failed.id && l.msg === 'storing outputs failed');
    assert.equal((line?.err as { code?: string } | undefined)?.code, 'ENOSPC');

    fs.rmSync(filler);
    await rig.succeedingRun();
  });
});

describe('S3 storage full (the server refuses the output PUT)', () => {
  const rig = new Rig();
  const BUCKET = 'toolrun-faults';
  let s3: FullS3;
  const saved: Record<string, string | undefined> = {};

  before(async () => {
    // The service's S3 client takes its credentials from the SDK's default chain, i.e. these.
    for (const k of ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_REGION']) saved[k] = process.env[k];
    s3 = await FullS3.start(BUCKET);
    process.env.AWS_ACCESS_KEY_ID = s3.credentials.accessKeyId;
    process.env.AWS_SECRET_ACCESS_KEY = s3.credentials.secretAccessKey;
    process.env.AWS_REGION = s3.region;
    await rig.open({ TOOLRUN_STORAGE: `s3://${s3.bucket}/pre`, TOOLRUN_S3_ENDPOINT: s3.endpoint, AWS_REGION: s3.region });
  }, { timeout: 120_000 });

  after(async () => {
    await rig.close();
    await s3?.close();
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }, { timeout: 60_000 });

  test('the run fails saying what the storage answered, refunds, leaves no object; with room the next run succeeds, a 503 retried', { timeout: 180_000 }, async () => {
    const outputs = `pre/outputs/${rig.team.teamId}/`;
    s3.full = true;
    const failed = await rig.failingRun(/^The output could not be stored: the storage answered XMinioStorageFull \(HTTP 507\)\./);
    assert.deepEqual(s3.refused.map((r) => r.status), [507], 'one PUT, refused, not retried: a full disk stays full');
    assert.ok(s3.refused[0]?.path.includes(`/${outputs}${failed.id}/`));
    assert.deepEqual(await s3.keys(outputs), [], 'no output object');

    // Room again, and one passing 503 SlowDown on the way: the PUT is retried and the run succeeds.
    s3.full = false;
    s3.hiccups = 1;
    const ok = await rig.succeedingRun();
    assert.deepEqual(s3.refused.map((r) => r.status), [507, 503]);
    assert.ok(s3.refused[1]?.path.includes(`/${outputs}${ok}/`));
    const { rows } = await rig.db().query<{ storage_key: string }>(`SELECT storage_key FROM run_outputs WHERE run_id = $1::uuid`, [ok]);
    assert.deepEqual(await s3.keys(outputs), rows.map((r) => `pre/${r.storage_key}`), 'exactly the recorded output is stored');
  });
});
