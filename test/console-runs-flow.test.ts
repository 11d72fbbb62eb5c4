// The console's runs, playground and usage API (issue 15) over real sockets, with a real worker
// running the test tool, when all goes well: app runs share the engine, price, balance and hourly
// ceiling with API runs and are attributed to the member; the runs list filters and pages; cancel
// releases the hold; a queued run shows its place; the ledger and usage add up. (What the console
// refuses, and what app runs never show through, is in console-runs-guards.test.ts.)
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, test } from 'node:test';
import { updateTeam } from '../src/teams/repository.js';
import { signedInMember } from './helpers/console.js';
import {
  appRun,
  consoleGet,
  consoleRunsSuite,
  consoleUpload,
  finalRun,
  type ListJson,
  type RunJson,
} from './helpers/console-runs.js';
import { assertError } from './helpers/error-envelope.js';
import { uploadReadyFile } from './helpers/faults.js';
import { bearer } from './helpers/fixtures.js';
import { makePng } from './helpers/media.js';
import { socketRequest } from './helpers/socket-request.js';
import { waitFor } from './helpers/worker.js';

const { apiRun, consoleTeam, db, url, worker } = consoleRunsSuite();

describe('app runs: happy path', () => {
  test('upload in the console, estimate as /v1 does, start: an app run of the member, charged like an API run, with its ledger, outputs and input', async () => {
    await worker();
    const { team, owner } = await consoleTeam();
    const png = await makePng(64, 48);
    const fileId = await consoleUpload(owner, png);

    const est = await owner.client.call('POST', '/console/api/tools/test_copy/estimate', { inputs: { image: [fileId] } });
    assert.equal(est.statusCode, 200, est.body);
    const apiEst = await socketRequest(url(), '/v1/tools/test_copy/estimate', {
      method: 'POST',
      headers: { ...bearer(team.key), 'content-type': 'application/json' },
      body: JSON.stringify({ inputs: { image: [fileId] } }),
    });
    assert.equal(apiEst.statusCode, 200, apiEst.body);
    assert.deepEqual(est.json(), apiEst.json(), 'the same price through the console and /v1');
    const sparks = est.json<{ sparks: number }>().sparks;

    const started = await appRun(owner, fileId);
    assert.equal(started.source, 'app');
    assert.deepEqual(started.started_by, { kind: 'member', id: team.memberId, email: owner.email });
    assert.equal(started.tool_name, 'Test copy');
    assert.equal(started.cost_sparks, sparks, 'the hold is the price');
    // (The worker may have finished it already: the hold comes first either way.)
    assert.deepEqual(started.ledger.map((l) => [l.kind, l.amount])[0], ['hold', -sparks]);

    const done = await finalRun(owner, started.id);
    assert.equal(done.status, 'succeeded', done.error ?? '');
    assert.equal(done.progress, 1);
    assert.equal(done.can_cancel, false);
    const late = assertError(await owner.client.call('POST', `/console/api/runs/${started.id}/cancel`), 409, 'run_not_cancelable');
    assert.deepEqual(late.details, { status: 'succeeded' });
    assert.deepEqual(done.ledger.map((l) => [l.kind, l.amount]), [['hold', -sparks], ['release', sparks], ['charge', -sparks]]);
    assert.deepEqual(done.input_files.map((f) => [f.slot, f.file_id, f.width]), [['image', fileId, 64]]);
    assert.equal(done.outputs.length, 1);
    const overview = await consoleGet<{ sparks_available: number }>(owner, '/console/api/overview');
    assert.equal(overview.sparks_available, 1000 - sparks, 'charged from the same balance');

    const out = done.outputs[0]!;
    const outputUrl = await waitFor('the output URL', async () => {
      const res = await owner.client.call('GET', `/console/api/runs/${started.id}/outputs/${out.asset_id}/url`);
      return res.statusCode === 409 ? undefined : res;
    });
    assert.equal(outputUrl.statusCode, 200, outputUrl.body);
    const downloaded = Buffer.from(await (await fetch(outputUrl.json<{ url: string }>().url)).arrayBuffer());
    assert.equal(downloaded.length, out.size_bytes);
    const input = await owner.client.call('GET', `/console/api/runs/${started.id}/inputs/${fileId}/url`);
    assert.equal(input.statusCode, 200, input.body);
    const inputBytes = Buffer.from(await (await fetch(input.json<{ url: string }>().url)).arrayBuffer());
    assert.equal(createHash('sha256').update(inputBytes).digest('hex'), createHash('sha256').update(png).digest('hex'), 'the input as uploaded');
  });

  test('runs list: API and app runs newest first, who started each, filters by tool, status, key, member and source, pages by cursor', async () => {
    await worker();
    const { team, owner } = await consoleTeam();
    const other = await signedInMember(url(), db(), team.teamId, 'member');
    const fileId = await uploadReadyFile(url(), team.key, await makePng(32, 32), 'a.png', 'image/png');
    const ids: string[] = [];
    ids.push((await apiRun(team.key, fileId)).id);
    ids.push((await appRun(owner, fileId)).id);
    ids.push((await appRun(other, fileId, 'fail')).id);
    ids.push((await apiRun(team.key, fileId)).id);
    ids.push((await appRun(owner, fileId)).id);
    for (const id of ids) await finalRun(owner, id);

    const all = await consoleGet<ListJson>(owner, '/console/api/runs');
    assert.deepEqual(all.data.map((r) => r.id), [...ids].reverse(), 'newest first');
    assert.equal(all.next_cursor, null);
    const byId = new Map(all.data.map((r) => [r.id, r]));
    assert.deepEqual(byId.get(ids[0]!)!.started_by, { kind: 'key', id: team.keyId, name: all.filters.keys[0]!.name, member_email: owner.email });
    assert.deepEqual(byId.get(ids[2]!)!.started_by, { kind: 'member', id: other.memberId, email: other.email });
    assert.deepEqual(all.filters.keys.map((k) => k.id), [team.keyId]);
    assert.deepEqual(new Set(all.filters.members.map((m) => m.id)), new Set([team.memberId, other.memberId]));
    assert.ok(all.filters.tools.some((t) => t.id === 'test_copy'));

    const ids_ = async (query: string) => (await consoleGet<ListJson>(owner, `/console/api/runs?${query}`)).data.map((r) => r.id);
    assert.deepEqual(await ids_('source=app'), [ids[4], ids[2], ids[1]]);
    assert.deepEqual(await ids_('source=api'), [ids[3], ids[0]]);
    assert.deepEqual(await ids_('status=failed'), [ids[2]]);
    assert.deepEqual(await ids_(`member_id=${other.memberId}`), [ids[2]]);
    assert.deepEqual(await ids_(`api_key_id=${team.keyId}`), [ids[3], ids[0]]);
    assert.deepEqual(await ids_('tool_id=test_copy&status=succeeded&source=app'), [ids[4], ids[1]]);
    assert.deepEqual(await ids_('tool_id=image_upscale'), []);

    // Pages of two: every run once, in order, the last page without a cursor.
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page: ListJson = await consoleGet<ListJson>(owner, `/console/api/runs?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      assert.ok(page.data.length <= 2);
      seen.push(...page.data.map((r) => r.id));
      cursor = page.next_cursor;
      pages++;
    } while (cursor);
    assert.equal(pages, 3);
    assert.deepEqual(seen, [...ids].reverse());
  });

  test('the hourly ceiling is shared: with 2 an hour, one app run and one API run make the third start 429 on either side', async () => {
    const { team, owner } = await consoleTeam();
    await db().pool.query('UPDATE teams SET runs_per_hour = 2 WHERE id = $1::uuid', [team.teamId]);
    const fileId = await uploadReadyFile(url(), team.key, await makePng(32, 32), 'a.png', 'image/png');
    const hanging = [(await appRun(owner, fileId, 'hang')).id, (await apiRun(team.key, fileId, 'hang')).id];
    const viaConsole = await owner.client.call('POST', '/console/api/tools/test_copy/runs', { inputs: { image: [fileId] } });
    const e = assertError(viaConsole, 429, 'rate_limited');
    assert.deepEqual(e.details, { limit_per_hour: 2 });
    assert.ok(Number(viaConsole.headers['retry-after']) >= 1);
    const viaApi = await socketRequest(url(), '/v1/tools/test_copy/runs', {
      method: 'POST',
      headers: { ...bearer(team.key), 'content-type': 'application/json' },
      body: JSON.stringify({ inputs: { image: [fileId] } }),
    });
    assertError(viaApi, 429, 'rate_limited');
    const { rows } = await db().pool.query<{ n: number }>('SELECT count(*)::integer AS n FROM runs WHERE team_id = $1::uuid', [team.teamId]);
    assert.equal(rows[0]!.n, 2, 'nothing written for the refused starts');
    for (const id of hanging) assert.equal((await owner.client.call('POST', `/console/api/runs/${id}/cancel`)).statusCode, 200);
  });

  test('cancel: a queued app run is canceled and its hold released; the ledger page shows it; a member cancels only runs they started', async () => {
    const { team, owner } = await consoleTeam();
    const member = await signedInMember(url(), db(), team.teamId, 'member');
    const fileId = await uploadReadyFile(url(), team.key, await makePng(32, 32), 'a.png', 'image/png');
    // No worker takes these: a queued run stays queued until canceled. (Other tests' workers poll
    // every team's queue, so the runs hang instead of finishing if one is taken.)
    const mine = await appRun(member, fileId, 'hang');
    const owners = await appRun(owner, fileId, 'hang');
    assert.equal(mine.can_cancel, true);
    const seen = await consoleGet<RunJson>(member, `/console/api/runs/${owners.id}`);
    assert.equal(seen.can_cancel, false, "another member's run");
    const refused = assertError(await member.client.call('POST', `/console/api/runs/${owners.id}/cancel`), 403, 'insufficient_role');
    assert.equal(refused.errors, null);

    const canceled = await member.client.call('POST', `/console/api/runs/${mine.id}/cancel`);
    assert.equal(canceled.statusCode, 200, canceled.body);
    const run = canceled.json<RunJson>();
    assert.equal(run.status, 'canceled');
    assert.deepEqual(run.ledger.map((l) => [l.kind, l.amount]), [['hold', -mine.cost_sparks], ['release', mine.cost_sparks]]);
    // Canceling again answers the canceled run (as /v1 does) and moves no Sparks.
    const again = await member.client.call('POST', `/console/api/runs/${mine.id}/cancel`);
    assert.equal(again.statusCode, 200, again.body);
    assert.deepEqual(again.json<RunJson>().ledger, run.ledger);
    // Owners cancel anyone's.
    assert.equal((await owner.client.call('POST', `/console/api/runs/${owners.id}/cancel`)).statusCode, 200);

    const ledger = await consoleGet<{ sparks_available: number; data: { kind: string; amount: number; run_id: string | null }[] }>(
      owner,
      `/console/api/ledger?run_id=${mine.id}`,
    );
    assert.deepEqual(ledger.data.map((l) => [l.kind, l.amount]), [['release', mine.cost_sparks], ['hold', -mine.cost_sparks]]);
    assert.equal(ledger.sparks_available, 1000, 'every hold released');
  });

  test("a queued run shows its place in the team's queue and the team's slots; a running or final run shows none", async () => {
    const { team, owner } = await consoleTeam();
    await updateTeam(db().pool, team.teamId, { maxConcurrentRuns: 1 });
    await worker();
    const fileId = await uploadReadyFile(url(), team.key, await makePng(32, 32), 'a.png', 'image/png');
    const first = await appRun(owner, fileId, 'hang');
    await waitFor('the first run to start', async () => (await consoleGet<RunJson>(owner, `/console/api/runs/${first.id}`)).status === 'running');
    // The team's one slot is taken: these stay queued whatever the workers do.
    const second = await apiRun(team.key, fileId, 'hang');
    const third = await appRun(owner, fileId, 'hang');
    assert.deepEqual(third.queue, { position: 2, running: 1, limit: 1 }, 'as the start answered');
    assert.deepEqual((await consoleGet<RunJson>(owner, `/console/api/runs/${second.id}`)).queue, { position: 1, running: 1, limit: 1 });
    assert.equal((await consoleGet<RunJson>(owner, `/console/api/runs/${first.id}`)).queue, null, 'a running run');
    for (const id of [first.id, second.id, third.id]) {
      assert.equal((await owner.client.call('POST', `/console/api/runs/${id}/cancel`)).statusCode, 200);
    }
    assert.equal((await finalRun(owner, third.id)).queue, null, 'a final run');
  });

  test('ledger pages and filters; usage: 30 days, spent per day and per tool from charges less refunds', async () => {
    await worker();
    // This team's entries get ids across a power of ten (99999, 100000, ...): a text order would show them wrongly.
    await db().pool.query(`SELECT setval('ledger_entries_id_seq', greatest((SELECT last_value FROM ledger_entries_id_seq), 99998))`);
    const { team, owner } = await consoleTeam();
    const fileId = await uploadReadyFile(url(), team.key, await makePng(32, 32), 'a.png', 'image/png');
    const a = await appRun(owner, fileId);
    const b = await apiRun(team.key, fileId);
    await finalRun(owner, a.id);
    const bDone = await finalRun(owner, b.id);
    const spent = a.cost_sparks + bDone.cost_sparks;

    const first = await consoleGet<{ data: { id: string; kind: string }[]; next_cursor: string | null }>(owner, '/console/api/ledger?limit=3');
    assert.equal(first.data.length, 3);
    assert.ok(first.next_cursor);
    const rest = await consoleGet<{ data: { id: string; kind: string }[]; next_cursor: string | null }>(owner, `/console/api/ledger?limit=50&cursor=${first.next_cursor}`);
    const ids = [...first.data, ...rest.data].map((l) => Number(l.id));
    assert.deepEqual(ids, [...ids].sort((x, y) => y - x), 'newest first, by number');
    assert.ok(ids.some((id) => id < 100_000) && ids.some((id) => id >= 100_000), `ids across a power of ten: ${ids.join(', ')}`);
    const runEntries = (await consoleGet<RunJson>(owner, `/console/api/runs/${a.id}`)).ledger.map((l) => Number(l.id));
    assert.deepEqual(runEntries, [...runEntries].sort((x, y) => x - y), "a run's entries oldest first, by number");
    const kinds = [...first.data, ...rest.data].map((l) => l.kind).sort();
    assert.deepEqual(kinds, ['charge', 'charge', 'grant', 'hold', 'hold', 'release', 'release']);
    assert.equal(rest.next_cursor, null);
    const charges = await consoleGet<{ data: { kind: string }[] }>(owner, '/console/api/ledger?kind=charge');
    assert.deepEqual(charges.data.map((l) => l.kind), ['charge', 'charge']);

    const usage = await consoleGet<{ sparks_available: number; since: string; days: { date: string; sparks_spent: number; runs: number }[]; tools: { tool_id: string; runs: number; sparks_spent: number }[] }>(
      owner,
      '/console/api/usage',
    );
    assert.equal(usage.days.length, 30);
    const today = new Date().toISOString().slice(0, 10);
    assert.equal(usage.days[29]!.date, today);
    assert.equal(usage.since, usage.days[0]!.date);
    assert.deepEqual(usage.days[29], { date: today, sparks_spent: spent, runs: 2 });
    assert.equal(usage.days.slice(0, 29).reduce((n, d) => n + d.sparks_spent + d.runs, 0), 0);
    assert.deepEqual(usage.tools, [{ tool_id: 'test_copy', tool_name: 'Test copy', runs: 2, sparks_spent: spent }]);
    assert.equal(usage.sparks_available, 1000 - spent);
  });
});
