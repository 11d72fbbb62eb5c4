// Shared by the webhook tests: API calls with any method, a Stripe-style signature verifier
// written here (not the service's signing code), in-process WebhookWorkers, and runs that finish
// quickly so they emit events.
import assert from 'node:assert/strict';
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import type { WebhooksConfig } from '../../src/config/config.js';
import type { AgentPoolOptions } from '../../src/net/agents.js';
import type { Db } from '../../src/db/pool.js';
import { testLogger } from './test-logs.js';
import { WebhookWorker } from '../../src/webhooks/worker.js';
import type { TestApp } from './app.js';
import { bearer, makeTeam, type TeamFixture } from './fixtures.js';
import { makePng } from './media.js';
import { uploadReady, type RunJson } from './runs.js';
import type { TestServer } from './server.js';
import type { Received } from './receiver.js';

export type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';

export const ALL_EVENTS = ['run.succeeded', 'run.failed', 'run.canceled'];
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** A request through the real app; body undefined sends none, a string is sent as it is. */
export function req(t: TestApp, key: string | null, method: Method, url: string, body?: unknown): Promise<LightMyRequestResponse> {
  const headers: Record<string, string> = key === null ? {} : bearer(key);
  if (body === undefined) return t.app.inject({ method, url, headers });
  const payload = typeof body === 'string' ? body : JSON.stringify(body);
  return t.app.inject({ method, url, headers: { ...headers, 'content-type': 'application/json' }, payload });
}

export interface EndpointJson {
  object: string;
  id: string;
  url: string;
  events: string[];
  enabled: boolean;
  created_at: string;
  signing_secret?: string;
}

export interface EventJson {
  id: string;
  object: string;
  type: string;
  created_at: string;
  data: { run?: RunJson; webhook_endpoint_id?: string };
}

/** Creates an endpoint (201 asserted) and returns it with its signing secret. */
export async function createEndpoint(t: TestApp, key: string, url: string, events?: string[] | null): Promise<EndpointJson & { signing_secret: string }> {
  const res = await req(t, key, 'POST', '/v1/webhook-endpoints', events === undefined ? { url } : { url, events });
  assert.equal(res.statusCode, 201, res.body);
  const e = res.json<EndpointJson>();
  assert.ok(e.signing_secret);
  return { ...e, signing_secret: e.signing_secret };
}

export async function patchEndpoint(t: TestApp, key: string, id: string, body: unknown): Promise<EndpointJson> {
  const res = await req(t, key, 'PATCH', `/v1/webhook-endpoints/${id}`, body);
  assert.equal(res.statusCode, 200, res.body);
  return res.json<EndpointJson>();
}

/** A team whose key may manage webhooks, with room for many runs and requests. */
export function webhookTeam(db: Db, opts: { role?: 'owner' | 'admin' | 'member' } = {}): Promise<TeamFixture> {
  return makeTeam(db, { scopes: ['read', 'run', 'webhooks'], rate: 300, sparks: 100_000, ...opts });
}

export type Verified = { ok: true; t: number } | { ok: false; reason: string };

/**
 * The receiver's side of the Service-Signature scheme, as Stripe's and Mux's verifiers do it:
 * parse `t=` and every `v1=`, HMAC-SHA256 over `${t}.` + the raw body bytes, hex, compare in
 * constant time, refuse timestamps further than the tolerance from now.
 */
export function verifySignature(
  secret: string,
  raw: Buffer,
  header: string | undefined,
  opts: { toleranceSeconds?: number; nowSeconds?: number } = {},
): Verified {
  if (!header) return { ok: false, reason: 'no signature header' };
  let t: number | null = null;
  const v1: string[] = [];
  for (const part of header.split(',')) {
    const i = part.indexOf('=');
    if (i < 0) continue;
    const k = part.slice(0, i).trim();
    const v = part.slice(i + 1).trim();
    if (k === 't' && /^\d+$/.test(v)) t = Number(v);
    if (k === 'v1') v1.push(v);
  }
  if (t === null) return { ok: false, reason: 'no timestamp' };
  if (!v1.length) return { ok: false, reason: 'no v1 signature' };
  const expected = Buffer.from(createHmac('sha256', secret).update(`${t}.`, 'utf8').update(raw).digest('hex'), 'utf8');
  const match = v1.some((sig) => {
    const given = Buffer.from(sig, 'utf8');
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
  if (!match) return { ok: false, reason: 'signature mismatch' };
  const now = opts.nowSeconds ?? Math.floor(Date.now() / 1000);
  if (Math.abs(now - t) > (opts.toleranceSeconds ?? 300)) return { ok: false, reason: 'timestamp outside the tolerance' };
  return { ok: true, t };
}

/** The event a received request carries (parsed, unchecked). */
export function eventOf(r: Received): EventJson {
  return JSON.parse(r.body.toString('utf8')) as EventJson;
}

/** Asserts a received request is a well-formed, correctly signed delivery; returns its event. */
export function assertSignedDelivery(r: Received, secret: string, type: string): { event: EventJson; t: number; deliveryId: string } {
  assert.equal(r.method, 'POST');
  assert.equal(r.headers['content-type'], 'application/json');
  assert.equal(r.headers['user-agent'], 'Service-Webhooks/1');
  assert.equal(r.headers['service-event'], type);
  const deliveryId = String(r.headers['service-delivery']);
  assert.match(deliveryId, UUID);
  const header = String(r.headers['service-signature']);
  assert.match(header, /^t=\d+,v1=[0-9a-f]{64}$/);
  const v = verifySignature(secret, r.body, header);
  assert.ok(v.ok, `signature does not verify: ${v.ok ? '' : v.reason}`);
  assert.ok(Math.abs(v.t - r.at / 1000) < 15, 't is the time of the attempt');
  const event = eventOf(r);
  assert.deepEqual(Object.keys(event).sort(), ['created_at', 'data', 'id', 'object', 'type']);
  assert.match(event.id, UUID);
  assert.equal(event.object, 'event');
  assert.equal(event.type, type);
  assert.ok(!Number.isNaN(Date.parse(event.created_at)) && event.created_at.endsWith('Z'), event.created_at);
  return { event, t: v.t, deliveryId };
}

const workers = new Set<WebhookWorker>();

/** An in-process WebhookWorker on a test app's database and config (optionally changed, and its connection pool's bounds). */
export async function startWebhookWorker(t: TestApp, change: Partial<WebhooksConfig> = {}, agents: Partial<AgentPoolOptions> = {}): Promise<WebhookWorker> {
  const w = new WebhookWorker({
    config: { ...t.config, webhooks: { ...t.config.webhooks, ...change } },
    db: t.database.db,
    logger: testLogger('warn', t.logs),
    agents,
  });
  await w.start();
  workers.add(w);
  return w;
}

export async function stopWebhookWorker(w: WebhookWorker, graceMs = 1000): Promise<void> {
  workers.delete(w);
  await w.stop(graceMs);
}

export async function stopWebhookWorkers(): Promise<void> {
  const all = [...workers];
  workers.clear();
  await Promise.all(all.map((w) => w.stop(500)));
}

/** Starts test_copy runs for a team and ends them: canceled at once, or by a run worker. */
export class Runs {
  private fileId = '';
  constructor(
    private readonly s: TestServer,
    private readonly key: string,
  ) {}

  async init(): Promise<this> {
    this.fileId = await uploadReady(this.s, this.key, await makePng(32, 32), 'a.png', 'image/png');
    return this;
  }

  async start(mode: 'ok' | 'fail' | 'hang'): Promise<RunJson> {
    const res = await req(this.s, this.key, 'POST', '/v1/tools/test_copy/runs', { inputs: { image: [this.fileId], mode } });
    assert.equal(res.statusCode, 202, res.body);
    return res.json<RunJson>();
  }

  /** A run canceled through the API (emits run.canceled in the cancel's transaction). */
  async canceled(): Promise<RunJson> {
    const run = await this.start('hang');
    const res = await req(this.s, this.key, 'POST', `/v1/runs/${run.id}/cancel`);
    assert.equal(res.statusCode, 200, res.body);
    const done = res.json<RunJson>();
    assert.equal(done.status, 'canceled');
    return done;
  }

  async get(id: string): Promise<RunJson> {
    const res = await req(this.s, this.key, 'GET', `/v1/runs/${id}`);
    assert.equal(res.statusCode, 200, res.body);
    return res.json<RunJson>();
  }
}

export interface DeliveryRow {
  id: string;
  event_id: string;
  status: string;
  attempts: number;
  lease_owner: string | null;
  next_attempt_at: Date;
}

export async function deliveriesOf(db: Db, endpointId: string): Promise<DeliveryRow[]> {
  const { rows } = await db.pool.query<DeliveryRow>(
    `SELECT id, event_id, status, attempts, lease_owner, next_attempt_at FROM webhook_deliveries WHERE endpoint_id = $1::uuid ORDER BY created_at, id`,
    [endpointId],
  );
  return rows;
}

/** The event a run's final transition wrote. */
export async function eventOfRun(db: Db, runId: string): Promise<{ id: string; type: string }> {
  const { rows } = await db.pool.query<{ id: string; type: string }>('SELECT id, type FROM run_events WHERE run_id = $1::uuid', [runId]);
  assert.ok(rows[0], `no event for run ${runId}`);
  return rows[0];
}
