// The load: runs of all five real tools started through both API processes alternately, with two
// keys per team, some canceled while queued or while running, some failing for real reasons (a
// brand page that answers 404, a redirect loop), a few starts repeated through the other API with
// the same Idempotency-Key; each run is then polled (alternating APIs) until it is final.
import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { FINAL, type Client, type ErrorBody, type RunJson } from './client.js';
import type { Topology } from './cluster.js';
import type { Key, LoadTeam } from './setup.js';

export type Kind =
  | 'image_upscale'
  | 'image_color_grade'
  | 'brand_kit_url'
  | 'brand_kit_files'
  | 'video_transition'
  | 'video_upscale'
  | 'fail_missing_page'
  | 'fail_redirect_loop'
  | 'cancel_queued'
  | 'cancel_running';

/** Share of each kind in the load, in percent. */
export const MIX: [Kind, number][] = [
  ['image_upscale', 24],
  ['image_color_grade', 24],
  ['brand_kit_url', 8],
  ['brand_kit_files', 6],
  ['video_transition', 10],
  ['video_upscale', 5],
  ['fail_missing_page', 4],
  ['fail_redirect_loop', 3],
  ['cancel_queued', 8],
  ['cancel_running', 8],
];

/** What a kind of run must end as (a cancel that lost the race to the end is judged by its answer). */
export const EXPECT: Record<Kind, 'succeeded' | 'failed' | 'canceled'> = {
  image_upscale: 'succeeded',
  image_color_grade: 'succeeded',
  brand_kit_url: 'succeeded',
  brand_kit_files: 'succeeded',
  video_transition: 'succeeded',
  video_upscale: 'succeeded',
  fail_missing_page: 'failed',
  fail_redirect_loop: 'failed',
  cancel_queued: 'canceled',
  cancel_running: 'canceled',
};

export interface RunRecord {
  n: number;
  kind: Kind | 'ceiling';
  team: string;
  teamId: string;
  tool: string;
  keyId: string;
  startedVia: string;
  runId: string | null;
  /** Repeat of the start through the other API with the same Idempotency-Key. */
  replay?: { status: number; sameRun: boolean; replayedHeader: string | null };
  cancel?: { via: string; status: number; code: string | null; statusAfter: string | null };
  /** The run as last polled through the API. */
  final: RunJson | null;
  polls: number;
  /** Something a careful client would not expect (an unexpected answer); empty when all went as specified. */
  problems: string[];
}

export interface LoadOptions {
  runs: number;
  /** Runs in flight at once (started and not yet final). */
  concurrency: number;
  seed: number;
  pollMs: number;
  /** Every run must be final by then. */
  deadlineMs: number;
}

/** mulberry32: a small seeded generator, so a load can be replayed with --seed. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Scenario {
  n: number;
  kind: Kind;
  team: LoadTeam;
  key: Key;
  other: Key;
  api: number;
  tool: string;
  body: { inputs: Record<string, unknown> };
  replay: boolean;
}

function pick<T>(rand: () => number, items: readonly T[]): T {
  return items[Math.floor(rand() * items.length)]!;
}

/** The scenarios of a load: kinds drawn by MIX, teams and keys in turn, APIs alternating. */
export function plan(teams: LoadTeam[], siteUrl: string, opts: Pick<LoadOptions, 'runs' | 'seed'>): Scenario[] {
  const rand = prng(opts.seed);
  const total = MIX.reduce((s, [, w]) => s + w, 0);
  const out: Scenario[] = [];
  for (let n = 0; n < opts.runs; n++) {
    let r = rand() * total;
    // Every kind once first, so even a small load covers each; then drawn by weight.
    const kind = n < MIX.length ? MIX[n]![0] : (MIX.find(([, w]) => (r -= w) < 0) ?? MIX[0]!)[0];
    let team = teams[n % teams.length]!;
    // video_upscale needs Pro or Team: such a run goes to the next team that has it.
    for (let i = 1; kind === 'video_upscale' && team.plan === 'plus'; i++) team = teams[(n + i) % teams.length]!;
    const f = team.files;
    const image = pick(rand, [f.png, f.jpeg]);
    const bodies: Record<Kind, [string, Record<string, unknown>]> = {
      image_upscale: ['image_upscale', { image: [image] }],
      image_color_grade: [
        'image_color_grade',
        { image: [image], preset: pick(rand, ['natural', 'warm_film', 'cool_matte', 'bw_16mm', 'none']), temperature: Math.round(rand() * 100 - 50), grain: Math.round(rand() * 40) },
      ],
      brand_kit_url: ['brand_kit_extract', { url: `${siteUrl}/` }],
      brand_kit_files: ['brand_kit_extract', { files: [f.png, f.jpeg] }],
      video_transition: ['video_transition', { clips: [f.clipA, f.clipB], style: pick(rand, ['fade', 'dissolve', 'wipe_left', 'wipe_right']), duration_seconds: 0.3 }],
      video_upscale: ['video_upscale', { video: [pick(rand, [f.clipA, f.clipB])], target: '1080p' }],
      fail_missing_page: ['brand_kit_extract', { url: `${siteUrl}/missing` }],
      fail_redirect_loop: ['brand_kit_extract', { url: `${siteUrl}/loop` }],
      cancel_queued: ['video_transition', { clips: [f.clipB, f.clipA], style: 'fade', duration_seconds: 0.3 }],
      // A page whose stylesheet never answers: the run stays running until canceled.
      cancel_running: ['brand_kit_extract', { url: `${siteUrl}/stuck` }],
    };
    const [tool, inputs] = bodies[kind];
    const k = Math.floor(n / 2) % team.keys.length;
    out.push({ n, kind, team, key: team.keys[k]!, other: team.keys[(k + 1) % team.keys.length]!, api: n % 2, tool, body: { inputs }, replay: n % 10 === 3 });
  }
  return out;
}

function codeOf(body: unknown): string | null {
  return (body as ErrorBody | null)?.error?.code ?? null;
}

/** Polls a run (alternating APIs) until it is final or the deadline passes. */
export async function pollToFinal(top: Topology, client: Client, rec: RunRecord, key: string, pollMs: number, deadline: number, until: (r: RunJson) => boolean = (r) => FINAL.has(r.status)): Promise<RunJson | null> {
  for (let i = 0; ; i++) {
    const api = top.apis[(rec.n + i + 1) % top.apis.length]!;
    const res = await client.patient<RunJson>(api.url, key, 'GET', `/v1/runs/${rec.runId}`, undefined, {}, Math.max(1000, deadline - Date.now()));
    rec.polls++;
    if (res.status !== 200) {
      rec.problems.push(`GET run via ${api.name}: ${res.status} ${codeOf(res.body)}`);
      return null;
    }
    rec.final = res.body;
    if (until(res.body)) return res.body;
    if (Date.now() > deadline) {
      rec.problems.push(`still ${res.body.status} at the deadline`);
      return null;
    }
    await delay(pollMs);
  }
}

async function runScenario(top: Topology, client: Client, s: Scenario, rec: RunRecord, opts: LoadOptions, deadline: number): Promise<void> {
  const apis = top.apis;
  const via = apis[s.api]!;
  const otherApi = apis[(s.api + 1) % apis.length]!;
  // An Idempotency-Key makes a start safe to repeat after a dropped connection or a 429.
  const idem = { 'idempotency-key': `topology-${opts.seed}-${s.n}-${randomUUID()}` };
  const started = await client.patient<RunJson>(via.url, s.key.key, 'POST', `/v1/tools/${s.tool}/runs`, s.body, idem);
  if (started.status !== 202) {
    rec.problems.push(`start via ${via.name}: ${started.status} ${JSON.stringify(started.body).slice(0, 300)}`);
    return;
  }
  rec.runId = started.body.id;
  rec.final = started.body;
  if (s.replay) {
    const again = await client.patient<RunJson>(otherApi.url, s.other.key, 'POST', `/v1/tools/${s.tool}/runs`, s.body, idem);
    rec.replay = { status: again.status, sameRun: again.body?.id === rec.runId, replayedHeader: again.headers.get('idempotent-replayed') };
  }
  if (s.kind === 'cancel_running') {
    // Canceled once a worker has it: a cancel that reaches another process than the one working.
    await pollToFinal(top, client, rec, s.key.key, Math.min(opts.pollMs, 250), deadline, (r) => r.status !== 'queued');
  }
  if (s.kind === 'cancel_queued' || s.kind === 'cancel_running') {
    const res = await client.patient<RunJson>(otherApi.url, s.other.key, 'POST', `/v1/runs/${rec.runId}/cancel`);
    rec.cancel = { via: otherApi.name, status: res.status, code: codeOf(res.body), statusAfter: res.status === 200 ? res.body.status : null };
  }
  await pollToFinal(top, client, rec, s.key.key, opts.pollMs, deadline);
}

/** Runs tasks with at most `limit` in flight. */
export async function inPool<T, R>(items: T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array<R>(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i]!);
      }
    }),
  );
  return out;
}

export async function driveLoad(top: Topology, client: Client, teams: LoadTeam[], opts: LoadOptions): Promise<RunRecord[]> {
  const deadline = Date.now() + opts.deadlineMs;
  const scenarios = plan(teams, top.siteUrl, opts);
  return inPool(scenarios, opts.concurrency, async (s) => {
    const rec: RunRecord = {
      n: s.n,
      kind: s.kind,
      team: s.team.label,
      teamId: s.team.teamId,
      tool: s.tool,
      keyId: s.key.id,
      startedVia: top.apis[s.api]!.name,
      runId: null,
      final: null,
      polls: 0,
      problems: [],
    };
    await runScenario(top, client, s, rec, opts, deadline).catch((err: unknown) => rec.problems.push(`client error: ${(err as Error).message}`));
    return rec;
  });
}
