// A thin typed client of the console's JSON API (/console/api). The session cookie rides along by
// itself (same origin); state-changing calls add the CSRF token the last Session answer carried.
// Errors arrive in the API's envelope and come out as ConsoleError with one message per field.
import { runsApi, type Call, type RunsApi } from './api-runs.ts';

export type Role = 'owner' | 'admin' | 'member';
export type Plan = 'free' | 'plus' | 'pro' | 'team';
export type Scope = 'read' | 'run' | 'webhooks';
export const RATES = [30, 60, 120, 300] as const;
export type Rate = (typeof RATES)[number];
export const EVENT_TYPES = ['run.succeeded', 'run.failed', 'run.canceled'] as const;
export type EventType = (typeof EVENT_TYPES)[number];

export interface Session {
  member: { id: string; email: string; role: Role };
  team: { id: string; name: string; plan: Plan };
  csrf_token: string;
}

export interface Overview {
  team: { id: string; name: string; plan: Plan };
  sparks_available: number;
  runs_this_hour: number;
  runs_per_hour: number;
}

export interface ApiKeyItem {
  id: string;
  name: string;
  prefix: string;
  scopes: Scope[];
  rate_limit_per_minute: number;
  created_by: { id: string; email: string };
  created_at: string;
  last_used_at: string | null;
}

export interface KeyList {
  data: ApiKeyItem[];
  active_keys: number;
  max_active_keys: number;
  can_manage: boolean;
  plan_allows_keys: boolean;
}

export interface WebhookEndpoint {
  id: string;
  url: string;
  events: EventType[];
  enabled: boolean;
  created_at: string;
}

export interface WebhookTest {
  delivery_id: string;
  delivered: boolean;
  response_code: number | null;
  duration_ms: number;
  error: string | null;
}

export interface DeliveryAttempt {
  attempted_at: string;
  status_code: number | null;
  duration_ms: number;
  error: string | null;
}

export interface Delivery {
  id: string;
  event_id: string;
  event_type: string;
  status: 'pending' | 'delivered' | 'failed' | 'dropped';
  created_at: string;
  attempts: DeliveryAttempt[];
}

export interface Member {
  id: string;
  email: string;
  role: Role;
  created_at: string;
  has_password: boolean;
}

export interface Invite {
  invite_url: string;
  expires_at: string;
}

/** A link that may still set a member's password (never its token). */
export interface PendingInvite {
  id: string;
  member: { id: string; email: string; role: Role };
  /** null: an operator made it (toolrun admin member invite). */
  created_by: { id: string; email: string } | null;
  created_at: string;
  expires_at: string;
  resets_password: boolean;
}

/** A link made to reset the signed-in member's password. */
export interface ResetNotice {
  created_by: { id: string; email: string } | null;
  created_at: string;
  expires_at: string;
  used_at: string | null;
  revoked_at: string | null;
}

/** A refused call: the envelope's code and message, and its field errors keyed by field name. */
export class ConsoleError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    /** body field name (the loc after "body") -> message; errors without a body field stay in message. */
    readonly fields: Record<string, string>,
    readonly requestId: string | null,
    /** Seconds from a Retry-After header (429, 409 output_not_ready), when there was one. */
    readonly retryAfter: number | null = null,
  ) {
    super(message);
  }
}

interface Envelope {
  error?: { code?: unknown; message?: unknown; request_id?: unknown; errors?: unknown };
}

function fieldErrors(errors: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (!Array.isArray(errors)) return out;
  for (const e of errors as { loc?: unknown; message?: unknown }[]) {
    if (!Array.isArray(e.loc) || typeof e.message !== 'string') continue;
    const [where, field, slot] = e.loc as unknown[];
    // The first error per field is the one to fix first; a list item's errors belong to the list.
    if (where === 'body' && typeof field === 'string' && !(field in out)) out[field] = e.message;
    // A tool input's error (['body', 'inputs', slot]) also under "inputs.<slot>", for the playground.
    const key = `${String(field)}.${String(slot)}`;
    if (where === 'body' && field === 'inputs' && typeof slot === 'string' && !(key in out)) out[key] = e.message;
  }
  return out;
}

function retryAfter(header: string | null): number | null {
  const n = header === null ? NaN : Number(header);
  return Number.isFinite(n) && n >= 0 ? n : null;
}

async function toError(res: Response): Promise<ConsoleError> {
  let body: Envelope = {};
  try {
    body = (await res.json()) as Envelope;
  } catch {
    // Not the envelope (a proxy's page): the status says enough.
  }
  const e = body.error ?? {};
  const message = typeof e.message === 'string' ? e.message : `The request failed (HTTP ${res.status}).`;
  return new ConsoleError(
    res.status,
    typeof e.code === 'string' ? e.code : 'http_' + res.status,
    message,
    fieldErrors(e.errors),
    typeof e.request_id === 'string' ? e.request_id : null,
    retryAfter(res.headers.get('retry-after')),
  );
}

type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';

export interface ConsoleApi extends RunsApi {
  getSession(): Promise<Session>;
  signIn(email: string, password: string): Promise<Session>;
  signOut(): Promise<void>;
  acceptInvite(token: string, password: string): Promise<Session>;
  overview(): Promise<Overview>;
  listKeys(): Promise<KeyList>;
  createKey(body: { name: string; scopes: Scope[]; rate_limit_per_minute: Rate }): Promise<{ key: string; api_key: ApiKeyItem }>;
  revokeKey(id: string): Promise<{ api_key: ApiKeyItem }>;
  listWebhooks(): Promise<{ data: WebhookEndpoint[]; can_manage: boolean }>;
  createWebhook(body: { url: string; events: EventType[] }): Promise<WebhookEndpoint & { signing_secret: string }>;
  updateWebhook(id: string, body: { enabled?: boolean; events?: EventType[] }): Promise<WebhookEndpoint>;
  deleteWebhook(id: string): Promise<{ id: string; deleted: true }>;
  testWebhook(id: string): Promise<WebhookTest>;
  deliveries(id: string): Promise<{ data: Delivery[] }>;
  redeliver(id: string, deliveryId: string): Promise<{ delivery_id: string }>;
  listMembers(): Promise<{ data: Member[]; can_manage: boolean }>;
  inviteNewMember(body: { email: string; role: Role }): Promise<Invite & { member: Member }>;
  inviteMember(id: string): Promise<Invite>;
  changeRole(id: string, role: Role): Promise<Member>;
  removeMember(id: string): Promise<{ id: string; removed: true }>;
  listInvites(): Promise<{ data: PendingInvite[] }>;
  revokeInvite(id: string): Promise<{ id: string; revoked: true }>;
  passwordResets(): Promise<{ data: ResetNotice[] }>;
}

/**
 * The client. `onSignedOut` hears of a 401 session_required from any call after sign-in (an
 * expired or ended session), so the app can go back to the sign-in page.
 */
export function createApi(opts: { base?: string; onSignedOut?: () => void } = {}): ConsoleApi {
  const base = opts.base ?? '/console/api';
  let csrf: string | null = null;

  async function call<T>(method: Method, path: string, body?: unknown): Promise<T> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (method !== 'GET' && csrf) headers['x-csrf-token'] = csrf;
    const res = await fetch(base + path, {
      method,
      headers,
      credentials: 'same-origin',
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    if (!res.ok) {
      const err = await toError(res);
      if (err.code === 'session_required' && path !== '/session') {
        csrf = null;
        opts.onSignedOut?.();
      }
      throw err;
    }
    return (await res.json()) as T;
  }

  const remember = (s: Session): Session => {
    csrf = s.csrf_token;
    return s;
  };
  const id = encodeURIComponent;

  return {
    getSession: async () => remember(await call<Session>('GET', '/session')),
    signIn: async (email, password) => remember(await call<Session>('POST', '/session', { email, password })),
    signOut: async () => {
      await call<unknown>('DELETE', '/session');
      csrf = null;
    },
    acceptInvite: async (token, password) => remember(await call<Session>('POST', '/invites/accept', { token, password })),
    overview: () => call('GET', '/overview'),
    listKeys: () => call('GET', '/keys'),
    createKey: (body) => call('POST', '/keys', body),
    revokeKey: (keyId) => call('POST', `/keys/${id(keyId)}/revoke`),
    listWebhooks: () => call('GET', '/webhooks'),
    createWebhook: (body) => call('POST', '/webhooks', body),
    updateWebhook: (endpointId, body) => call('PATCH', `/webhooks/${id(endpointId)}`, body),
    deleteWebhook: (endpointId) => call('DELETE', `/webhooks/${id(endpointId)}`),
    testWebhook: (endpointId) => call('POST', `/webhooks/${id(endpointId)}/test`),
    deliveries: (endpointId) => call('GET', `/webhooks/${id(endpointId)}/deliveries`),
    redeliver: (endpointId, deliveryId) => call('POST', `/webhooks/${id(endpointId)}/deliveries/${id(deliveryId)}/redeliver`),
    listMembers: () => call('GET', '/members'),
    inviteNewMember: (body) => call('POST', '/members', body),
    inviteMember: (memberId) => call('POST', `/members/${id(memberId)}/invite`),
    changeRole: (memberId, role) => call('PATCH', `/members/${id(memberId)}`, { role }),
    removeMember: (memberId) => call('DELETE', `/members/${id(memberId)}`),
    listInvites: () => call('GET', '/invites'),
    revokeInvite: (inviteId) => call('POST', `/invites/${id(inviteId)}/revoke`),
    passwordResets: () => call('GET', '/password-resets'),
    ...runsApi(call as Call),
  };
}
