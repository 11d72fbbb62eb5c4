// The OpenAPI document as a contract for real responses: which operation a request belongs to,
// and whether a response's status, headers and body are what the document says it can get.
// Shared by the OpenAPI test and the fuzzer.
import assert from 'node:assert/strict';
import Ajv2020Module from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';

// Both are CommonJS modules whose module.exports also carries itself as .default.
const Ajv2020 = Ajv2020Module.default;
const addFormats = addFormatsModule.default;

export type Json = Record<string, unknown>;
type ValidateFn = ReturnType<InstanceType<typeof Ajv2020>['compile']>;

export const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];
/** Headers the service itself sets, which the document must list wherever they are sent. */
const SERVICE_HEADERS = ['x-request-id', 'ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset', 'retry-after'];

export interface Operation {
  method: string;
  path: string;
  op: Json;
  secured: boolean;
  pathParams: string[];
  hasBody: boolean;
}

export function operations(doc: Json): Operation[] {
  const out: Operation[] = [];
  const paths = isObject(doc.paths) ? doc.paths : {};
  for (const [path, item] of Object.entries(paths)) {
    if (!isObject(item)) continue;
    for (const [method, op] of Object.entries(item)) {
      if (!HTTP_METHODS.includes(method) || !isObject(op)) continue;
      out.push({
        method: method.toUpperCase(),
        path,
        op,
        secured: Array.isArray(op.security) && op.security.length > 0,
        pathParams: [...path.matchAll(/\{([^}]+)\}/g)].map((x) => x[1] ?? ''),
        hasBody: op.requestBody !== undefined,
      });
    }
  }
  return out;
}

/** Rewrites #/components/schemas/X refs to ids Ajv knows each component schema by. */
function rewriteRefs(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(rewriteRefs);
  if (!isObject(value)) return value;
  const out: Json = {};
  for (const [k, v] of Object.entries(value)) {
    if (k === '$ref' && typeof v === 'string') {
      const m = /^#\/components\/schemas\/([^/]+)(\/.*)?$/.exec(v);
      assert.ok(m, `$ref outside components.schemas in a schema: ${v}`);
      out[k] = `urn:toolrun:schema:${m[1]}${m[2] ? `#${m[2]}` : ''}`;
    } else {
      out[k] = rewriteRefs(v);
    }
  }
  return out;
}

export interface ResponseLike {
  statusCode: number;
  headers: Record<string, string | string[] | number | undefined>;
  body: string;
}

export function header(res: ResponseLike, name: string): string | undefined {
  const v = res.headers[name.toLowerCase()];
  return v === undefined ? undefined : Array.isArray(v) ? v.join(', ') : String(v);
}

/**
 * Checks real responses against the document: the operation must document the status, the body
 * must validate against the schema given for it, and the service's own headers must be listed.
 */
export class Contract {
  private readonly ajv = new Ajv2020({ strict: true, allErrors: true });
  private readonly validators = new Map<string, ValidateFn>();
  readonly ops: Operation[];

  constructor(readonly doc: Json) {
    addFormats(this.ajv);
    // OpenAPI's own schema keywords (annotations for Ajv's purposes).
    this.ajv.addVocabulary(['discriminator', 'xml', 'externalDocs', 'example']);
    const components = isObject(doc.components) ? doc.components : {};
    const schemas = isObject(components.schemas) ? components.schemas : {};
    for (const [name, schema] of Object.entries(schemas)) {
      assert.ok(isObject(schema), `components.schemas.${name} is not an object`);
      const rewritten = rewriteRefs(schema);
      assert.ok(isObject(rewritten));
      this.ajv.addSchema({ ...rewritten, $id: `urn:toolrun:schema:${name}` });
    }
    this.ops = operations(doc);
  }

  find(method: string, url: string): Operation | null {
    const path = url.split('?')[0] ?? url;
    for (const op of this.ops) {
      if (op.method !== method.toUpperCase()) continue;
      // A parameter may be empty: the router matches /v1/tools//runs with tool_id "" (and the route answers).
      const re = new RegExp(`^${op.path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]*')}$`);
      if (re.test(path)) return op;
    }
    return null;
  }

  private validator(key: string, schema: unknown): ValidateFn {
    let fn = this.validators.get(key);
    if (!fn) {
      const rewritten = rewriteRefs(schema);
      assert.ok(isObject(rewritten), `${key}: schema is not an object`);
      fn = this.ajv.compile(rewritten);
      this.validators.set(key, fn);
    }
    return fn;
  }

  private resolveHeader(h: unknown): Json {
    if (isObject(h) && typeof h.$ref === 'string') {
      const name = /^#\/components\/headers\/(.+)$/.exec(h.$ref)?.[1];
      const headers = isObject(this.doc.components) && isObject(this.doc.components.headers) ? this.doc.components.headers : {};
      const target = name ? headers[name] : undefined;
      assert.ok(isObject(target), `unresolved header $ref ${h.$ref}`);
      return target;
    }
    assert.ok(isObject(h), 'header object expected');
    return h;
  }

  private validateBody(where: string, key: string, schema: unknown, res: ResponseLike): void {
    assert.match(header(res, 'content-type') ?? '', /^application\/json/, `${where}: content-type`);
    let body: unknown;
    try {
      body = JSON.parse(res.body);
    } catch {
      assert.fail(`${where}: body is not JSON: ${res.body.slice(0, 200)}`);
    }
    const fn = this.validator(key, schema);
    if (!fn(body)) {
      assert.fail(`${where}: body does not match the documented schema: ${this.ajv.errorsText(fn.errors)}\nbody: ${res.body.slice(0, 1000)}`);
    }
  }

  /** Errors of value against a schema of the document ($refs to its components resolved); null when it validates. */
  schemaErrors(key: string, schema: unknown, value: unknown): string | null {
    const fn = this.validator(key, schema);
    return fn(value) ? null : this.ajv.errorsText(fn.errors);
  }

  /** Throws unless the response is what the document says this request can get. */
  check(method: string, url: string, res: ResponseLike): void {
    const where = `${method} ${url} -> ${res.statusCode}`;
    const requestId = header(res, 'x-request-id');
    assert.ok(requestId, `${where}: no X-Request-Id header`);
    const op = this.find(method, url);
    if (!op) {
      // Unknown routes, wrong methods and malformed URLs belong to no operation; they still use
      // the error envelope.
      const expected: Record<number, string> = { 404: 'not_found', 405: 'method_not_allowed', 422: 'invalid_request' };
      assert.ok(expected[res.statusCode], `${where}: answered by no documented operation`);
      this.validateBody(where, 'ErrorResponse', { $ref: '#/components/schemas/ErrorResponse' }, res);
      const error = (JSON.parse(res.body) as { error: { code: string; errors: { loc: unknown[] }[] | null } }).error;
      assert.equal(error.code, expected[res.statusCode], where);
      if (res.statusCode === 422) assert.equal(error.errors?.[0]?.loc[0], 'path', `${where}: only a malformed path is refused outside operations`);
      return this.checkErrorRequestId(where, res, requestId);
    }
    const responses = isObject(op.op.responses) ? op.op.responses : {};
    const status = String(res.statusCode);
    const documented = responses[status] ?? responses[`${status[0]}XX`] ?? responses.default;
    assert.ok(
      isObject(documented),
      `${where}: status ${status} is not documented for ${op.method} ${op.path} (documented: ${Object.keys(responses).join(', ')})`,
    );
    // Headers: every service header sent must be listed for this status, and listed values must fit.
    const listed = new Map<string, Json>();
    for (const [name, h] of Object.entries(isObject(documented.headers) ? documented.headers : {})) {
      listed.set(name.toLowerCase(), this.resolveHeader(h));
    }
    for (const name of SERVICE_HEADERS) {
      const value = header(res, name);
      if (value === undefined) continue;
      const spec = listed.get(name);
      assert.ok(spec, `${where}: sends ${name}, which the document does not list for this status`);
      if (isObject(spec.schema) && spec.schema.type === 'integer') {
        assert.match(value, /^-?\d+$/, `${where}: ${name} is not an integer: ${value}`);
        const fn = this.validator(`header:${name}`, spec.schema);
        assert.ok(fn(Number(value)), `${where}: ${name}=${value} does not match its schema`);
      }
    }
    const content = isObject(documented.content) ? documented.content : null;
    if (!content) {
      assert.equal(res.body, '', `${where}: a body the document does not describe`);
      return;
    }
    // Server-sent events: documented as text/event-stream, whose body is the stream's text.
    if (isObject(content['text/event-stream']) && /^text\/event-stream/.test(String(header(res, 'content-type') ?? ''))) return;
    const media = content['application/json'];
    assert.ok(isObject(media) && media.schema !== undefined, `${where}: no application/json schema documented`);
    this.validateBody(where, `${op.method} ${op.path} ${status}`, media.schema, res);
    this.checkErrorRequestId(where, res, requestId);
  }

  /**
   * An error answered outside the operations (Node's refusals of bad HTTP, the signed storage
   * URLs): the ErrorResponse envelope, with request_id equal to X-Request-Id.
   */
  checkErrorEnvelope(method: string, url: string, res: ResponseLike): void {
    const where = `${method} ${url} -> ${res.statusCode}`;
    const requestId = header(res, 'x-request-id');
    assert.ok(requestId, `${where}: no X-Request-Id header`);
    assert.ok(res.statusCode >= 400 && res.statusCode < 500, `${where}: not a client error`);
    this.validateBody(where, 'ErrorResponse', { $ref: '#/components/schemas/ErrorResponse' }, res);
    this.checkErrorRequestId(where, res, requestId);
  }

  private checkErrorRequestId(where: string, res: ResponseLike, requestId: string): void {
    const body = JSON.parse(res.body) as unknown;
    if (res.statusCode >= 400 && isObject(body) && isObject(body.error)) {
      assert.equal(body.error.request_id, requestId, `${where}: error.request_id differs from X-Request-Id`);
    }
  }
}

