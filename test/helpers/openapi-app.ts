// The app side of test/openapi.test.ts and test/openapi-responses.test.ts: the document as the app
// serves it, the routes Fastify registered, and requests for documented operations whose
// responses are checked against the document as they come back.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { Contract, isObject, type Json, type Operation } from './openapi-contract.js';

/** GET /v1/openapi.json as the app answers it, and the checker made from it. */
export async function servedContract(app: FastifyInstance): Promise<{ doc: Json; contract: Contract }> {
  const res = await app.inject({ method: 'GET', url: '/v1/openapi.json' });
  assert.equal(res.statusCode, 200);
  const doc = res.json<Json>();
  return { doc, contract: new Contract(doc) };
}

export interface Route {
  method: string;
  /** OpenAPI form: /v1/runs/{run_id} */
  path: string;
}

/**
 * The routes Fastify registered, read from its radix tree (each line a segment under its parent;
 * HEAD twins of GET routes left out). Every route read is confirmed with app.hasRoute.
 */
export function registeredRoutes(app: FastifyInstance): Route[] {
  const tree = app.printRoutes({ commonPrefix: true });
  const stack: string[] = [];
  const found = new Map<string, Set<string>>();
  for (const line of tree.split('\n')) {
    if (!line.trim()) continue;
    const m = /^((?:│ {3}| {4})*)(?:├── |└── )(\S+?)(?: \(([A-Z, ]+)\))?$/.exec(line);
    assert.ok(m, `unexpected line in app.printRoutes(): ${JSON.stringify(line)}`);
    const depth = (m[1] ?? '').length / 4;
    const url = (depth > 0 ? (stack[depth - 1] ?? '') : '') + (m[2] ?? '');
    stack[depth] = url;
    stack.length = depth + 1;
    if (!m[3]) continue;
    const methods = found.get(url) ?? new Set<string>();
    for (const method of m[3].split(',')) methods.add(method.trim());
    found.set(url, methods);
  }
  const routes: Route[] = [];
  for (const [url, methods] of found) {
    for (const method of methods) {
      assert.ok(app.hasRoute({ method: method as 'GET', url }), `parsed a route Fastify does not know: ${method} ${url}`);
      if (method === 'HEAD' && methods.has('GET')) continue;
      routes.push({ method, path: url.replace(/:([A-Za-z0-9_]+)/g, '{$1}') });
    }
  }
  return routes;
}

/** The methods inject takes (the document's operations use a few of them). */
type InjectMethod = NonNullable<InjectOptions['method']>;
export type OperationRequest = InjectOptions & { method: InjectMethod; url: string };

/** A request for an operation: made-up ids for path parameters, an empty JSON object as body. */
export function requestFor(op: Operation, headers: Record<string, string>): OperationRequest {
  let url = op.path;
  for (const p of op.pathParams) url = url.replace(`{${p}}`, randomUUID());
  const req: OperationRequest = { method: op.method as InjectMethod, url, headers: { ...headers } };
  if (op.hasBody) {
    req.headers = { ...headers, 'content-type': 'application/json' };
    req.payload = '{}';
  }
  return req;
}

async function firstBytes(req: OperationRequest, app: FastifyInstance): Promise<LightMyRequestResponse> {
  const res = await app.inject({ ...req, payloadAsStream: true });
  const stream = res.stream();
  let body = '';
  if (res.statusCode === 200) {
    body = await new Promise<string>((resolve) => {
      stream.once('data', (c: Buffer) => resolve(c.toString('utf8')));
      stream.once('end', () => resolve(''));
    });
    stream.destroy();
  } else {
    for await (const c of stream) body += (c as Buffer).toString('utf8');
  }
  return Object.assign(Object.create(res) as LightMyRequestResponse, { body, payload: body, json: <T>() => JSON.parse(body) as T });
}

export type Caller = (req: OperationRequest, app?: FastifyInstance) => Promise<LightMyRequestResponse>;

/** Makes requests through an app (defaultApp unless told) and checks every response against the contract. */
export function contractCaller(contract: Contract, defaultApp: FastifyInstance): Caller {
  /** Operations answering server-sent events: their 200 never ends, so only its first bytes are read. */
  const streams = (method: string, url: string): boolean => {
    const ok = contract.find(method, url)?.op.responses;
    return isObject(ok) && isObject(ok['200']) && isObject(ok['200'].content) && isObject(ok['200'].content['text/event-stream']);
  };
  return async (req, app = defaultApp) => {
    const res = streams(req.method, req.url) ? await firstBytes(req, app) : await app.inject(req);
    contract.check(req.method, req.url, res);
    return res;
  };
}
