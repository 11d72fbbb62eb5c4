/**
 * The tools the benchmarks run: the five real ones plus `bench_noop`, a bench-only tool that does
 * nothing (no inputs, no outputs), so a run of it costs only what the engine itself does.
 * runDirect() calls a tool's runner in this process with a RunContext built as the executor builds
 * it (values with slot defaults, local input files, a fresh work directory, the same limits), with
 * none of the engine around it: the baseline for the engine's overhead.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Logger } from 'pino';
import type { Config } from '../../src/config/config.js';
import type { MediaBinaries } from '../../src/media/binaries.js';
import { imageHeader, probeLocalFile, videoHeader } from '../../src/media/probe.js';
import { sha256File } from '../../src/runs/outputs.js';
import { MEDIA_KINDS, type InputFile, type MediaInfo, type RunContext, type ToolManifest, type ToolOutput } from '../../src/tools/manifest.js';
import { builtinTools, createToolRegistry, type ToolRegistry } from '../../src/tools/registry.js';

export const NOOP_TOOL = 'bench_noop';

const noCase = { values: {}, media: {}, durationHint: null };

export const benchNoop: ToolManifest = {
  id: NOOP_TOOL,
  name: 'Bench no-op',
  description: 'Does nothing and succeeds with no outputs (benchmarks only).',
  family: 'test',
  outputKind: 'json',
  consent: 'none',
  productId: NOOP_TOOL,
  inputs: [],
  plans: ['free', 'plus', 'pro', 'team'],
  pipeline: false,
  price: () => 1,
  priceRange: { cheapest: noCase, dearest: noCase },
  run: async () => [],
};

export const BUSY_TOOL = 'bench_busy';

/**
 * Holds a worker slot for `ms` and succeeds with no outputs: a run that takes time without using
 * the CPU, so a backlog of them lasts while the fairness figure is measured (bench/lib/fairness.ts).
 */
function benchBusy(ms: number): ToolManifest {
  return {
    ...benchNoop,
    id: BUSY_TOOL,
    name: 'Bench busy',
    description: `Holds a worker slot for ${ms} ms and succeeds with no outputs (benchmarks only).`,
    productId: BUSY_TOOL,
    run: () => new Promise<ToolOutput[]>((resolve) => setTimeout(() => resolve([]), ms)),
  };
}

/** BENCH_BUSY_MS (read when the registry is made, in whichever process makes it) sets bench_busy's length. */
export function benchRegistry(): ToolRegistry {
  const busyMs = Number(process.env.BENCH_BUSY_MS ?? 60);
  return createToolRegistry([...builtinTools(), benchNoop, benchBusy(Number.isFinite(busyMs) && busyMs >= 0 ? busyMs : 60)]);
}

/** One input file of a direct call: which slot it fills, where it is, what the upload probe would say. */
export interface DirectFile {
  slot: string;
  path: string;
  fileName: string;
  mime: string;
  info: MediaInfo;
}

export interface DirectJob {
  tool: string;
  values: Record<string, unknown>;
  files: DirectFile[];
  /** Also time, after the call, what the engine does to each output before a run succeeds. */
  steps?: boolean;
}

/** The engine's output handling (storeOutputs), each step alone, summed over the outputs. */
export interface EngineSteps {
  probeMs: number;
  sha256Ms: number;
  /** Into storage: a rename on local storage on the work directory's file system. */
  moveMs: number;
}

export interface DirectResult {
  /** The runner call alone (performance.now() around it). */
  ms: number;
  outputs: number;
  steps: EngineSteps | null;
}

/**
 * What storeOutputs does to an output on local storage: check it (JSON parsed; an image its
 * encoder vouched for (ToolOutput.encoded) by its type and header, others decoded by sharp; a
 * video its encoder vouched for (encodedVideo) by one header-only ffprobe; other audio/video
 * ffprobe, one decoded frame, the packets measured), sha256 it unless the encoder
 * gave the checksum (storeOutputs does both at once; here each is timed alone), move it into
 * storage.
 */
async function engineSteps(outputs: ToolOutput[], media: MediaBinaries): Promise<EngineSteps> {
  const steps: EngineSteps = { probeMs: 0, sha256Ms: 0, moveMs: 0 };
  for (const o of outputs) {
    let t0 = performance.now();
    if (o.mimeType === 'application/json') JSON.parse(await fs.readFile(o.path, 'utf8'));
    else if (o.encoded) await imageHeader(o.path);
    else if (o.encodedVideo) await videoHeader(o.path, media);
    else await probeLocalFile(o.path, media);
    steps.probeMs += performance.now() - t0;
    t0 = performance.now();
    if (!o.encoded) await sha256File(o.path);
    steps.sha256Ms += performance.now() - t0;
    t0 = performance.now();
    await fs.rename(o.path, `${o.path}.stored`);
    steps.moveMs += performance.now() - t0;
  }
  return steps;
}

/** Plain slot values with the slots' defaults applied, as the engine stores them on a run. */
function withDefaults(tool: ToolManifest, values: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const slot of tool.inputs) {
    if (!MEDIA_KINDS.includes(slot.kind) && slot.default !== undefined) out[slot.name] = slot.default;
  }
  return { ...out, ...values };
}

export async function runDirect(
  job: DirectJob,
  deps: { config: Config; media: MediaBinaries; logger: Logger; tools: ToolRegistry },
): Promise<DirectResult> {
  const tool = deps.tools.get(job.tool);
  if (!tool?.run) throw new Error(`no runnable tool ${job.tool}`);
  const files: Record<string, InputFile[]> = {};
  const ids: Record<string, string[]> = {};
  for (const f of job.files) {
    const fileId = randomUUID();
    (files[f.slot] ??= []).push({ fileId, path: f.path, fileName: f.fileName, mime: f.mime, info: f.info });
    (ids[f.slot] ??= []).push(fileId);
  }
  const workDir = await fs.mkdtemp(path.join(os.tmpdir(), 'toolrun-bench-direct-'));
  const ctx: RunContext = {
    runId: randomUUID(),
    teamId: randomUUID(),
    values: { ...withDefaults(tool, job.values), ...ids },
    files,
    workDir,
    signal: new AbortController().signal,
    progress: () => undefined,
    media: deps.media,
    logger: deps.logger,
    outbound: { allowPrivate: deps.config.allowPrivateNetwork },
    limits: { ffmpegThreads: deps.config.runs.ffmpegThreads, maxOutputBytes: deps.config.runs.maxOutputBytes },
  };
  try {
    const t0 = performance.now();
    const outputs = await tool.run(ctx);
    const ms = performance.now() - t0;
    return { ms, outputs: outputs.length, steps: job.steps ? await engineSteps(outputs, deps.media) : null };
  } finally {
    await fs.rm(workDir, { recursive: true, force: true });
  }
}
