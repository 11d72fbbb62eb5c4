// toolrun-cli end to end against the real server and a run worker: with --json and no TTY (exit
// codes, output files), and in a pseudo-terminal (progress bars, Ctrl-C offering to cancel).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import sharp from 'sharp';
import { Toolrun, type DownloadedOutput, type Estimate, type Run } from '@toolrun/sdk';
import type { RunWorker } from '../src/runs/worker.js';
import { makeTeam, type TeamFixture } from './helpers/fixtures.js';
import { makePng } from './helpers/media.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { testRegistry } from './helpers/test-tools.js';
import { startTestWorker, waitFor } from './helpers/worker.js';
import { killCliChildren, plain, runCliToEnd, startCli, startCliInPty, toolrunCliEnv } from './helpers/toolrun-cli.js';

const tools = testRegistry();
let s: TestServer;
let worker: RunWorker;
let team: TeamFixture;
let tmp: string;
let photo: string;
let png: Buffer;

before(async () => {
  s = await startTestServer({ tools });
  worker = await startTestWorker(s, tools);
  team = await makeTeam(s.database.db, { sparks: 1000, rate: 300 });
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'sdk-cli-'));
  png = await makePng(40, 30);
  photo = path.join(tmp, 'photo.png');
  fs.writeFileSync(photo, png);
});
after(async () => {
  killCliChildren();
  await worker.stop(1000);
  await s.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

const env = () => toolrunCliEnv(team.key, s.url);
const sdk = () => new Toolrun({ apiKey: team.key, baseUrl: s.url });
const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';

interface RunResult {
  estimate: Estimate;
  files: { slot: string; path: string; file_id: string; status: string }[];
  run: Run;
  outputs: DownloadedOutput[];
}

/** The runs of the team that are in this status now. */
async function runsIn(status: string): Promise<string[]> {
  const { rows } = await s.database.db.pool.query<{ id: string }>('SELECT id FROM runs WHERE team_id = $1::uuid AND status = $2', [team.teamId, status]);
  return rows.map((r) => r.id);
}

describe('--json, no terminal', () => {
  test('run: uploads, starts, follows, downloads; one JSON document; exit 0', async () => {
    const out = path.join(tmp, 'json-out');
    const r = await runCliToEnd(['--json', 'run', 'test_copy', '--file', `image=${photo}`, '--input', 'copies=2', '--out', out], env());
    assert.equal(r.code, 0, r.stderr);
    const result = JSON.parse(r.stdout) as RunResult;
    assert.equal(result.run.status, 'succeeded');
    assert.equal(result.estimate.sparks, 3);
    assert.deepEqual(result.files.map((f) => [f.slot, f.path, f.status]), [['image', photo, 'ready']]);
    assert.deepEqual(result.outputs.map((o) => path.basename(o.path)).sort(), ['copy-1.png', 'copy-2.png']);
    for (const o of result.outputs) assert.deepEqual(fs.readFileSync(o.path), png);
    assert.equal(r.stderr, '', 'no bars or notes without a terminal');
  });

  test('a failed run exits 3; an API error exits 2 with the error as JSON; estimate prints the price', async () => {
    const failed = await runCliToEnd(['--json', 'run', 'test_copy', '-f', `image=${photo}`, '-i', 'mode=fail', '--out', tmp], env());
    assert.equal(failed.code, 3, failed.stderr);
    const result = JSON.parse(failed.stdout) as RunResult;
    assert.equal(result.run.status, 'failed');
    assert.match(result.run.error ?? '', /asked to fail/);

    // (An unknown tool no longer reaches the API: it is a usage error, test/cli-user.test.ts.)
    const api = await runCliToEnd(['--json', 'get', '00000000-0000-4000-8000-000000000000'], env());
    assert.equal(api.code, 2);
    const error = (JSON.parse(api.stdout) as { error: { status: number; code: string; request_id: string } }).error;
    assert.equal(error.status, 404);
    assert.equal(error.code, 'run_not_found');
    assert.match(error.request_id, new RegExp(`^${UUID}$`));

    const est = await runCliToEnd(['--json', 'estimate', 'test_copy', '--file', `image=${photo}`], env());
    assert.equal(est.code, 0, est.stderr);
    assert.equal((JSON.parse(est.stdout) as { estimate: Estimate }).estimate.sparks, 3);
  });

  test('usage errors exit 64: no tool, a bad --input, a missing file, no key', async () => {
    const cases: [string[], NodeJS.ProcessEnv, RegExp][] = [
      [['run'], env(), /missing required argument/],
      [['run', 'test_copy', '--input', 'novalue'], env(), /--input takes NAME=VALUE/],
      [['estimate', 'test_copy', '--file', `image=${path.join(tmp, 'nope.png')}`], env(), /no such file/],
      [['tools'], toolrunCliEnv(null, s.url), /TOOLRUN_API_KEY/],
      [['frobnicate'], env(), /unknown command/],
      [['estimate', 'no_such_tool'], env(), /Unknown tool "no_such_tool"/],
    ];
    for (const [args, e, message] of cases) {
      const r = await runCliToEnd(args, e);
      assert.equal(r.code, 64, `${args.join(' ')}: ${r.stdout} ${r.stderr}`);
      assert.match(r.stderr, message);
    }
  });

  test('tools lists every tool; a run left alone and two SIGINTs cancel it (exit 4)', async () => {
    const list = await runCliToEnd(['tools'], env());
    assert.equal(list.code, 0, list.stderr);
    for (const id of ['image_upscale', 'video_transition', 'brand_kit_extract', 'test_copy']) assert.match(list.stdout, new RegExp(`^${id} `, 'm'));

    const child = startCli(['--json', 'run', 'test_copy', '--file', `image=${photo}`, '--input', 'mode=hang', '--out', tmp], env());
    const runId = await waitFor('a running run', async () => (await runsIn('running'))[0]);
    process.kill(child.pid, 'SIGINT');
    await child.waitForOutput(/press Ctrl-C again .* to cancel run/);
    assert.deepEqual(await runsIn('running'), [runId], 'one interrupt leaves the run running');
    process.kill(child.pid, 'SIGINT');
    assert.equal(await child.code(), 4, child.stderr);
    const result = JSON.parse(child.stdout) as RunResult;
    assert.equal(result.run.status, 'canceled');
    assert.equal((await sdk().runs.get(runId)).status, 'canceled');
  });
});

describe('in a pseudo-terminal', () => {
  test('run image_upscale: upload bar, estimate, run bar, outputs saved; exit 0', async () => {
    const out = path.join(tmp, 'pty-out');
    const child = startCliInPty(['run', 'image_upscale', '--file', `image=${photo}`, '--out', out], env());
    assert.equal(await child.code(), 0, child.stdout);
    const text = plain(child.stdout);
    assert.match(text, /Uploading image=photo\.png \[[█░]+\] 100% \| 5\.\d kB of 5\.\d kB|Uploading image=photo\.png \[[█░]+\] 100% \|/);
    assert.match(text, /Estimate for image_upscale: 3 Sparks/);
    assert.match(text, new RegExp(`Started run (${UUID}) \\(queued, 3 Sparks held\\)`));
    assert.match(text, /Run [0-9a-f]{8} \[[█░]+\] 100% \| succeeded/);
    const saved = /Saved (\S+) \(/.exec(text);
    assert.ok(saved?.[1], text);
    assert.equal(path.dirname(saved[1]), out);
    const meta = await sharp(saved[1]).metadata();
    assert.deepEqual([meta.width, meta.height], [80, 60]);
    assert.match(text, /Done: 3 Sparks charged; 1 output\(s\) in /);
    assert.match(child.stdout, /\u001b\[\?25l/, 'the bars hide the cursor (drawn for a terminal)');
  });

  test('Ctrl-C asks; N goes on following; Ctrl-C again and y cancels the run (exit 4)', async () => {
    const child = startCliInPty(['run', 'test_copy', '--file', `image=${photo}`, '--input', 'mode=hang', '--out', tmp], env());
    const runId = (await child.waitForOutput(new RegExp(`Started run (${UUID})`)))[1] ?? '';
    await waitFor('the run to be running', async () => ((await runsIn('running')).includes(runId) ? true : undefined));
    // The bar drawn at least once: the CLI is following the run (and handling Ctrl-C) by now.
    await child.waitForOutput(new RegExp(`Run ${runId.slice(0, 8)} \\[`));
    child.write('\x03');
    await child.waitForOutput(/Cancel run [0-9a-f-]+\? \[y\/N\] $/);
    child.write('n\r');
    await child.waitForOutput(/\[y\/N\] n\n[^]*Run [0-9a-f]{8} \[/);
    assert.equal((await sdk().runs.get(runId)).status, 'running', 'N leaves the run running');
    const prompts = (child.stdout.match(/\[y\/N\]/g) ?? []).length;
    child.write('\x03');
    await waitFor('a second question', async () => ((child.stdout.match(/\[y\/N\]/g) ?? []).length > prompts ? true : undefined));
    child.write('y\r');
    assert.equal(await child.code(), 4, child.stdout);
    assert.match(plain(child.stdout), new RegExp(`Run ${runId} canceled at your request; its hold was released\\.`));
    assert.equal((await sdk().runs.get(runId)).status, 'canceled');
  });

  test('Ctrl-C twice (at the question) leaves the run running and exits 130', async () => {
    const child = startCliInPty(['run', 'test_copy', '--file', `image=${photo}`, '--input', 'mode=hang', '--out', tmp], env());
    const runId = (await child.waitForOutput(new RegExp(`Started run (${UUID})`)))[1] ?? '';
    child.write('\x03');
    await child.waitForOutput(/\[y\/N\] $/);
    child.write('\x03');
    assert.equal(await child.code(), 130, child.stdout);
    assert.match(plain(child.stdout), new RegExp(`Left run ${runId} (queued|running)\\. .*toolrun-cli cancel ${runId}`));
    const still = await sdk().runs.get(runId);
    assert.ok(['queued', 'running'].includes(still.status), still.status);
    assert.equal((await sdk().runs.cancel(runId)).status, 'canceled');
  });
});
