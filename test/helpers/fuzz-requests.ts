// Hostile requests for one operation of the OpenAPI document, as fast-check arbitraries: bodies
// derived from the request schema (and, for tools, from each tool's input slots) then broken,
// Authorization, Content-Type and Idempotency-Key variants, path ids of every sort (real ones of
// the caller's and another team's, unknown, malformed, encoded, very long) and query strings.
import fc from 'fast-check';
import { badString, bodySchema, EDGE_NUMBERS, mutated, nastyValue, shortBadString, tainted, tainting, validOf, wrongNumber } from './fuzz-schema.js';
import { isObject, type Json, type Operation } from './openapi-contract.js';

export interface FuzzRequest {
  method: string;
  /** Path and query as sent on the request line. */
  path: string;
  headers: Record<string, string>;
  body: Buffer | null;
  /** Send the body with Transfer-Encoding: chunked instead of Content-Length. */
  chunked: boolean;
}

export interface ToolSlot {
  name: string;
  kind: string;
  required: boolean;
  min: number;
  max: number;
  choices?: string[] | null;
  constraints?: Json;
}

export interface FuzzWorld {
  tools: { id: string; inputs: ToolSlot[] }[];
  /** Real ids by path parameter name, the caller's team's first, then another team's. */
  ids: Record<string, string[]>;
  /** Upload ids of real uploads (either team). */
  uploadIds: string[];
  /** A ready image file of the caller's team, and other file ids (its uploading file, another team's). */
  readyFile: string;
  otherFiles: string[];
  /** The key the operation is called with, and other keys to try instead. */
  key: string;
  otherKeys: string[];
  webhookUrl: string;
}

/** Percent-encodes every byte but unreserved ones (a lone surrogate becomes U+FFFD). */
function encodeBytes(s: string): string {
  return [...Buffer.from(s, 'utf8')].map((b) => (/[A-Za-z0-9._~-]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : `%${b.toString(16).toUpperCase().padStart(2, '0')}`)).join('');
}

/** Header values Node will send: tab, printable ASCII and Latin-1 only. */
function headerSafe(s: string): string {
  return s.replace(/[^\t\x20-\x7e\x80-\xff]/g, '?');
}

const weirdId: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom('', 'null', 'undefined', '0', '-1', '1e3', 'true', '%00', '%', '%zz', '%E0%A4%A', '..', '%2e%2e', 'a%2Fb', '%2F', '%5C', '..%2F..%2Fv1%2Fme', '*', '%20', '+', '__proto__', 'constructor', 'toString', 'hasOwnProperty', '\u00e9', '%C3%A9', 'a%00b', '%00%00', '%ED%A0%80', '%ED%B0%80', '%F0%9F%98%80', 'x%C0%80'),
  fc.uuid().map((u) => u.toUpperCase()),
  fc.uuid().map((u) => `urn:uuid:${u}`),
  fc.uuid().map((u) => `%7B${u}%7D`),
  fc.uuid().map((u) => u.replace(/-/g, '')),
  fc.uuid().map((u) => `${u}0`),
  fc.uuid().map((u) => `%20${u}`),
  fc.uuid().map((u) => `${u}%00`),
  fc.string({ unit: 'grapheme', maxLength: 40 }).map(encodeBytes),
  fc.string({ unit: 'binary', maxLength: 20 }).map(encodeBytes),
  fc.integer({ min: 90, max: 3000 }).map((n) => 'a'.repeat(n)),
  shortBadString.map(encodeBytes),
);

function idArb(param: string, w: FuzzWorld): fc.Arbitrary<string> {
  if (param === 'tool_id') {
    return fc.oneof(
      { weight: 12, arbitrary: fc.constantFrom(...w.tools.map((t) => t.id)) },
      { weight: 1, arbitrary: fc.constantFrom('nope', 'IMAGE_UPSCALE', 'image_upscale%20', 'x'.repeat(100), 'x'.repeat(101)) },
      { weight: 1, arbitrary: fc.constantFrom(...w.tools.map((t) => t.id)).map((id) => `${id}%00`) },
      { weight: 2, arbitrary: weirdId },
    );
  }
  const real = w.ids[param] ?? [];
  return fc.oneof(
    { weight: real.length ? 5 : 0, arbitrary: real.length ? fc.constantFrom(...real) : fc.uuid() },
    { weight: 2, arbitrary: fc.uuid() },
    { weight: 3, arbitrary: weirdId },
  );
}

const queryArb: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom('', 'a=1', 'a=1&a=2', '__proto__[x]=1', 'constructor[prototype][x]=1', '%', '%zz', '=&=&', 'a[b][c]=d', 'limit=-1', `expires=1&signature=${'0'.repeat(64)}`, '%00=%00', 'a=%ED%A0%80', 'limit=1e400&offset=-1'),
  fc.dictionary(fc.string({ maxLength: 10 }), fc.string({ maxLength: 20 }), { maxKeys: 4 }).map((d) => new URLSearchParams(d).toString()),
  fc.integer({ min: 100, max: 3000 }).map((n) => `x=${'a'.repeat(n)}`),
);

function authArb(w: FuzzWorld): fc.Arbitrary<string | undefined> {
  const k = w.key;
  const variants: (string | undefined)[] = [
    undefined,
    'Bearer',
    'Bearer ',
    `bearer ${k}`,
    `BEARER ${k}`,
    `Bearer   ${k}   `,
    `Bearer\t${k}`,
    `Basic ${Buffer.from(`user:${k}`).toString('base64')}`,
    `Token ${k}`,
    k,
    `Bearer ${k}, Bearer ${k}`,
    `Bearer ${k.replace('svc_test_', 'svc_live_')}`,
    `Bearer ${k.slice(0, -1)}`,
    `Bearer ${k}x`,
    `Bearer ${k.slice(0, 17)}${'A'.repeat(32)}`,
    `Bearer svc_test_${'B'.repeat(40)}`,
    'Bearer svc_',
    'Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig',
    `Bearer ${'x'.repeat(3000)}`,
    `Bearer ${k.slice(0, 20)}\u00e9${k.slice(21)}`,
    ...w.otherKeys.map((o) => `Bearer ${o}`),
  ];
  return fc.oneof({ weight: 14, arbitrary: fc.constant(`Bearer ${k}`) }, { weight: 2, arbitrary: fc.constantFrom(...variants) });
}

const contentTypeArb: fc.Arbitrary<string | undefined> = fc.oneof(
  { weight: 20, arbitrary: fc.constant('application/json') },
  {
    weight: 2,
    // constantFrom favours its first values: the JSON variants come first.
    arbitrary: fc.constantFrom(
      'application/json; charset=utf-8',
      'APPLICATION/JSON',
      undefined,
      '',
      'application/json; charset=latin1',
      'application/json; charset=utf-16',
      'application/json;',
      'application/json; ;;=',
      'text/plain',
      'text/json',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
      'application/jsonx',
      'application/vnd.api+json',
      '*/*',
      'application/json, text/plain',
      'application/octet-stream',
    ),
  },
);

const idempotencyArb: fc.Arbitrary<string | undefined> = fc.oneof(
  { weight: 3, arbitrary: fc.constant(undefined) },
  { weight: 2, arbitrary: fc.string({ maxLength: 40 }).map(headerSafe) },
  { weight: 1, arbitrary: fc.constantFrom('', ' ', 'x'.repeat(255), 'x'.repeat(256), 'x'.repeat(3000), '\u00e9\u00ff', 'a\tb', '\u0080', `${'x'.repeat(254)}\u00a0`) },
  // What a NUL or a lone surrogate becomes on the way (Node sends no controls; UTF-8 bytes arrive as Latin-1).
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }).map((k) => headerSafe(Buffer.from(k, 'utf8').toString('latin1'))) },
);

/** Valid inputs for one tool, mostly: real file ids in media slots, choices, numbers in range (mutation breaks them). */
function inputsArb(tool: { inputs: ToolSlot[] }, w: FuzzWorld): fc.Arbitrary<Json> {
  const model: Record<string, fc.Arbitrary<unknown>> = {};
  const files = fc.oneof({ weight: 4, arbitrary: fc.constant(w.readyFile) }, { weight: 1, arbitrary: fc.constantFrom(...w.otherFiles) }, { weight: 1, arbitrary: fc.uuid() });
  for (const slot of tool.inputs) {
    const c = slot.constraints ?? {};
    const min = typeof c.minimum === 'number' ? c.minimum : -10;
    const max = typeof c.maximum === 'number' ? c.maximum : 10;
    switch (slot.kind) {
      case 'image':
      case 'video':
      case 'audio':
        model[slot.name] = fc.array(files, { minLength: Math.min(slot.min, 12), maxLength: Math.min(Math.max(slot.max, slot.min), 12) });
        break;
      case 'enum':
        model[slot.name] = slot.choices?.length
          ? fc.oneof({ weight: 6, arbitrary: fc.constantFrom(...slot.choices) }, { weight: 1, arbitrary: tainted(fc.constantFrom(...slot.choices)) })
          : fc.string({ maxLength: 12 });
        break;
      case 'number':
        model[slot.name] = fc.oneof(
          { weight: 4, arbitrary: fc.double({ min, max, noNaN: true }) },
          { weight: 1, arbitrary: fc.constantFrom(...EDGE_NUMBERS) },
          { weight: 1, arbitrary: wrongNumber },
        );
        break;
      case 'bool':
        model[slot.name] = fc.boolean();
        break;
      case 'text':
        model[slot.name] = fc.oneof(
          fc.constantFrom('https://example.com/', 'http://127.0.0.1:1/', 'file:///etc/passwd', 'javascript:alert(1)', '', 'https://example.com/%00'),
          fc.webUrl(),
          fc.string({ maxLength: 40 }),
          tainted(fc.webUrl()),
          badString,
        );
        break;
      default:
        model[slot.name] = fc.oneof(fc.uuid(), fc.string({ maxLength: 20 }));
    }
  }
  return fc.record(model, { requiredKeys: tool.inputs.filter((i) => i.required && i.name in model).map((i) => i.name) });
}

/** A valid body for the operation (tool bodies follow the tool named in the path). */
function validBody(op: Operation, schema: Json, params: Record<string, string>, w: FuzzWorld): fc.Arbitrary<unknown> {
  const tool = w.tools.find((t) => t.id === params.tool_id);
  if (tool && 'inputs' in (isObject(schema.properties) ? schema.properties : {})) {
    return fc.record(
      { inputs: inputsArb(tool, w), duration_seconds: fc.oneof(fc.constant(null), fc.double({ min: 0.1, max: 600, noNaN: true })) },
      { requiredKeys: ['inputs'] },
    );
  }
  const props = isObject(schema.properties) ? schema.properties : {};
  return validOf(schema).chain((v) => {
    if (!isObject(v)) return fc.constant(v);
    const fixes: Record<string, fc.Arbitrary<unknown>> = {};
    if ('upload_id' in props) fixes.upload_id = fc.constantFrom(...w.uploadIds, 'x');
    if ('url' in props) {
      fixes.url = fc.oneof(
        fc.constantFrom(w.webhookUrl, 'https://127.0.0.1:1/h', 'https://[::1]/h', 'http://127.0.0.1/h', 'https://user:pw@127.0.0.1/h', 'https://10.0.0.1/h', `${w.webhookUrl}%00`),
        tainted(fc.constant(w.webhookUrl)),
      );
    }
    return fc.record(fixes).map((f) => ({ ...v, ...f }));
  });
}

/** Text-level damage to a JSON body: cut, spliced, prefixed, made non-UTF-8, nested to extremes. */
function brokenJson(valid: fc.Arbitrary<unknown>): fc.Arbitrary<Buffer> {
  return fc.tuple(valid.map((v) => JSON.stringify(v) ?? ''), fc.nat(), fc.string({ unit: 'binary', minLength: 1, maxLength: 4 })).chain(([text, at, junk]) => {
    const i = text.length ? at % text.length : 0;
    return fc.constantFrom(
      Buffer.from(text.slice(0, i)),
      Buffer.from(text.slice(0, i) + junk + text.slice(i)),
      Buffer.from(`\uFEFF${text}`),
      Buffer.from(`${text},`),
      Buffer.from(text.replace(/^\{/, '{"__proto__":{"polluted":true},')),
      Buffer.from(text.replace(/^\{/, '{"upload_id":"a","upload_id":"b",')),
      Buffer.from(text.replace(/\d+/, `1${'0'.repeat(400)}`)),
      Buffer.from(text.replace(/"/, "'")),
      Buffer.from(`/*x*/${text}`),
      Buffer.from(`{"inputs":{"image":${'['.repeat(20_000 + i)}${']'.repeat(20_000 + i)}}}`),
      Buffer.from('{"a":"\\ud800","b":"\\u0000"}'),
      // Escapes JSON.stringify would not write: a lone surrogate or NUL as the first string value or key, an escaped pair.
      Buffer.from(text.replace(/":"/, '":"\\udc00')),
      Buffer.from(text.replace(/^\{"/, '{"\\u0000')),
      Buffer.from(text.replace(/":"/, '":"\\ud83d\\ude00')),
      Buffer.from(text.replace(/:(-?\d+)/, ':-1e400')),
      Buffer.concat([Buffer.from('{"inputs":"'), Buffer.from([0xff, 0xfe, 0xc3]), Buffer.from('"}')]),
      Buffer.from('NaN'),
      Buffer.from(''),
    );
  });
}

/** Requests aimed at one operation. */
export function requestArb(op: Operation, w: FuzzWorld): fc.Arbitrary<FuzzRequest> {
  const schema = bodySchema(op.op);
  const params = fc.record(Object.fromEntries(op.pathParams.map((p) => [p, idArb(p, w)])) as Record<string, fc.Arbitrary<string>>);
  return params.chain((ids) => {
    const path = op.path.replace(/\{([^}]+)\}/g, (_, name: string) => ids[name] ?? '');
    const valid = schema ? validBody(op, schema, ids, w) : fc.constant(undefined);
    const json = (v: unknown) => (v === undefined ? null : Buffer.from(JSON.stringify(v) ?? ''));
    const body: fc.Arbitrary<Buffer | null> = schema
      ? fc.oneof(
          { weight: 4, arbitrary: valid.map(json) },
          { weight: 5, arbitrary: mutated(valid).map(json) },
          { weight: 2, arbitrary: tainting(valid).map(json) },
          { weight: 1, arbitrary: nastyValue.map(json) },
          { weight: 2, arbitrary: brokenJson(valid) },
          { weight: 1, arbitrary: fc.constant(null) },
        )
      : fc.oneof({ weight: 6, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: fc.oneof(nastyValue.map(json), brokenJson(fc.constant({}))) });
    return fc.record({
      body,
      query: fc.option(queryArb, { freq: 4 }),
      auth: authArb(w),
      contentType: contentTypeArb,
      idempotency: op.path.endsWith('/runs') ? idempotencyArb : fc.option(idempotencyArb, { freq: 10 }),
      chunked: fc.boolean(),
      extra: fc.option(
        fc.constantFrom<[string, string]>(['x-request-id', '<script>alert(1)</script>'], ['accept', 'text/html'], ['content-encoding', 'gzip'], ['x-forwarded-for', '::1, junk'], ['content-language', '\u00e9']),
        { freq: 8 },
      ),
    }).map((r): FuzzRequest => {
      const headers: Record<string, string> = {};
      if (r.auth !== undefined) headers.authorization = r.auth;
      if (r.contentType !== undefined && (r.body !== null || r.contentType === 'application/json')) headers['content-type'] = r.contentType;
      if (r.idempotency !== undefined && r.idempotency !== null) headers['idempotency-key'] = r.idempotency;
      if (r.extra) headers[r.extra[0]] = r.extra[1];
      return { method: op.method, path: r.query === null ? path : `${path}?${r.query}`, headers, body: r.body, chunked: r.chunked && r.body !== null };
    });
  });
}

/** Requests to no operation: other methods, mangled paths, unknown routes. */
export function strayRequestArb(ops: Operation[], key: string): fc.Arbitrary<FuzzRequest> {
  const base = fc.constantFrom(...ops.map((o) => o.path.replace(/\{[^}]+\}/g, '00000000-0000-4000-8000-000000000000')));
  const path = fc.oneof(
    base.map((p) => `${p}/`),
    base.map((p) => `/${p}`),
    base.map((p) => p.toUpperCase()),
    base.map((p) => `${p}/..`),
    base.map((p) => p.replace('/v1/', '/v1/./')),
    base.map((p) => `${p}%`),
    base.map((p) => `${p}/extra`),
    base,
    fc.webPath().map((p) => p || '/'),
    fc.constantFrom('/', '/v1', '/v2/me', '/v1/me%00', '/v1/%2e%2e/healthz', '*', '/storage/objects/', '/storage/uploads/x/parts/1', '/docs/static/nope.js'),
  );
  return fc.record({ method: fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'), path, body: fc.option(fc.constant(Buffer.from('{}')), { freq: 2 }) }).map((r) => ({
    method: r.method,
    path: r.path,
    headers: { authorization: `Bearer ${key}`, ...(r.body ? { 'content-type': 'application/json' } : {}) },
    body: r.body,
    chunked: false,
  }));
}
