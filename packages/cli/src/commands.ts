import path from 'node:path';
import fs from 'node:fs';
import type { DownloadedOutput, Estimate, FileObject, Run, Toolrun } from '@toolrun/sdk';
import type { DownloadWatch } from './download.ts';
import { follow, type FollowOutcome } from './follow.ts';
import { buildInputs, inputTexts, parseDuration, parseFiles, UsageError, type FileArg } from './inputs.ts';
import { Interrupts } from './interrupts.ts';
import { checkInputs, describeSlot, findTool } from './slots.ts';
import { formatBytes, type Ui } from './ui.ts';

/** Exit codes: distinct for usage mistakes, API errors, and runs that did not succeed. */
export const EXIT = {
  ok: 0,
  /** Anything unexpected (a bug, a full disk). */
  failure: 1,
  /** The API answered with an error, or could not be reached. */
  api: 2,
  /** The run failed. */
  runFailed: 3,
  /** The run was canceled. */
  runCanceled: 4,
  /** The command was called wrongly (sysexits EX_USAGE). */
  usage: 64,
  /** Stopped by Ctrl-C, the run (if any) left running. */
  interrupted: 130,
} as const;

export interface ToolInputArgs {
  input: string[];
  file: string[];
  duration?: string;
}

export async function toolsCommand(client: Toolrun, ui: Ui): Promise<number> {
  const list = await client.tools.list();
  ui.result(list);
  list.data.forEach((t, i) => {
    const price = t.estimate_hint.sparks_min === t.estimate_hint.sparks_max ? `${t.estimate_hint.sparks_min}` : `${t.estimate_hint.sparks_min}-${t.estimate_hint.sparks_max}`;
    if (i > 0) ui.line();
    ui.line(`${t.id}  ${t.name}, ${price} Sparks${t.allowed ? '' : ' (not on your plan)'}`);
    // One slot a line: its name as --input/--file take it, what it takes, required or its default.
    const width = Math.max(0, ...t.inputs.map((slot) => slot.name.length));
    for (const slot of t.inputs) ui.line(`    ${slot.name.padEnd(width)}  ${describeSlot(slot)}`);
  });
  return EXIT.ok;
}

export async function meCommand(client: Toolrun, ui: Ui): Promise<number> {
  const me = await client.me();
  ui.result(me);
  ui.line(`Team ${me.team.name} (${me.team.plan}), ${me.sparks_available} Sparks available`);
  ui.line(`Key ${me.api_key.name} (${me.api_key.prefix}), scopes ${me.api_key.scopes.join(', ')}, ${me.api_key.rate_limit_per_minute}/min`);
  return EXIT.ok;
}

interface Uploaded {
  slot: string;
  path: string;
  file_id: string;
  status: string;
}

/** Uploads every --file with a bar each; a file the service rejects is an API error. */
async function uploadAll(client: Toolrun, ui: Ui, files: FileArg[]): Promise<Uploaded[]> {
  if (!files.length) return [];
  const sized = files.map((f) => ({ ...f, size: fs.statSync(f.path).size, label: `${f.slot}=${path.basename(f.path)}` }));
  const view = ui.uploadBars(sized);
  try {
    const results: FileObject[] = await Promise.all(
      sized.map((f, i) => client.files.upload(f.path, { onProgress: (p) => view.bars[i]?.update(p.uploadedBytes) })),
    );
    view.stop();
    const uploaded = results.map((r, i) => ({ slot: sized[i]?.slot ?? '', path: sized[i]?.path ?? '', file_id: r.id, status: r.status }));
    const rejected = uploaded.find((u) => u.status !== 'ready');
    if (rejected) throw new UsageError(`${rejected.path} was ${rejected.status}: it is not an image, video or audio file the service can read`);
    return uploaded;
  } finally {
    view.stop();
  }
}

/**
 * Checks the arguments against the tool's slots (GET /v1/tools), then uploads the files and
 * builds the body: a mistake the tool's description shows costs no upload.
 */
async function prepare(
  client: Toolrun,
  ui: Ui,
  toolId: string,
  args: ToolInputArgs,
  mode: 'estimate' | 'run',
): Promise<{ uploaded: Uploaded[]; body: { inputs: Record<string, unknown>; duration_seconds?: number } }> {
  const files = parseFiles(args.file);
  const duration = parseDuration(args.duration);
  inputTexts(args.input); // the --input syntax, before a request
  const tool = findTool((await client.tools.list()).data, toolId);
  const kinds = checkInputs(tool, args.input, files, { durationPricesVideo: mode === 'estimate' && duration !== undefined });
  const uploaded = await uploadAll(client, ui, files);
  const inputs = buildInputs(args.input, uploaded.map((u) => ({ slot: u.slot, fileId: u.file_id })), kinds);
  return { uploaded, body: duration === undefined ? { inputs } : { inputs, duration_seconds: duration } };
}

function showEstimate(ui: Ui, e: Estimate): void {
  ui.line(`Estimate for ${e.tool_id}: ${e.sparks} Sparks${e.reserve_sparks !== e.sparks ? ` (${e.reserve_sparks} held while it runs)` : ''}`);
}

export async function estimateCommand(client: Toolrun, ui: Ui, tool: string, args: ToolInputArgs): Promise<number> {
  const { uploaded, body } = await prepare(client, ui, tool, args, 'estimate');
  const estimate = await client.tools.estimate(tool, body);
  ui.result({ estimate, files: uploaded });
  showEstimate(ui, estimate);
  return EXIT.ok;
}

export interface RunArgs extends ToolInputArgs {
  out: string;
  idempotencyKey?: string;
  cancelAfter?: string;
  wait: boolean;
  pollIntervalMs?: number;
}

function exitFor(run: Run): number {
  if (run.status === 'succeeded') return EXIT.ok;
  if (run.status === 'canceled') return EXIT.runCanceled;
  return EXIT.runFailed;
}

export async function runCommand(client: Toolrun, watch: DownloadWatch, ui: Ui, tool: string, args: RunArgs): Promise<number> {
  const { uploaded, body } = await prepare(client, ui, tool, args, 'run');
  const estimate = await client.tools.estimate(tool, body);
  showEstimate(ui, estimate);

  // Ctrl-C is heard from here on, not only once the run is followed: one pressed while the run is
  // being started is answered once its id is known (and must not kill the CLI meanwhile).
  const interrupts = new Interrupts().start();
  let outcome: FollowOutcome;
  try {
    const started = await client.runs.start(tool, body, {
      ...(args.idempotencyKey ? { idempotencyKey: args.idempotencyKey } : {}),
      ...(args.cancelAfter ? { cancelAfter: args.cancelAfter } : {}),
    });
    ui.line(`Started run ${started.id} (${started.status}, ${started.cost_sparks} Sparks held)`);
    if (!args.wait) {
      ui.result({ estimate, files: uploaded, run: started });
      return EXIT.ok;
    }
    outcome = await follow(client, started, ui, interrupts, args.pollIntervalMs !== undefined ? { intervalMs: args.pollIntervalMs } : {});
  } finally {
    interrupts.stop();
  }
  const run = outcome.run;
  if (outcome.kind === 'detached') {
    ui.note(`Left run ${run.id} ${run.status}. Follow it with: toolrun-cli get ${run.id}; cancel it with: toolrun-cli cancel ${run.id}`);
    ui.result({ estimate, files: uploaded, run, detached: true });
    return EXIT.interrupted;
  }
  if (run.status !== 'succeeded') {
    ui.result({ estimate, files: uploaded, run, outputs: [] });
    if (run.status === 'canceled') ui.line(`Run ${run.id} canceled${outcome.kind === 'canceled' ? ' at your request' : ''}; its hold was released.`);
    else ui.line(`Run ${run.id} ${run.status}: ${run.error ?? 'no reason given'}`);
    return exitFor(run);
  }
  const outputs = await downloadOutputs(client, watch, ui, run, args.out);
  ui.result({ estimate, files: uploaded, run, outputs });
  ui.line(`Done: ${run.cost_sparks} Sparks charged; ${outputs.length} output(s) in ${path.resolve(args.out)}`);
  return EXIT.ok;
}

/** Every output into dir, with one bar for their bytes at a terminal. */
async function downloadOutputs(client: Toolrun, watch: DownloadWatch, ui: Ui, run: Run, dir: string): Promise<DownloadedOutput[]> {
  const bar = ui.downloadBar(run.outputs.length, run.outputs.reduce((n, o) => n + (o.size_bytes ?? 0), 0));
  try {
    return await watch.during(
      (n) => bar.bytes(n),
      () =>
        client.runs.download(run, dir, {
          onOutput: (o) => bar.say(`Saved ${o.path} (${formatBytes(o.size_bytes)}${o.mime_type ? `, ${o.mime_type}` : ''})`),
        }),
    );
  } finally {
    bar.stop();
  }
}

export async function getCommand(client: Toolrun, ui: Ui, runId: string): Promise<number> {
  const run = await client.runs.get(runId);
  ui.result(run);
  ui.line(`Run ${run.id}: ${run.status}${run.status === 'running' ? ` ${Math.round(run.progress * 100)}%` : ''}, ${run.cost_sparks} Sparks`);
  if (run.error) ui.line(`Error: ${run.error}`);
  for (const o of run.outputs) ui.line(`Output ${o.asset_id}: ${o.file_name ?? ''} ${o.mime_type ?? ''} ${o.size_bytes ? formatBytes(o.size_bytes) : ''}`.trimEnd());
  return run.status === 'failed' ? EXIT.runFailed : EXIT.ok;
}

export interface ListArgs {
  limit?: string;
  status?: string;
  tool?: string;
  after?: string;
}

/** One page of the team's API runs, newest first; the next page's command is printed while more follow. */
export async function listCommand(client: Toolrun, ui: Ui, args: ListArgs): Promise<number> {
  const limit = args.limit === undefined ? undefined : Number(args.limit);
  if (limit !== undefined && (!Number.isInteger(limit) || limit < 1 || limit > 100)) throw new UsageError('--limit takes a whole number from 1 to 100');
  const page = await client.runs.list({
    ...(limit !== undefined ? { limit } : {}),
    ...(args.status ? { status: args.status as Run['status'] } : {}),
    ...(args.tool ? { tool_id: args.tool } : {}),
    ...(args.after ? { starting_after: args.after } : {}),
  });
  ui.result(page);
  if (!page.data.length) ui.line('No runs.');
  for (const r of page.data) {
    ui.line(`${r.id}  ${(r.tool_id ?? '').padEnd(18)} ${r.status.padEnd(9)} ${String(r.cost_sparks).padStart(5)} Sparks  ${r.created_at ?? ''}`);
  }
  const last = page.data[page.data.length - 1];
  if (page.has_more && last) ui.note(`More runs: toolrun-cli runs --after ${last.id}`);
  return EXIT.ok;
}

export async function cancelCommand(client: Toolrun, ui: Ui, runId: string): Promise<number> {
  const run = await client.runs.cancel(runId);
  ui.result(run);
  ui.line(`Run ${run.id}: ${run.status}`);
  return EXIT.ok;
}

export async function downloadCommand(client: Toolrun, watch: DownloadWatch, ui: Ui, runId: string, dir: string): Promise<number> {
  const run = await client.runs.get(runId);
  if (run.status === 'failed' || run.status === 'canceled') {
    ui.result({ run, outputs: [] });
    ui.note(`Run ${run.id} is ${run.status}; it has no outputs`);
    return exitFor(run);
  }
  if (run.status !== 'succeeded') throw new UsageError(`Run ${run.id} is ${run.status}; download its outputs once it has succeeded`);
  const outputs = await downloadOutputs(client, watch, ui, run, dir);
  ui.result({ run, outputs });
  return EXIT.ok;
}
