import type { RouteOptions } from 'fastify';

type Json = Record<string, unknown>;

/** What the document needs of a route, collected as the console's routes are added. */
export interface DocumentedRoute {
  method: string;
  url: string;
  schema: Json;
  access: 'public' | 'session';
}

export function documentedRoute(route: RouteOptions): DocumentedRoute | null {
  const url = route.url;
  if (typeof url !== 'string' || !url.startsWith('/console/api/')) return null;
  const method = Array.isArray(route.method) ? route.method[0] : route.method;
  if (!method || method === 'HEAD') return null;
  const config = (route.config ?? {}) as { consoleAccess?: 'public' | 'session' };
  return { method, url, schema: (route.schema ?? {}) as Json, access: config.consoleAccess ?? 'session' };
}

/** TypeBox schemas as plain JSON (no symbols), with `$ref: "Name"` pointing into components. */
function plain(schema: unknown, refs: Set<string>): Json {
  return JSON.parse(
    JSON.stringify(schema, (key, value: unknown) => {
      if (key === '$ref' && typeof value === 'string' && !value.startsWith('#')) {
        refs.add(value);
        return `#/components/schemas/${value}`;
      }
      return value;
    }),
  ) as Json;
}

const TAGS = [
  { name: 'session', description: 'Signing in and out, invite links' },
  { name: 'overview', description: 'The team at a glance' },
  { name: 'keys', description: 'Settings > API keys' },
  { name: 'webhooks', description: 'Settings > Webhooks' },
  { name: 'members', description: 'Settings > Members' },
  { name: 'runs', description: "The team's runs, API and app" },
  { name: 'playground', description: 'Tools, uploads, estimates and app runs' },
  { name: 'usage', description: 'Balance, ledger and usage' },
  { name: 'system', description: 'This document' },
];

/**
 * The console API's own OpenAPI 3.1 document (not part of /v1/openapi.json): built from the
 * routes' schemas, with the schemas they reference (`getSchema`) as components.
 */
export function buildConsoleDocument(routes: DocumentedRoute[], publicBaseUrl: string, getSchema: (id: string) => unknown): Json {
  const refs = new Set<string>();
  const paths: Record<string, Json> = {};
  for (const r of routes) {
    const path = r.url.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
    const { params, querystring, body, response, operationId, summary, tags } = r.schema as {
      params?: { properties?: Record<string, unknown> };
      querystring?: { properties?: Record<string, unknown>; required?: string[] };
      body?: unknown;
      response?: Record<string, unknown>;
      operationId?: string;
      summary?: string;
      tags?: string[];
    };
    const changes = r.method !== 'GET';
    const parameters: Json[] = Object.entries(params?.properties ?? {}).map(([name, s]) => ({
      name,
      in: 'path',
      required: true,
      schema: plain(s, refs),
    }));
    for (const [name, s] of Object.entries(querystring?.properties ?? {})) {
      parameters.push({ name, in: 'query', required: querystring?.required?.includes(name) ?? false, schema: plain(s, refs) });
    }
    if (changes && r.access === 'session') {
      parameters.push({ name: 'X-CSRF-Token', in: 'header', required: true, schema: { type: 'string' }, description: 'The csrf_token of GET /console/api/session' });
    }
    const responses: Json = {};
    for (const [status, s] of Object.entries(response ?? {})) {
      const schema = plain(s, refs);
      const description = typeof schema.description === 'string' ? schema.description : 'Response';
      responses[status] = { description, content: { 'application/json': { schema } } };
    }
    paths[path] = {
      ...paths[path],
      [r.method.toLowerCase()]: {
        ...(operationId ? { operationId } : {}),
        ...(summary ? { summary } : {}),
        ...(tags ? { tags } : {}),
        ...(parameters.length ? { parameters } : {}),
        ...(body ? { requestBody: { required: true, content: { 'application/json': { schema: plain(body, refs) } } } } : {}),
        responses,
        security: r.access === 'session' ? [{ consoleSession: [] }] : [],
      },
    };
  }
  const schemas: Json = {};
  // Components may reference further components.
  for (let pending = [...refs]; pending.length; ) {
    const next: string[] = [];
    for (const id of pending) {
      if (schemas[id]) continue;
      const found = new Set<string>();
      const { $id: _id, ...rest } = plain(getSchema(id) ?? {}, found);
      schemas[id] = rest;
      next.push(...[...found].filter((f) => !schemas[f]));
    }
    pending = next;
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Toolrun console API',
      version: '1',
      description: "The JSON API of the team console's pages. Not for programs: use the Tool-Run API (/v1) with an API key.",
    },
    servers: [{ url: publicBaseUrl }],
    tags: TAGS,
    paths,
    components: {
      schemas,
      securitySchemes: {
        consoleSession: { type: 'apiKey', in: 'cookie', name: 'toolrun_session', description: 'Set by signing in or accepting an invite' },
      },
    },
  };
}
