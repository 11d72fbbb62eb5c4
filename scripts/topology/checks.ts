// What the topology must show after the load: every run ended in exactly one final state, as
// each kind of run should; the ledger balances to the Spark; every webhook reached every
// subscribed endpoint once (retries of one event counted once, none missing, none extra); the
// rate limit and the hourly ceiling held across both API processes; no process failed.
import { setTimeout as delay } from 'node:timers/promises';
import { ledgerDrift } from '../../src/sparks/ledger.js';
import type { ProcessExit, Topology } from './cluster.js';
import { EXPECT, type RunRecord } from './load.js';
import type { CeilingProbe, RateProbe } from './probes.js';
import type { TeamRef } from './setup.js';

export interface Check {
  name: string;
  ok: boolean;
  detail: string;
  /** Up to a few examples of what went wrong. */
  failures: string[];
}

function check(name: string, failures: string[], detail: string): Check {
  return { name, ok: failures.length === 0, detail, failures: failures.slice(0, 8) };
}

export interface DbRun {
  id: string;
  team_id: string;
  tool_id: string;
  /** From start to final state. */
  seconds: number;
  status: string;
  price_sparks: number;
  hold_sparks: number;
  cost_sparks: number;
  error: string | null;
  outputs: number;
  events: string[];
  holds: number[];
  releases: number[];
  charges: number[];
}

export async function dbRuns(top: Topology, teamIds: string[]): Promise<DbRun[]> {
  const { rows } = await top.db.pool.query<DbRun>(
    `SELECT r.id, r.team_id, r.tool_id, r.status, r.price_sparks, r.hold_sparks, r.cost_sparks, r.error,
            extract(epoch FROM (r.finished_at - r.created_at))::float8 AS seconds,
            (SELECT count(*) FROM run_outputs o WHERE o.run_id = r.id)::integer AS outputs,
            coalesce((SELECT array_agg(e.type) FROM run_events e WHERE e.run_id = r.id), '{}') AS events,
            coalesce((SELECT array_agg(l.amount::integer) FROM ledger_entries l WHERE l.run_id = r.id AND l.kind = 'hold'), '{}') AS holds,
            coalesce((SELECT array_agg(l.amount::integer) FROM ledger_entries l WHERE l.run_id = r.id AND l.kind = 'release'), '{}') AS releases,
            coalesce((SELECT array_agg(l.amount::integer) FROM ledger_entries l WHERE l.run_id = r.id AND l.kind = 'charge'), '{}') AS charges
       FROM runs r WHERE r.team_id = ANY($1::uuid[])`,
    [teamIds],
  );
  return rows;
}

export function checkRuns(records: RunRecord[], runs: DbRun[]): Check[] {
  const byId = new Map(runs.map((r) => [r.id, r]));
  const started = records.filter((r) => r.runId);
  const client: string[] = records.filter((r) => r.problems.length).map((r) => `#${r.n} ${r.kind}: ${r.problems.join('; ')}`);
  const finals: string[] = [];
  if (runs.length !== started.length) finals.push(`${runs.length} runs in the database for ${started.length} accepted starts`);
  for (const r of runs) {
    if (!['succeeded', 'failed', 'canceled'].includes(r.status)) finals.push(`run ${r.id} is ${r.status}`);
    if (r.events.length !== 1 || r.events[0] !== `run.${r.status}`) finals.push(`run ${r.id} (${r.status}) has events [${r.events.join(', ')}]`);
  }
  const outcomes: string[] = [];
  for (const rec of started) {
    const row = byId.get(rec.runId!);
    if (!row) {
      finals.push(`run ${rec.runId} (#${rec.n}) is not in the database`);
      continue;
    }
    if (rec.final?.status !== row.status) finals.push(`#${rec.n} polled ${rec.final?.status}, database ${row.status}`);
    const want = rec.kind === 'ceiling' ? 'succeeded' : EXPECT[rec.kind];
    const tag = `#${rec.n} ${rec.kind} (${rec.tool}, run ${rec.runId})`;
    if (rec.cancel) {
      const lostRace = rec.cancel.status === 409 && rec.cancel.code === 'run_not_cancelable';
      if (rec.cancel.status === 200 && (row.status !== 'canceled' || rec.cancel.statusAfter !== 'canceled')) outcomes.push(`${tag}: cancel answered 200 but the run is ${row.status}`);
      else if (rec.cancel.status !== 200 && !lostRace) outcomes.push(`${tag}: cancel answered ${rec.cancel.status} ${rec.cancel.code}`);
      else if (lostRace && row.status === 'canceled') outcomes.push(`${tag}: cancel answered 409 but the run is canceled`);
    } else if (row.status !== want) {
      outcomes.push(`${tag}: ${row.status}, expected ${want}${row.error ? ` (${row.error})` : ''}`);
    }
    if (row.status === 'succeeded' && (row.outputs < 1 || row.cost_sparks !== row.price_sparks || row.cost_sparks <= 0)) {
      outcomes.push(`${tag}: succeeded with ${row.outputs} outputs, cost ${row.cost_sparks} for price ${row.price_sparks}`);
    }
    if (row.status === 'failed' && !row.error) outcomes.push(`${tag}: failed without an error`);
    if (row.status !== 'succeeded' && row.cost_sparks !== 0) outcomes.push(`${tag}: ${row.status} but cost ${row.cost_sparks}`);
    if (rec.replay && !(rec.replay.status === 202 && rec.replay.sameRun && rec.replay.replayedHeader === 'true')) {
      outcomes.push(`${tag}: the repeated start through the other API answered ${JSON.stringify(rec.replay)}`);
    }
  }
  const canceledRunning = started.filter((r) => r.kind === 'cancel_running' && r.cancel?.status === 200).length;
  const replays = started.filter((r) => r.replay).length;
  return [
    check('client saw only specified answers', client, `${records.length} runs requested, ${started.length} accepted`),
    check('every run final, exactly one final event', finals, `${runs.length} runs, each with one run.<status> event`),
    check('each kind of run ended as it should', outcomes, `${canceledRunning} canceled while running, ${replays} idempotent repeats through the other API`),
  ];
}

export async function checkLedger(top: Topology, teams: TeamRef[], runs: DbRun[]): Promise<Check> {
  const failures: string[] = [];
  for (const d of await ledgerDrift(top.db.pool)) failures.push(`team ${d.team_id}: balance ${d.balance}, ledger sum ${d.ledger}`);
  const { rows } = await top.db.pool.query<{ id: string; balance: number; grants: number; charges: number; open: number }>(
    `SELECT t.id, t.sparks_available AS balance,
            coalesce((SELECT sum(amount) FROM ledger_entries l WHERE l.team_id = t.id AND l.kind = 'grant'), 0)::bigint AS grants,
            coalesce((SELECT sum(amount) FROM ledger_entries l WHERE l.team_id = t.id AND l.kind = 'charge'), 0)::bigint AS charges,
            (SELECT count(*) FROM ledger_entries h WHERE h.team_id = t.id AND h.kind = 'hold'
                AND NOT EXISTS (SELECT 1 FROM ledger_entries r WHERE r.run_id = h.run_id AND r.kind = 'release'))::integer AS open
       FROM teams t WHERE t.id = ANY($1::uuid[])`,
    [teams.map((t) => t.teamId)],
  );
  let charged = 0;
  for (const t of rows) {
    charged -= t.charges;
    if (t.balance !== t.grants + t.charges) failures.push(`team ${t.id}: balance ${t.balance} != grants ${t.grants} + charges ${t.charges}`);
    if (t.open) failures.push(`team ${t.id}: ${t.open} holds never released`);
  }
  for (const r of runs) {
    const charge = r.status === 'succeeded' && r.cost_sparks > 0 ? [-r.cost_sparks] : [];
    if (r.holds.length !== 1 || r.holds[0] !== -r.hold_sparks) failures.push(`run ${r.id}: holds [${r.holds.join(', ')}] for a hold of ${r.hold_sparks}`);
    if (r.releases.length !== 1 || r.releases[0] !== r.hold_sparks) failures.push(`run ${r.id}: releases [${r.releases.join(', ')}]`);
    if (r.charges.join() !== charge.join()) failures.push(`run ${r.id} (${r.status}): charges [${r.charges.join(', ')}], expected [${charge.join(', ')}]`);
  }
  return check('ledger balances to the Spark', failures, `${rows.length} teams, ${charged} Sparks charged, balance = grants - charges, no hold left`);
}

interface Expected {
  endpoint: string;
  eventId: string;
  runId: string;
  type: string;
}

async function expectedDeliveries(top: Topology, teams: TeamRef[]): Promise<Expected[]> {
  const out: Expected[] = [];
  for (const team of teams) {
    if (!team.endpoints.length) continue;
    const { rows } = await top.db.pool.query<{ id: string; run_id: string; type: string }>('SELECT id, run_id, type FROM run_events WHERE team_id = $1::uuid', [team.teamId]);
    for (const e of rows) for (const ep of team.endpoints) if (ep.events.includes(e.type)) out.push({ endpoint: ep.label, eventId: e.id, runId: e.run_id, type: e.type });
  }
  return out;
}

/** Waits (up to timeoutMs) until every expected delivery arrived and none is pending, then compares. */
export async function checkWebhooks(top: Topology, teams: TeamRef[], timeoutMs: number): Promise<{ check: Check; figures: Record<string, number> }> {
  const expected = await expectedDeliveries(top, teams);
  const key = (endpoint: string, eventId: string) => `${endpoint} ${eventId}`;
  const received = () => new Set(top.sink.requests.filter((r) => r.status < 300).map((r) => key(r.endpoint, r.eventId)));
  const pending = async () =>
    (await top.db.pool.query<{ n: number }>("SELECT count(*)::integer AS n FROM webhook_deliveries WHERE status = 'pending' AND team_id = ANY($1::uuid[])", [teams.map((t) => t.teamId)])).rows[0]?.n ?? 0;
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline && (expected.some((e) => !received().has(key(e.endpoint, e.eventId))) || (await pending()) > 0)) await delay(250);

  const failures: string[] = [];
  const got = received();
  const want = new Set(expected.map((e) => key(e.endpoint, e.eventId)));
  for (const e of expected) if (!got.has(key(e.endpoint, e.eventId))) failures.push(`missing: ${e.type} of run ${e.runId} at ${e.endpoint}`);
  for (const k of got) if (!want.has(k)) failures.push(`not expected: ${k}`);
  const byEvent = new Map(expected.map((e) => [e.eventId, e]));
  const eventsPerRun = new Map<string, Set<string>>();
  for (const r of top.sink.requests) {
    if (!r.signatureOk) failures.push(`bad signature on delivery ${r.deliveryId} at ${r.endpoint}`);
    const e = byEvent.get(r.eventId);
    if (e && (r.runId !== e.runId || r.type !== e.type || r.runStatus !== e.type.slice(4))) failures.push(`delivery ${r.deliveryId}: ${r.type} for run ${r.runId}, expected ${e.type} for ${e.runId}`);
    if (r.runId) eventsPerRun.set(`${r.endpoint} ${r.runId}`, (eventsPerRun.get(`${r.endpoint} ${r.runId}`) ?? new Set()).add(r.eventId));
  }
  for (const [k, ids] of eventsPerRun) if (ids.size > 1) failures.push(`${k}: ${ids.size} different event ids for one run`);
  const { rows } = await top.db.pool.query<{ status: string; n: number; attempts: number }>(
    'SELECT status, count(*)::integer AS n, sum(attempts)::integer AS attempts FROM webhook_deliveries WHERE team_id = ANY($1::uuid[]) GROUP BY status',
    [teams.map((t) => t.teamId)],
  );
  for (const row of rows) if (row.status !== 'delivered') failures.push(`${row.n} deliveries ${row.status}`);
  const accepted = new Map<string, number>();
  for (const r of top.sink.requests) if (r.status < 300) accepted.set(key(r.endpoint, r.eventId), (accepted.get(key(r.endpoint, r.eventId)) ?? 0) + 1);
  const figures = {
    expected: expected.length,
    received_distinct: got.size,
    requests: top.sink.requests.length,
    answered_500: top.sink.requests.filter((r) => r.status >= 500).length,
    accepted_twice: [...accepted.values()].filter((n) => n > 1).length,
  };
  return {
    check: check(
      'every webhook delivered once per subscribed endpoint',
      failures,
      `${figures.expected} expected, ${figures.received_distinct} distinct received in ${figures.requests} requests (${figures.answered_500} first attempts answered 500 and retried)`,
    ),
    figures,
  };
}

export function checkRateLimit(p: RateProbe): Check {
  const failures = [...p.bad];
  if (p.ok > p.bound) failures.push(`${p.ok} requests passed; at most ${p.bound} may in ${(p.elapsedMs / 1000).toFixed(1)} s`);
  // A process takes a second's worth of tokens at a time (one below 120/min) and spends them
  // itself; what one process still holds when the other is refused is never spent (the limit can
  // be undershot, never exceeded): at most a batch less one per process, counted here twice over
  // for reservations that lapse. Below 120/min every token of the full bucket is used.
  const batch = Math.max(1, Math.min(100, Math.floor(p.limit / 60)));
  const floor = p.limit - 2 * 2 * (batch - 1);
  if (p.ok < floor) failures.push(`only ${p.ok} passed; a full bucket holds ${p.limit} (at least ${floor} must pass)`);
  if (Object.keys(p.okByApi).length < 2 || Object.keys(p.refusedByApi).length < 2) failures.push(`both APIs must pass and refuse some: ${JSON.stringify(p.okByApi)} / ${JSON.stringify(p.refusedByApi)}`);
  return check(
    `per-key rate limit (${p.limit}/min) across both APIs`,
    failures,
    `${p.ok} of ${p.sent} passed in ${(p.elapsedMs / 1000).toFixed(1)} s (bound ${p.bound}: ${p.limit} + refill), ${p.refused} refused 429`,
  );
}

export function checkCeiling(p: CeilingProbe): Check {
  const failures = [...p.bad];
  if (!p.cliSet) failures.push('toolrun admin team update --runs-per-hour did not set the ceiling');
  if (p.accepted !== p.limit) failures.push(`${p.accepted} runs accepted; the ceiling is ${p.limit}`);
  if (p.refused !== p.attempts - p.limit) failures.push(`${p.refused} refused; expected ${p.attempts - p.limit}`);
  return check(
    `hourly run ceiling (${p.limit}/h) across both APIs`,
    failures,
    `${p.accepted} accepted ${JSON.stringify(p.acceptedByApi)}, ${p.refused} refused 429 with Retry-After to the hour ${JSON.stringify(p.refusedByApi)}`,
  );
}

export function checkProcesses(top: Topology): Check {
  const failures: string[] = [];
  for (const p of [...top.apis.map((a) => a.proc), ...top.workers]) {
    if (!p.alive) failures.push(`${p.name} exited`);
    for (const l of p.lines.filter((x) => typeof x.level === 'number' && x.level >= 50)) failures.push(`${p.name}: ${String(l.msg)} ${JSON.stringify(l.err ?? '').slice(0, 200)}`);
    for (const [status, n] of p.requestsByStatus) if (status >= 500) failures.push(`${p.name}: ${n} answers with status ${status}`);
  }
  return check('no process failed, no 5xx, no error logs', failures, `${top.apis.length} API + ${top.workers.length} worker processes`);
}


/** Every process stops on SIGTERM by itself, exit code 0, within its shutdown grace. */
export function checkShutdown(exits: ProcessExit[], graceMs: number): Check {
  const failures = exits.filter((e) => e.code !== 0 || e.signal !== null).map((e) => `${e.name}: exit ${JSON.stringify({ code: e.code, signal: e.signal })} after ${(e.ms / 1000).toFixed(1)} s`);
  return check(
    'every process stops cleanly on SIGTERM',
    failures,
    `exit 0 in ${exits.map((e) => `${e.name} ${(e.ms / 1000).toFixed(1)} s`).join(', ')} (SIGKILL after ${graceMs / 1000} s)`,
  );
}
