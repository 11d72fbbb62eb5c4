// Limits across the two API processes, probed while the load runs: keys of 30 requests a minute
// (one token per take) and 120 (taken two at a time, the rest reserved in the process that took
// them) hammering both APIs, and a team with a small hourly run ceiling (set with the operator
// CLI) starting more runs than it may through both APIs at once.
import { setTimeout as delay } from 'node:timers/promises';
import { runCli, cliEnv } from '../../test/helpers/process.js';
import type { Client, ErrorBody, RunJson } from './client.js';
import type { Topology } from './cluster.js';
import type { RunRecord } from './load.js';
import { makeTeam, type TeamRef } from './setup.js';

export interface RateProbe {
  limit: number;
  sent: number;
  ok: number;
  refused: number;
  elapsedMs: number;
  /** The most the shared bucket can give in that time: a full bucket plus the refill. */
  bound: number;
  okByApi: Record<string, number>;
  refusedByApi: Record<string, number>;
  /** Answers other than 200 or a well-formed 429 rate_limited. */
  bad: string[];
}

/** Every request of a fresh key with `limit`/min, from `parallel` loops for `durationMs`, alternating APIs. */
export async function probeRateLimit(top: Topology, client: Client, opts: { limit: number; durationMs: number; parallel: number }): Promise<RateProbe & { team: TeamRef }> {
  const label = `rate-${opts.limit}`;
  const { teamId, keys } = await makeTeam(top.db, label, 'plus', { keys: 1, rate: opts.limit, sparks: 0 });
  const key = keys[0]!;
  const r: RateProbe = { limit: opts.limit, sent: 0, ok: 0, refused: 0, elapsedMs: 0, bound: 0, okByApi: {}, refusedByApi: {}, bad: [] };
  const t0 = performance.now();
  const until = t0 + opts.durationMs;
  await Promise.all(
    Array.from({ length: opts.parallel }, async () => {
      // At least twice the bucket, however slow the machine: enough to drain it from both APIs.
      while (performance.now() < until || r.sent < 2 * opts.limit) {
        const api = top.apis[r.sent++ % top.apis.length]!;
        const res = await client.call(api.url, key.key, 'GET', '/v1/me');
        const error = (res.body as ErrorBody | null)?.error;
        if (res.status === 200) {
          r.ok++;
          r.okByApi[api.name] = (r.okByApi[api.name] ?? 0) + 1;
        } else if (
          res.status === 429 &&
          error?.code === 'rate_limited' &&
          error.details?.limit_per_minute === opts.limit &&
          /^[1-9]\d*$/.test(res.headers.get('retry-after') ?? '') &&
          error.request_id === res.headers.get('x-request-id')
        ) {
          r.refused++;
          r.refusedByApi[api.name] = (r.refusedByApi[api.name] ?? 0) + 1;
        } else {
          r.bad.push(`${api.name}: ${res.status} ${JSON.stringify(res.body).slice(0, 200)} retry-after=${res.headers.get('retry-after')}`);
        }
      }
    }),
  );
  r.elapsedMs = performance.now() - t0;
  // Tokens at the start are at most the bucket (capacity = the limit), and it refills limit/60 per second.
  r.bound = opts.limit + Math.floor((opts.limit * r.elapsedMs) / 60_000);
  return { ...r, team: { label, teamId, keys, endpoints: [] } };
}

export interface CeilingProbe {
  limit: number;
  attempts: number;
  accepted: number;
  refused: number;
  acceptedByApi: Record<string, number>;
  refusedByApi: Record<string, number>;
  bad: string[];
  /** Set through `toolrun admin team update --runs-per-hour`, read back from its JSON. */
  cliSet: boolean;
  records: RunRecord[];
  team: TeamRef;
}

function secondsToNextHour(now = Date.now()): number {
  return 3600 - Math.floor(now / 1000) % 3600;
}

/**
 * A team whose ceiling is `limit` runs an hour starts `attempts` runs at once through both APIs:
 * exactly `limit` may be accepted, the rest 429 with Retry-After to the next hour. Started away
 * from the top of the hour, so the burst lies within one clock hour.
 */
export async function probeCeiling(
  top: Topology,
  client: Client,
  opts: { limit: number; attempts: number; databaseUrl: string; png: Buffer },
): Promise<CeilingProbe> {
  const { teamId, keys } = await makeTeam(top.db, 'foxtrot', 'pro', { keys: 2, rate: 300, sparks: 10_000 });
  const cli = await runCli(['admin', 'team', 'update', '--team', teamId, '--runs-per-hour', String(opts.limit)], cliEnv({ DATABASE_URL: opts.databaseUrl, TOOLRUN_ENV: 'test' }), 120_000);
  const cliSet = cli.code === 0 && (JSON.parse(cli.stdout) as { team?: { runs_per_hour?: number } }).team?.runs_per_hour === opts.limit;
  const png = await client.upload(top.apis[0]!.url, keys[0]!.key, opts.png, 'ceiling.png', 'image/png');
  const team: TeamRef = { label: 'foxtrot', teamId, keys, endpoints: [] };
  const p: CeilingProbe = { limit: opts.limit, attempts: opts.attempts, accepted: 0, refused: 0, acceptedByApi: {}, refusedByApi: {}, bad: [], cliSet, records: [], team };
  if (secondsToNextHour() < 30) await delay(secondsToNextHour() * 1000 + 1000);
  const hour = Math.floor(Date.now() / 3_600_000);
  await Promise.all(
    Array.from({ length: opts.attempts }, async (_, n) => {
      const api = top.apis[n % top.apis.length]!;
      const key = keys[Math.floor(n / 2) % keys.length]!;
      const res = await client.call<RunJson>(api.url, key.key, 'POST', '/v1/tools/image_color_grade/runs', { inputs: { image: [png], preset: 'warm_film' } });
      const error = (res.body as ErrorBody | null)?.error;
      if (res.status === 202) {
        p.accepted++;
        p.acceptedByApi[api.name] = (p.acceptedByApi[api.name] ?? 0) + 1;
        p.records.push({ n, kind: 'ceiling', team: 'foxtrot', teamId, tool: 'image_color_grade', keyId: key.id, startedVia: api.name, runId: res.body.id, final: res.body, polls: 0, problems: [] });
        return;
      }
      const retryAfter = Number(res.headers.get('retry-after'));
      if (res.status === 429 && error?.code === 'rate_limited' && error.details?.limit_per_hour === opts.limit && Math.abs(retryAfter - secondsToNextHour()) <= 5) {
        p.refused++;
        p.refusedByApi[api.name] = (p.refusedByApi[api.name] ?? 0) + 1;
      } else {
        p.bad.push(`${api.name}: ${res.status} ${JSON.stringify(res.body).slice(0, 200)} retry-after=${res.headers.get('retry-after')}`);
      }
    }),
  );
  if (Math.floor(Date.now() / 3_600_000) !== hour) p.bad.push('the burst crossed the top of the hour; its counts are not comparable');
  return p;
}
