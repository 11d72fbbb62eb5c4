// The teams of the load: made through the same code the operator CLI uses (teams, members, keys,
// Sparks), with their webhook endpoints created and their input files uploaded over the API,
// alternating between the two API processes.
import sharp from 'sharp';
import { createApiKey } from '../../src/auth/key-admin.js';
import type { Plan } from '../../src/auth/repository.js';
import type { Db } from '../../src/db/pool.js';
import { addMember, createTeam } from '../../src/teams/repository.js';
import { makeMp4, makePng } from '../../test/helpers/media.js';
import type { Client } from './client.js';
import type { Topology } from './cluster.js';

export const ALL_EVENTS = ['run.succeeded', 'run.failed', 'run.canceled'];

export interface Key {
  id: string;
  key: string;
}

export interface Endpoint {
  label: string;
  id: string;
  events: string[];
}

export interface Files {
  png: string;
  jpeg: string;
  clipA: string;
  clipB: string;
}

/** A team the checks look at: its keys and its webhook endpoints (none for the probes' teams). */
export interface TeamRef {
  label: string;
  teamId: string;
  keys: Key[];
  endpoints: Endpoint[];
}

/** A team of the load, with its plan and uploaded inputs. */
export interface LoadTeam extends TeamRef {
  plan: Plan;
  files: Files;
}

export interface Media {
  png: Buffer[];
  jpeg: Buffer[];
  clip: Buffer;
}

/** Several teams on different plans; their endpoints subscribe to different events (one has none). */
const TEAMS: { label: string; plan: Plan; endpoints: string[][] }[] = [
  { label: 'atlas', plan: 'pro', endpoints: [ALL_EVENTS] },
  { label: 'borealis', plan: 'team', endpoints: [ALL_EVENTS, ['run.failed', 'run.canceled']] },
  // Plus: every tool but video_upscale (Pro and Team only).
  { label: 'cirrus', plan: 'plus', endpoints: [['run.succeeded']] },
  { label: 'delta', plan: 'pro', endpoints: [] },
];
export const GRANT = 200_000;

export async function makeMedia(): Promise<Media> {
  const png = await Promise.all([makePng(160, 120), makePng(200, 150), makePng(240, 180), makePng(120, 90)]);
  return {
    png,
    jpeg: await Promise.all(png.map((p) => sharp(p).jpeg({ quality: 85 }).toBuffer())),
    // Tiny but real H.264 + AAC: enough frames for a transition and an upscale that take a moment.
    clip: await makeMp4({ seconds: 1, width: 96, height: 54, fps: 10 }),
  };
}

let emails = 0;

/** A team with an owner and `keys` keys of the given rate (scopes read, run, webhooks). */
export async function makeTeam(db: Db, label: string, plan: Plan, opts: { keys: number; rate: number; sparks: number; runsPerHour?: number }): Promise<{ teamId: string; keys: Key[] }> {
  const team = await createTeam(db, { name: `Topology ${label}`, plan, sparks: opts.sparks, ...(opts.runsPerHour ? { runsPerHour: opts.runsPerHour } : {}) });
  const member = await addMember(db, { teamId: team.id, email: `owner-${label}-${++emails}@topology.test`, role: 'owner' });
  const keys: Key[] = [];
  for (let i = 0; i < opts.keys; i++) {
    const created = await createApiKey(db, { memberId: member.id, name: `${label} key ${i + 1}`, scopes: ['read', 'run', 'webhooks'], rate: opts.rate, envPrefix: 'svc_test_' });
    keys.push({ id: created.api_key.id, key: created.key });
  }
  return { teamId: team.id, keys };
}

/** Uploads a team's inputs: each file through a different API process and key. */
export async function uploadFiles(top: Topology, client: Client, keys: Key[], media: Media, n: number): Promise<Files> {
  const api = (i: number) => top.apis[i % top.apis.length]!.url;
  const key = (i: number) => keys[i % keys.length]!.key;
  const [png, jpeg, clipA, clipB] = await Promise.all([
    client.upload(api(0), key(0), media.png[n % media.png.length]!, 'photo.png', 'image/png'),
    client.upload(api(1), key(1), media.jpeg[n % media.jpeg.length]!, 'photo.jpg', 'image/jpeg'),
    client.upload(api(2), key(0), media.clip, 'a.mp4', 'video/mp4'),
    client.upload(api(3), key(1), media.clip, 'b.mp4', 'video/mp4'),
  ]);
  return { png: png!, jpeg: jpeg!, clipA: clipA!, clipB: clipB! };
}

export async function setupTeams(top: Topology, client: Client, media: Media): Promise<LoadTeam[]> {
  return Promise.all(
    TEAMS.map(async (spec, n) => {
      const { teamId, keys } = await makeTeam(top.db, spec.label, spec.plan, { keys: 2, rate: 300, sparks: GRANT });
      const endpoints: Endpoint[] = [];
      for (const [i, events] of spec.endpoints.entries()) {
        const label = `${spec.label}-${i + 1}`;
        const res = await client.patient<{ id: string; signing_secret: string }>(top.apis[i % 2]!.url, keys[i % 2]!.key, 'POST', '/v1/webhook-endpoints', {
          url: top.sink.url(label),
          events,
        });
        if (res.status !== 201) throw new Error(`creating endpoint ${label}: ${res.status} ${JSON.stringify(res.body)}`);
        top.sink.setSecret(label, res.body.signing_secret);
        endpoints.push({ label, id: res.body.id, events });
      }
      const files = await uploadFiles(top, client, keys, media, n);
      return { label: spec.label, teamId, plan: spec.plan, keys, endpoints, files };
    }),
  );
}
