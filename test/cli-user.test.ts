// toolrun-cli as a user meets it (issue 19), against the real server and a run worker: mistakes
// that GET /v1/tools shows are refused before any upload (exit 64), `tools` shows each input's
// choices, range and default, downloads draw a bar at a terminal only, the Ctrl-C question ends
// its lines, and the documented exit codes hold through `npx toolrun-cli` in a terminal.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import type { Run, ToolList } from '@toolrun/sdk';
import type { RunWorker } from '../src/runs/worker.js';
import { makeTeam, type TeamFixture } from './helpers/fixtures.js';
import { makePng } from './helpers/media.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { testRegistry } from './helpers/test-tools.js';
import { startTestWorker, waitFor } from './helpers/worker.js';
import { CLI_BIN, CliChild, killCliChildren, plain, runCliToEnd, startCliInPty, toolrunCliEnv } from './helpers/toolrun-cli.js';

const tools = testRegistry();
let s: TestServer;
let worker: RunWorker;
let team: TeamFixture;
let tmp: string;
let photo: string;
let pdf: string;
const escaped = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

before(async () => {
  s = await startTestServer({ tools });
  worker = await startTestWorker(s, tools);
  team = await makeTeam(s.database.db, { sparks: 1000, rate: 300 });
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'cli-user-'));
  photo = path.join(tmp, 'photo.png');
  fs.writeFileSync(photo, await makePng(40, 30));
  pdf = path.join(tmp, 'scan.png');
  fs.writeFileSync(pdf, '%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n');
});
after(async () => {
  killCliChildren();
  await worker.stop(1000);
  await s.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

const env = () => toolrunCliEnv(team.key, s.url);
const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';

/** Files the team has, in any state: an upload, even one never completed, adds a row. */
async function teamFiles(): Promise<number> {
  const { rows } = await s.database.db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM files WHERE team_id = $1::uuid', [team.teamId]);
  return rows[0]?.n ?? 0;
}

async function runStatus(id: string): Promise<string | undefined> {
  const { rows } = await s.database.db.pool.query<{ status: string }>('SELECT status FROM runs WHERE id = $1::uuid', [id]);
  return rows[0]?.status;
}

describe('refused from GET /v1/tools before any upload: exit 64', () => {
  test('unknown tool or input, a choice not offered, a number out of range or not a number, a file for a value slot, too few files, a required input left out', async () => {
    const image = `image=${photo}`;
    const cases: [string[], RegExp[]][] = [
      [['run', 'test_cpy', '--file', image], [/^Error: Unknown tool "test_cpy"\. Did you mean test_copy\? `toolrun-cli tools` lists the tools and their inputs\.$/m]],
      [['run', 'test_copy', '-f', image, '-i', 'copis=2'], [/^ {2}--input copis: test_copy has no input "copis"\. Did you mean copies\? Its inputs: image, mode, copies\.$/m]],
      [
        ['estimate', 'test_copy', '-f', `img=${photo}`],
        [/^ {2}--file img: test_copy has no input "img"\. Did you mean image\?/m, /^ {2}image is required \(an image file\): add --file image=PATH\.$/m],
      ],
      [['run', 'test_copy', '-f', image, '-i', 'mode=hng'], [/^ {2}--input mode=hng: mode takes one of ok, fail, hang, garbage, crash, slow\. Did you mean hang\?$/m]],
      [['run', 'test_copy', '-f', image, '-i', 'copies=7'], [/^ {2}--input copies=7: copies takes a number from 1 to 3; 7 is out of range\.$/m]],
      [['estimate', 'test_copy', '-f', image, '-i', 'copies=two'], [/^ {2}--input copies=two: copies takes a number from 1 to 3; "two" is not a number\.$/m]],
      [['run', 'test_copy', '-f', image, '-f', `mode=${photo}`], [/^ {2}--file mode: mode is not a file input \(it takes one of ok, .*\); give it with --input mode=VALUE\.$/m]],
      [['run', 'video_transition', '-f', `clips=${photo}`, '-i', 'style=wipe'], [/^ {2}--file clips: clips takes 2 to 10 video files, given 1\.$/m, /style takes one of fade, dissolve, wipe_left, wipe_right\. Did you mean wipe_left\?/]],
      [['run', 'test_copy', '-i', 'mode=ok'], [/^ {2}image is required \(an image file\): add --file image=PATH\.$/m]],
      // What the first bytes say, whatever the name: a PNG for a video slot, a PDF named .png for an image slot.
      [
        ['run', 'video_transition', '-f', `clips=${photo}`, '-f', `clips=${photo}`],
        [new RegExp(`^ {2}--file clips=${escaped(photo)}: photo\\.png is an image file; clips takes a video file\\.$`, 'm')],
      ],
      [['run', 'test_copy', '-f', `image=${pdf}`], [new RegExp(`^ {2}--file image=${escaped(pdf)}: scan\\.png is not a media file \\(application/pdf\\); image takes an image file\\.$`, 'm')]],
    ];
    for (const [args, messages] of cases) {
      const before = await teamFiles();
      const r = await runCliToEnd(args, env());
      const what = `${args.join(' ')}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`;
      assert.equal(r.code, 64, what);
      for (const m of messages) assert.match(r.stderr, m, what);
      if (!/Unknown tool/.test(r.stderr)) assert.match(r.stderr, /^Error: \w+ cannot take these inputs; nothing was uploaded\./m, what);
      assert.equal(r.stdout, '', what);
      assert.equal(await teamFiles(), before, `no upload: ${what}`);
    }
    assert.deepEqual(await s.database.db.pool.query('SELECT id FROM runs WHERE team_id = $1::uuid', [team.teamId]).then((q) => q.rows), [], 'no run either');
  });

  test('--json: one error document with every problem, code usage_error', async () => {
    const before = await teamFiles();
    const r = await runCliToEnd(['--json', 'run', 'test_copy', '-f', `image=${photo}`, '-i', 'mode=nope', '-i', 'copies=0'], env());
    assert.equal(r.code, 64, r.stderr);
    const error = (JSON.parse(r.stdout) as { error: { code: string; message: string; problems: string[] } }).error;
    assert.equal(error.code, 'usage_error');
    assert.match(error.message, /nothing was uploaded/);
    assert.deepEqual(error.problems, [
      '--input mode=nope: mode takes one of ok, fail, hang, garbage, crash, slow.',
      '--input copies=0: copies takes a number from 1 to 3; 0 is out of range.',
    ]);
    assert.equal(await teamFiles(), before);
  });

  test('what the tool takes goes through: video slots left to --duration in an estimate; a text input takes the text as typed', async () => {
    const est = await runCliToEnd(['--json', 'estimate', 'video_transition', '--duration', '30', '-i', 'style=wipe_left', '-i', 'duration_seconds=0.5'], env());
    assert.equal(est.code, 0, est.stderr);
    assert.equal((JSON.parse(est.stdout) as { estimate: { tool_id: string } }).estimate.tool_id, 'video_transition');

    // url=42 is the text "42" (not the number): the service, not the CLI, finds it is no URL.
    const text = await runCliToEnd(['--json', 'estimate', 'brand_kit_extract', '-i', 'url=42'], env());
    assert.equal(text.code, 2, text.stdout);
    const error = (JSON.parse(text.stdout) as { error: { errors: { loc: string[]; message: string }[] } }).error;
    assert.deepEqual(error.errors.map((e) => [e.loc.at(-1), e.message]), [['url', 'must be an absolute URL']]);
  });
});

describe('toolrun-cli tools', () => {
  test("shows each input's choices, range and default; --json stays the API's list", async () => {
    const r = await runCliToEnd(['tools'], env());
    assert.equal(r.code, 0, r.stderr);
    const block = (id: string) => r.stdout.slice(r.stdout.indexOf(`\n${id}  `) + 1).split('\n\n')[0] ?? '';
    assert.equal(
      block('test_copy'),
      [
        'test_copy  Test copy, 2 Sparks',
        '    image   an image file (required)',
        '    mode    one of ok, fail, hang, garbage, crash, slow (default ok)',
        '    copies  a number from 1 to 3 (default 1)',
      ].join('\n'),
    );
    assert.match(block('video_transition'), /^ {4}clips {13}2 to 10 video files \(required\)$/m);
    assert.match(block('video_transition'), /^ {4}duration_seconds {2}a number from 0\.1 to 5 \(default 1\)$/m);
    assert.match(block('image_color_grade'), /^ {4}exposure {5}a number from -3 to 3 \(default 0\)$/m);
    assert.match(block('brand_kit_extract'), /^ {4}url {4}text, at most 2048 characters \(optional\)$/m);
    assert.match(block('test_team_only'), /\(not on your plan\)$/m);

    const json = await runCliToEnd(['--json', 'tools'], env());
    assert.equal(json.code, 0, json.stderr);
    const copy = (JSON.parse(json.stdout) as ToolList).data.find((t) => t.id === 'test_copy');
    assert.deepEqual(copy?.inputs.find((i) => i.name === 'copies'), { name: 'copies', kind: 'number', required: false, min: 0, max: 1, constraints: { minimum: 1, maximum: 3 }, default: 1 });
  });
});

/** Where the pty child's bytes show the download bar, its last frame and the first Saved line. */
const DOWNLOAD_BAR = /Downloading 2 outputs \[█+\] 100% \| 6\.\d kB of 6\.\d kB/;

describe('downloads', () => {
  test('at a terminal: one bar for the outputs, then where each went; `download` draws it too', async () => {
    const out = path.join(tmp, 'pty-out');
    const child = startCliInPty(['run', 'test_copy', '-f', `image=${photo}`, '-i', 'copies=2', '--out', out], env());
    assert.equal(await child.code(), 0, child.stdout);
    const text = plain(child.stdout);
    assert.match(text, DOWNLOAD_BAR);
    assert.match(text, /Downloading 2 outputs \[░+\] 0% \| 0 B of 6\.\d kB/, 'drawn from the start');
    assert.ok(text.search(DOWNLOAD_BAR) < text.indexOf('Saved '), `the Saved lines come after the bar:\n${text}`);
    assert.deepEqual([...text.matchAll(/Saved (\S+) \(3\.\d kB, image\/png\)/g)].map((m) => path.basename(m[1] ?? '')).sort(), ['copy-1.png', 'copy-2.png']);
    const runId = /Started run (\S+) /.exec(text)?.[1] ?? '';

    const again = startCliInPty(['download', runId, '--out', path.join(tmp, 'pty-again')], env());
    assert.equal(await again.code(), 0, again.stdout);
    assert.match(plain(again.stdout), DOWNLOAD_BAR);
    assert.equal(fs.readdirSync(path.join(tmp, 'pty-again')).sort().join(), 'copy-1.png,copy-2.png');
  });

  test('no bar without a terminal, nor with --json at one', async () => {
    const piped = await runCliToEnd(['run', 'test_copy', '-f', `image=${photo}`, '-i', 'copies=2', '--out', path.join(tmp, 'piped')], env());
    assert.equal(piped.code, 0, piped.stderr);
    assert.doesNotMatch(piped.stdout + piped.stderr, /Downloading|\u001b/);
    assert.equal((piped.stdout.match(/^Saved \S+ \(3\.\d kB, image\/png\)$/gm) ?? []).length, 2, piped.stdout);

    const json = startCliInPty(['--json', 'run', 'test_copy', '-f', `image=${photo}`, '-i', 'copies=2', '--out', path.join(tmp, 'json')], env());
    assert.equal(await json.code(), 0, json.stdout);
    assert.doesNotMatch(json.stdout, /Downloading|Uploading|\u001b\[\?25l/);
    assert.equal(fs.readdirSync(path.join(tmp, 'json')).length, 2);
  });
});

/** A run of test_copy that hangs until canceled, followed in a pty; resolves once its bar is drawn. */
async function followHangingRun(via: 'node' | 'npx'): Promise<{ child: CliChild; runId: string }> {
  const child = startCliInPty(['run', 'test_copy', '--file', `image=${photo}`, '--input', 'mode=hang', '--out', tmp], env(), { via });
  const runId = (await child.waitForOutput(new RegExp(`Started run (${UUID})`)))[1] ?? '';
  await waitFor('the run to be running', async () => ((await runStatus(runId)) === 'running' ? true : undefined));
  await child.waitForOutput(new RegExp(`Run ${runId.slice(0, 8)} \\[`));
  return { child, runId };
}

describe('Ctrl-C while a run is followed', () => {
  test('the answer and what follows it end their lines: y cancels (4), Ctrl-C at the question leaves it running (130)', async () => {
    const canceled = await followHangingRun('node');
    canceled.child.write('\x03');
    await canceled.child.waitForOutput(/\[y\/N\] $/);
    canceled.child.write('y\r');
    assert.equal(await canceled.child.code(), 4, canceled.child.stdout);
    assert.match(plain(canceled.child.stdout), new RegExp(`\\[y/N\\] y\\n+Run ${canceled.runId} canceled at your request; its hold was released\\.\\n$`));
    assert.equal(await runStatus(canceled.runId), 'canceled');

    const left = await followHangingRun('node');
    left.child.write('\x03');
    await left.child.waitForOutput(/\[y\/N\] $/);
    left.child.write('\x03');
    assert.equal(await left.child.code(), 130, left.child.stdout);
    assert.match(plain(left.child.stdout), new RegExp(`\\[y/N\\] \\^C\\nLeft run ${left.runId} (queued|running)\\. .*toolrun-cli cancel ${left.runId}\\n$`));
    assert.equal(await runStatus(left.runId), 'running');
    await runCliToEnd(['cancel', left.runId], env());
  });

  test('through `npx toolrun-cli` at a terminal: y exits 4, Ctrl-C at the question 130, as documented', async () => {
    const canceled = await followHangingRun('npx');
    canceled.child.write('\x03');
    await canceled.child.waitForOutput(/\[y\/N\] $/);
    canceled.child.write('y\r');
    assert.equal(await canceled.child.code(), 4, canceled.child.stdout);
    assert.match(plain(canceled.child.stdout), /canceled at your request/);
    assert.equal(await runStatus(canceled.runId), 'canceled');

    const left = await followHangingRun('npx');
    left.child.write('\x03');
    await left.child.waitForOutput(/\[y\/N\] $/);
    left.child.write('\x03');
    assert.equal(await left.child.code(), 130, left.child.stdout);
    assert.equal(await runStatus(left.runId), 'running');
    const cancel = await runCliToEnd(['--json', 'cancel', left.runId], env());
    assert.equal((JSON.parse(cancel.stdout) as Run).status, 'canceled');
  });

  test('job control still works with Ctrl-C read as a key: Ctrl-Z suspends, fg resumes (Ctrl-C still asks); started with & it is not stopped', async () => {
    // An interactive bash in a pty: it gives each job its own process group and the terminal to the foreground one.
    const shell = new CliChild(
      spawn('script', ['-q', '-e', '-c', 'bash --norc --noprofile -i', '/dev/null'], { env: { ...env(), TERM: 'xterm-256color' }, stdio: ['pipe', 'pipe', 'pipe'] }),
    );
    const command = `${process.execPath} ${CLI_BIN} run test_copy --file image=${photo} --input mode=hang --out ${tmp}`;
    await shell.waitForOutput(/[#$] $/);
    shell.write(`${command}\n`);
    const runId = (await shell.waitForOutput(new RegExp(`Started run (${UUID})`)))[1] ?? '';
    await shell.waitForOutput(new RegExp(`Run ${runId.slice(0, 8)} \\[`));
    shell.write('\x1a');
    await shell.waitForOutput(/\[1\]\+ +Stopped +\S*node /);
    shell.write('fg\n');
    await shell.waitForOutput(new RegExp(`fg\\n[^]*Run ${runId.slice(0, 8)} \\[`));
    shell.write('\x03');
    await shell.waitForOutput(/Cancel run \S+\? \[y\/N\] $/);
    shell.write('y\r');
    await shell.waitForOutput(/canceled at your request/);
    shell.write('echo "exit=$?"\n');
    await shell.waitForOutput(/^exit=4$/m);
    assert.equal(await runStatus(runId), 'canceled');

    shell.write(`${command} &\n`);
    const background = (await shell.waitForOutput(new RegExp(`Started run (?!${runId})(${UUID})`)))[1] ?? '';
    // Past the point where it would have changed the terminal's mode, and so been stopped (SIGTTOU).
    await shell.waitForOutput(new RegExp(`Run ${background.slice(0, 8)} \\[`));
    shell.write('jobs\n');
    await shell.waitForOutput(/jobs\n\[1\]\+ +Running /);
    shell.write('kill %1; exit\n');
    await shell.code();
    await runCliToEnd(['cancel', background], env());
  });
});
