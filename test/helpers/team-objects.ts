// Real objects of every kind the API names by id, made through the API for one team: a ready file,
// an upload left incomplete, a succeeded run with outputs, a queued run and webhook endpoints. For
// the hostile-input tests, which aim requests at real ids of their own and other teams.
// The server must run the test tools (testRegistry) and allow private networks (the receiver).
import assert from 'node:assert/strict';
import type { Db } from '../../src/db/pool.js';
import { createApiKey } from '../../src/auth/key-admin.js';
import type { Scope } from '../../src/auth/repository.js';
import { addMember, updateMember } from '../../src/teams/repository.js';
import { makeTeam, type TeamFixture } from './fixtures.js';
import type { Receiver } from './receiver.js';
import { beginUpload, call, runOf, start, uploadReady, type RunJson } from './runs.js';
import type { TestServer } from './server.js';
import type { ToolRegistry } from '../../src/tools/registry.js';
import { startTestWorker, waitFor } from './worker.js';

export interface TeamObjects {
  team: TeamFixture;
  fileId: string;
  uploading: { fileId: string; uploadId: string };
  /** Succeeded, with at least one output. */
  run: RunJson;
  assetId: string;
  /** Started while no worker runs: stays queued until canceled. */
  queuedRunId: string;
  endpointIds: string[];
  /** The delivery of the succeeded run's event to the first endpoint (pending: no webhook worker runs). */
  deliveryId: string;
}

/** A team whose owner key has every scope at the highest rate, and Sparks to spare. */
export function fullTeam(db: Db): Promise<TeamFixture> {
  return makeTeam(db, { plan: 'pro', sparks: 1_000_000, scopes: ['read', 'run', 'webhooks'], rate: 300 });
}

export interface Key {
  key: string;
  keyId: string;
}

/** Another key of the team's owner, made like the CLI makes keys. */
export async function extraKey(db: Db, team: TeamFixture, name: string, scopes: Scope[], rate = 300): Promise<Key> {
  const made = await createApiKey(db, { memberId: team.memberId, name, scopes, rate, envPrefix: 'svc_test_' });
  return { key: made.key, keyId: made.api_key.id };
}

/**
 * A key with every scope whose creator is a plain member: keys are only made for owners and
 * admins, so the admin who made it is then demoted, as happens in a real team.
 */
export async function memberKey(db: Db, team: TeamFixture, email: string, rate = 300): Promise<Key> {
  const admin = await addMember(db, { teamId: team.teamId, email, role: 'admin' });
  const made = await createApiKey(db, { memberId: admin.id, name: 'member key', scopes: ['read', 'run', 'webhooks'], rate, envPrefix: 'svc_test_' });
  await updateMember(db, admin.id, 'member');
  return { key: made.key, keyId: made.api_key.id };
}

/**
 * Makes each team's objects. The succeeded runs need a worker, which runs only here; afterwards
 * no worker runs, so the queued runs stay queued.
 */
export async function makeTeamObjects(
  s: TestServer,
  tools: ToolRegistry,
  teams: TeamFixture[],
  png: Buffer,
  receiver: Receiver,
): Promise<TeamObjects[]> {
  const made: Omit<TeamObjects, 'run' | 'assetId' | 'queuedRunId' | 'deliveryId'>[] = [];
  const started: RunJson[] = [];
  for (const team of teams) {
    const fileId = await uploadReady(s, team.key, png, 'photo.png', 'image/png');
    const up = await beginUpload(s, team.key, png, 'partial.png', 'image/png');
    started.push(runOf(await start(s, team.key, 'test_copy', { inputs: { image: [fileId] } })));
    const endpointIds: string[] = [];
    for (const path of ['/one', '/two']) {
      const res = await call(s, team.key, 'POST', '/v1/webhook-endpoints', { url: receiver.url(path) });
      assert.equal(res.statusCode, 201, res.body);
      endpointIds.push(res.json<{ id: string }>().id);
    }
    made.push({ team, fileId, uploading: { fileId: up.file_id, uploadId: up.upload_id }, endpointIds });
  }
  const worker = await startTestWorker(s, tools);
  const done: RunJson[] = [];
  try {
    for (const [i, run] of started.entries()) {
      const key = made[i]?.team.key ?? '';
      done.push(
        await waitFor(
          `run ${run.id} to succeed`,
          async () => {
            const r = (await call(s, key, 'GET', `/v1/runs/${run.id}`)).json<RunJson>();
            return ['succeeded', 'failed', 'canceled'].includes(r.status) ? r : undefined;
          },
          60_000,
        ),
      );
    }
    await waitFor(
      'the outputs to be checked',
      async () => {
        const { rows } = await s.database.db.pool.query<{ n: number }>("SELECT count(*)::integer AS n FROM run_outputs WHERE status = 'checking'");
        return rows[0]?.n === 0 ? true : undefined;
      },
      60_000,
    );
  } finally {
    await worker.stop(1000);
  }
  const out: TeamObjects[] = [];
  for (const [i, m] of made.entries()) {
    const run = done[i];
    assert.ok(run && run.status === 'succeeded', `setup run: ${JSON.stringify(run)}`);
    const assetId = run.outputs[0]?.asset_id;
    assert.ok(assetId, 'the setup run has no output');
    const queued = runOf(await start(s, m.team.key, 'test_copy', { inputs: { image: [m.fileId] } }));
    const { rows } = await s.database.db.pool.query<{ id: string }>(
      'SELECT id FROM webhook_deliveries WHERE endpoint_id = $1::uuid ORDER BY created_at LIMIT 1',
      [m.endpointIds[0]],
    );
    assert.ok(rows[0], 'the setup run made a delivery to the first endpoint');
    out.push({ ...m, run, assetId, queuedRunId: queued.id, deliveryId: rows[0].id });
  }
  return out;
}
