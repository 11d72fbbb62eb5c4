import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Logger } from 'pino';
import type { Config } from '../config/config.js';
import { isDbUnavailable } from '../db/errors.js';
import type { Db } from '../db/pool.js';
import { getTeamFiles } from '../files/repository.js';
import type { MediaBinaries } from '../media/binaries.js';
import type { RunMetrics, RunPhase } from '../metrics/metrics.js';
import type { LocalCopy, Storage } from '../storage/storage.js';
import { MEDIA_KINDS, ToolError, type InputFile, type RunContext, type ToolManifest } from '../tools/manifest.js';
import type { ToolRegistry } from '../tools/registry.js';
import { commitSuccess, SuccessOutcomeUnknown } from './commit-success.js';
import { infoOf } from './inputs.js';
import { verifyOutputs } from './output-checks.js';
import { OutputStoreError, storeOutputs } from './outputs.js';
import type { NewOutput, RunRow } from './repository.js';
import { failRun, succeedRun } from './transitions.js';

export interface ExecutorDeps {
  config: Config;
  db: Db;
  storage: Storage;
  tools: ToolRegistry;
  media: MediaBinaries;
  logger: Logger;
  /** Records how each execution ended, how long it and each of its phases took, when given. */
  metrics?: RunMetrics;
}

/** Why a run's AbortSignal fired. */
export type StopReason = 'canceled' | 'timeout' | 'lease_lost' | 'shutdown';

/**
 * Extends a lease that is still held. A lease that already lapsed is lost even if nobody took the
 * run yet: another worker may be claiming it right now.
 */
async function renewLease(db: Db, runId: string, owner: string, seconds: number): Promise<boolean> {
  const { rowCount } = await db.pool.query(
    `UPDATE runs SET lease_expires_at = now() + make_interval(secs => $3::integer)
      WHERE id = $1::uuid AND lease_owner = $2::text AND status = 'running' AND lease_expires_at > now()`,
    [runId, owner, seconds],
  );
  return rowCount === 1;
}

async function inputFiles(deps: ExecutorDeps, tool: ToolManifest, run: RunRow): Promise<{ files: Record<string, InputFile[]>; copies: LocalCopy[] }> {
  const files: Record<string, InputFile[]> = {};
  const copies: LocalCopy[] = [];
  for (const slot of tool.inputs.filter((s) => MEDIA_KINDS.includes(s.kind))) {
    const ids = (run.inputs[slot.name] as string[] | undefined) ?? [];
    if (!ids.length) continue;
    const rows = await getTeamFiles(deps.db.pool, run.team_id, ids);
    const byId = new Map(rows.map((r) => [r.id, r]));
    files[slot.name] = [];
    for (const id of ids) {
      const row = byId.get(id);
      if (!row || row.status !== 'ready') throw new ToolError(`input file ${id} is no longer available`);
      const copy = await deps.storage.localCopy(row.storage_key);
      copies.push(copy);
      files[slot.name]!.push({
        fileId: id,
        path: copy.path,
        fileName: row.file_name,
        mime: row.detected_mime,
        info: infoOf(row),
      });
    }
  }
  return { files, copies };
}

/** How the worker controls one execution. */
export interface RunControl {
  abort: AbortController;
  /** Why the signal fired, if it did. */
  reason(): StopReason | null;
  /** Date.now() taken before the claim was sent: the lease cannot have begun earlier. */
  claimedAt: number;
}

/**
 * Runs one claimed run to its end: renews the lease while the tool works, stops the tool on
 * cancel, timeout or a lost lease, checks and stores outputs, then settles the run in one
 * transaction. Only the lease holder can settle it, so a run retaken by another worker after a
 * lapse is never finished twice. The execution also fences itself: if no renewal succeeded for
 * a whole lease period (database unreachable, process frozen) it stops the tool on its own
 * before another worker can have taken the run, so no run is executed twice at once.
 */
export async function executeRun(deps: ExecutorDeps, run: RunRow, owner: string, control: RunControl): Promise<void> {
  const { config, db, logger } = deps;
  const log = logger.child({ run_id: run.id, tool_id: run.tool_id, attempt: run.attempts });
  const tool = deps.tools.get(run.tool_id);
  if (!tool?.run) {
    await db.tx((tx) => failRun(tx, run.id, `The tool ${run.tool_id} is not available on this server.`, owner));
    return;
  }
  const leaseMs = config.runs.leaseSeconds * 1000;
  let fence: NodeJS.Timeout | undefined;
  const heldSince = (t: number) => {
    clearTimeout(fence);
    fence = setTimeout(() => control.abort.abort('lease_lost'), Math.max(0, t + leaseMs - Date.now()));
  };
  heldSince(control.claimedAt);
  const leaseTimer = setInterval(
    () => {
      const sentAt = Date.now();
      renewLease(db, run.id, owner, config.runs.leaseSeconds).then(
        (held) => {
          if (control.abort.signal.aborted) return;
          if (held) heldSince(sentAt);
          else control.abort.abort('lease_lost');
        },
        (err: unknown) => log.warn({ err }, 'lease renewal failed'),
      );
    },
    Math.max(1000, leaseMs / 3),
  );
  const timeoutSeconds = tool.timeoutSeconds ?? config.runs.timeoutSeconds;
  const timeout = setTimeout(() => control.abort.abort('timeout'), timeoutSeconds * 1000);
  let lastProgress = 0;
  let progressAt = 0;
  const progress = (fraction: number) => {
    const f = Math.min(0.99, Math.max(0, fraction));
    const now = Date.now();
    if (f <= lastProgress || now - progressAt < 500) return;
    lastProgress = f;
    progressAt = now;
    db.pool
      .query(`UPDATE runs SET progress = $3::float8 WHERE id = $1::uuid AND lease_owner = $2::text AND status = 'running' AND progress < $3::float8`, [
        run.id,
        owner,
        f,
      ])
      .catch((err: unknown) => log.warn({ err }, 'progress update failed'));
  };
  /** Times one phase of this execution into the metrics (when on). */
  const timed = async <T>(phase: RunPhase, work: () => Promise<T>): Promise<T> => {
    const t0 = performance.now();
    const result = await work();
    deps.metrics?.runPhase(run.tool_id, phase, (performance.now() - t0) / 1000);
    return result;
  };
  let workDir: string | null = null;
  let copies: LocalCopy[] = [];
  let stored: NewOutput[] = [];
  let succeeded = false;
  /** How many outputs the run recorded: with none, there is nothing for the output check to do. */
  let recordedOutputs = 0;
  try {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), `toolrun-run-${run.id}-`));
    workDir = dir;
    const inputs = await timed('inputs', () => inputFiles(deps, tool, run));
    copies = inputs.copies;
    const started = Date.now();
    const runner = tool.run;
    const ctx: RunContext = {
      runId: run.id,
      teamId: run.team_id,
      values: run.inputs,
      files: inputs.files,
      workDir: dir,
      signal: control.abort.signal,
      progress,
      media: deps.media,
      logger: log,
      outbound: { allowPrivate: config.allowPrivateNetwork },
      browserPath: config.browserPath,
      browserMemoryMb: config.browserMemoryMb,
      limits: { ffmpegThreads: config.runs.ffmpegThreads, maxOutputBytes: config.runs.maxOutputBytes },
    };
    const outputs = await timed('runner', () => runner(ctx));
    if (control.abort.signal.aborted) throw control.abort.signal.reason;
    const storing = { teamId: run.team_id, runId: run.id, storage: deps.storage, media: deps.media, maxBytes: config.runs.maxOutputBytes, signal: control.abort.signal };
    stored = await timed('store', () => storeOutputs(outputs, storing));
    let done: boolean;
    try {
      const recorded = stored;
      done = await timed('commit', () =>
        commitSuccess(db, run.id, recorded, log, async (tx) => {
          const finished = await succeedRun(tx, run.id, owner, recorded, config.runs.outputRetentionSeconds);
          // A tool's own record of success (a saved brand kit) commits with the run, or not at all.
          if (finished && tool.onSucceeded) await tool.onSucceeded(tx, { id: run.id, teamId: run.team_id, values: run.inputs }, outputs);
          return finished !== null;
        }),
      );
    } catch (err) {
      if (err instanceof SuccessOutcomeUnknown) {
        // Not knowing, keep the objects: an orphan costs storage, a deleted output costs a paid result.
        log.error({ err: err.cause, storage_keys: stored.map((o) => o.storageKey) }, 'the outcome of the success commit is unknown; its outputs are kept');
        stored = [];
      }
      throw err;
    }
    if (!done) {
      // Canceled or retaken meanwhile: not ours to finish; the outputs are deleted below.
      log.info({ reason: control.reason() ?? 'no_longer_held' }, 'run stopped');
      return;
    }
    succeeded = true;
    recordedOutputs = stored.length;
    log.info({ ms: Date.now() - started, outputs: stored.length }, 'run succeeded');
    stored = [];
  } catch (err) {
    const reason = control.reason();
    if (reason === 'canceled' || reason === 'lease_lost' || reason === 'shutdown') {
      log.info({ reason }, 'run stopped');
    } else if (reason !== 'timeout' && !(err instanceof ToolError) && isDbUnavailable(err instanceof SuccessOutcomeUnknown ? err.cause : err)) {
      // The database, not the tool, failed (stopped, restarting): the run is not failed for it.
      // Its lease lapses and a worker takes it again once PostgreSQL is back, as after a crash.
      log.warn({ err }, 'the database was unavailable; the run is left for a retry when its lease lapses');
    } else {
      const message =
        reason === 'timeout'
          ? `The run took longer than the ${timeoutSeconds} s limit of ${tool.id} and was stopped.`
          : err instanceof ToolError
            ? err.message
            : `The tool failed unexpectedly; the run can be retried.`;
      if (!(err instanceof ToolError) && reason !== 'timeout') log.error({ err }, 'run failed');
      // The client reads what happened; the operator needs the cause (a full disk, S3 refusing).
      if (err instanceof OutputStoreError) log.error({ err: err.cause }, 'storing outputs failed');
      await db.tx((tx) => failRun(tx, run.id, message, owner)).catch((e: unknown) => log.error({ err: e }, 'could not record the failure'));
    }
  } finally {
    clearInterval(leaseTimer);
    clearTimeout(fence);
    clearTimeout(timeout);
    // Outputs of a run that did not succeed (canceled, failed, lost) are deleted.
    for (const o of stored) await deps.storage.delete(o.storageKey).catch(() => undefined);
    for (const c of copies) await c.cleanup().catch(() => undefined);
    if (workDir) await fs.rm(workDir, { recursive: true, force: true });
  }
  // The check behind output_not_ready; a worker's sweep retries it if this one cannot finish it.
  // A run without outputs has none to check: no transaction for it (issue 37).
  if (succeeded && recordedOutputs > 0) {
    await timed('check', () => verifyOutputs(db, deps.storage, log, { runId: run.id })).catch((err: unknown) => log.warn({ err }, 'output check failed'));
  }
}
