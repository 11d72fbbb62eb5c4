// toolrun.run(): the common case in one call (upload what is local, start, wait, download).
// No node: import at the top: only a path in a file slot needs node:fs, and it is imported then.
import { RunFailedError, ToolrunError } from './errors.ts';
import type { Files, UploadInput, UploadProgress } from './files.ts';
import type { DownloadedOutput, Runs } from './runs.ts';
import type { Estimate, EstimateBody, FieldError, Run, Tool, ToolList } from './types.ts';

/** Slot kinds that take file ids (the spec's media slots). */
const FILE_SLOT_KINDS: readonly string[] = ['image', 'video', 'audio'];
/** The spec's format of a file id. */
const FILE_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * What a file slot of `toolrun.run()` takes, one or a list: a file id (a UUID string) as it is,
 * or something to upload: a local path, bytes (a Buffer is a Uint8Array), a Blob or File, a
 * Node Readable or a web ReadableStream.
 */
export type FileInput = string | Uint8Array | Blob | AsyncIterable<Uint8Array> | ReadableStream<Uint8Array>;

export interface RunOptions {
  /** A directory (created if needed) to download every output of the succeeded run into. */
  download?: string;
  /** Sent as Idempotency-Key with the start; a random UUID per call when omitted. */
  idempotencyKey?: string;
  /** Sent as Cancel-After with the start (90, 1h30m, 10m, 45s; at most 24h). */
  cancelAfter?: string | number;
  /** Stops the uploads, the wait or the downloads; a run already started is left as it is. */
  signal?: AbortSignal;
  /** Give up waiting (a ToolrunError with code `wait_timeout`) after this long; no limit by default. */
  timeoutMs?: number;
  /** Between polls, as runs.wait's `intervalMs`. */
  intervalMs?: number;
  /** Called with the run right after its start (its id is known from then on), then after every poll. */
  onProgress?: (run: Run) => void;
  /** Called as each input is uploaded: the slot, the item's place in it, and the upload's progress. */
  onUpload?: (event: { slot: string; index: number; progress: UploadProgress }) => void;
  /** Default true: a failed or canceled run throws RunFailedError. False: it is returned. */
  check?: boolean;
}

/** The final run, with where each output went (empty without `download` or when the run did not succeed). */
export type RunResult = Run & { downloaded: DownloadedOutput[] };

export interface RunDeps {
  tools: {
    list(opts?: { signal?: AbortSignal }): Promise<ToolList>;
    estimate(toolId: string, body?: EstimateBody, opts?: { signal?: AbortSignal }): Promise<Estimate>;
  };
  runs: Runs;
  files: Files;
}

type Stream = AsyncIterable<Uint8Array> | ReadableStream<Uint8Array>;

interface Pending {
  slot: string;
  index: number;
  /** The slot's list, where the file id goes once uploaded. */
  list: unknown[];
  source: UploadInput | Stream;
  /** A stream's own name for itself (fs.createReadStream's path). */
  fileName: string | undefined;
}

function isStream(v: unknown): v is Stream {
  if (typeof v !== 'object' || v === null) return false;
  return typeof (v as { getReader?: unknown }).getReader === 'function' || Symbol.asyncIterator in v;
}

function isUploadable(v: unknown): v is Uint8Array | Blob | Stream {
  return v instanceof Uint8Array || v instanceof Blob || isStream(v);
}

function streamName(stream: Stream): string | undefined {
  const p = (stream as { path?: unknown }).path;
  return typeof p === 'string' ? p.split(/[\\/]/).at(-1) || undefined : undefined;
}

/** The whole stream in memory: an upload declares its exact size before the first byte. */
async function readAll(stream: Stream, what: string, signal: AbortSignal | undefined): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  const take = (chunk: unknown) => {
    if (!(chunk instanceof Uint8Array)) throw new TypeError(`${what}: the stream gave ${typeof chunk} chunks; pass a binary stream (no setEncoding)`);
    signal?.throwIfAborted();
    chunks.push(chunk);
  };
  if ('getReader' in stream) {
    const reader = stream.getReader();
    try {
      for (let r = await reader.read(); !r.done; r = await reader.read()) take(r.value);
    } finally {
      reader.releaseLock();
    }
  } else {
    for await (const chunk of stream) take(chunk);
  }
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.byteLength, 0));
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.byteLength;
  }
  return out;
}

/** A path in a file slot must name a regular file now, so a typo fails before anything is uploaded. */
async function checkPath(p: string, what: string): Promise<void> {
  const { stat } = await import('node:fs/promises');
  let isFile = false;
  try {
    isFile = (await stat(p)).isFile();
  } catch (err) {
    throw new Error(`${what}: "${p}" is neither a file id (a UUID) nor a file that can be read here`, { cause: err });
  }
  if (!isFile) throw new Error(`${what}: "${p}" is not a regular file`);
}

/**
 * The body to send, with a null in place of each item still to upload, and those items. Values
 * of other slots go as they are; a value to upload in a slot that takes no files is a TypeError.
 */
async function planInputs(tool: Tool | undefined, toolId: string, inputs: Record<string, unknown>) {
  const fileSlots = new Set((tool?.inputs ?? []).filter((i) => FILE_SLOT_KINDS.includes(i.kind)).map((i) => i.name));
  const values: Record<string, unknown> = {};
  const pending: Pending[] = [];
  for (const [slot, value] of Object.entries(inputs)) {
    if (!fileSlots.has(slot) || value === null || value === undefined) {
      if (isUploadable(value) || (Array.isArray(value) && value.some(isUploadable))) {
        const names = [...fileSlots].join(', ') || 'none';
        throw new TypeError(`inputs.${slot}: bytes, Blobs and streams go only in a file slot of ${toolId} (${names})`);
      }
      values[slot] = value;
      continue;
    }
    // Media slots take a list of file ids; one item given alone is a list of one.
    const items: unknown[] = Array.isArray(value) ? [...value] : [value];
    for (const [index, item] of items.entries()) {
      let source: UploadInput | Stream;
      if (typeof item === 'string') {
        if (FILE_ID.test(item)) continue;
        await checkPath(item, Array.isArray(value) ? `inputs.${slot}[${index}]` : `inputs.${slot}`);
        source = item;
      } else if (isUploadable(item)) {
        source = item;
      } else {
        continue; // not ours to judge: the service answers 422 for it
      }
      pending.push({ slot, index, list: items, source, fileName: isStream(source) ? streamName(source) : undefined });
      items[index] = null;
    }
    values[slot] = items;
  }
  return { values, pending };
}

/** The error the service gives for a required slot left out of the check because it is still to upload. */
const isOmission = (e: FieldError, uploading: Set<string>) =>
  e.code === 'missing' && e.loc.length === 3 && e.loc[0] === 'body' && e.loc[1] === 'inputs' && uploading.has(String(e.loc[2]));

/**
 * Asks the service (estimate: starts and spends nothing) whether the inputs are valid before a
 * byte is uploaded. The slots still to upload are left out, so a `missing` error for one of
 * them is expected and dropped; every other answer is the service's.
 */
async function preflight(deps: RunDeps, toolId: string, values: Record<string, unknown>, uploading: Set<string>, signal?: AbortSignal): Promise<void> {
  const inputs = Object.fromEntries(Object.entries(values).filter(([slot]) => !uploading.has(slot)));
  try {
    await deps.tools.estimate(toolId, { inputs }, { signal });
  } catch (err) {
    if (!(err instanceof ToolrunError)) throw err;
    // Priced without the files, the estimate says nothing certain about Sparks: the start decides.
    if (err.status === 402) return;
    if (err.status !== 422 || !err.errors) throw err;
    const left = err.errors.filter((e) => !isOmission(e, uploading));
    if (left.length === err.errors.length) throw err;
    if (left.length === 0) return;
    throw new ToolrunError({
      status: err.status,
      code: err.code,
      message: `Invalid request: ${left.map((e) => `${e.loc.join('.')}: ${e.message}`).join('; ')}`,
      requestId: err.requestId,
      errors: left,
      details: err.details,
      body: err.body,
      cause: err,
    });
  }
}

/** See Toolrun.run. */
export async function runTool(deps: RunDeps, toolId: string, inputs: Record<string, unknown>, opts: RunOptions = {}): Promise<RunResult> {
  const { signal } = opts;
  const tool = (await deps.tools.list({ signal })).data.find((t) => t.id === toolId);
  // Not offered to this key: the service's own answer (404 tool_not_found, 409 for a pipeline).
  if (!tool) await deps.tools.estimate(toolId, {}, { signal });
  const { values, pending } = await planInputs(tool, toolId, inputs);
  if (pending.length) await preflight(deps, toolId, values, new Set(pending.map((p) => p.slot)), signal);

  for (const p of pending) {
    const what = `inputs.${p.slot}`;
    const source = isStream(p.source) ? await readAll(p.source, what, signal) : p.source;
    const file = await deps.files.upload(source, {
      signal,
      fileName: p.fileName,
      onProgress: (progress) => opts.onUpload?.({ slot: p.slot, index: p.index, progress }),
    });
    p.list[p.index] = file.id;
  }

  // runs.start sends one Idempotency-Key (this one, or a UUID it makes once) with every retry of
  // the request, so a start retried after a lost answer returns the run already started.
  const started = await deps.runs.start(toolId, { inputs: values }, { signal, idempotencyKey: opts.idempotencyKey, cancelAfter: opts.cancelAfter });
  const done = await deps.runs.wait(started, { signal, onProgress: opts.onProgress, intervalMs: opts.intervalMs, timeoutMs: opts.timeoutMs });
  if (done.status !== 'succeeded') {
    if (opts.check ?? true) throw new RunFailedError(done);
    return { ...done, downloaded: [] };
  }
  const downloaded = opts.download === undefined ? [] : await deps.runs.download(done, opts.download, { signal });
  return { ...done, downloaded };
}
