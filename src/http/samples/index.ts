// The API reference's examples and code samples, kept as data beside the routes' schemas and
// merged into the OpenAPI document: x-codeSamples (read by Redoc, Scalar and others), Example
// Objects on every request body and response, and an example for every path and query parameter.
// test/docs-operations.test.ts runs every code sample against a real server and validates every
// example against its schema.
import { ACCOUNT_SAMPLES } from './account.js';
import { errorExample } from './errors.js';
import { FILES_SAMPLES } from './files.js';
import { RUNS_SAMPLES } from './runs.js';
import { SYSTEM_SAMPLES } from './system.js';
import type { Example, OperationSamples, SampleVar } from './types.js';
import { WEBHOOKS_SAMPLES } from './webhooks.js';

export type { Example, OperationSamples, SampleVar } from './types.js';

type Json = Record<string, unknown>;

/** Every operation's samples, by operationId. */
export const OPERATION_SAMPLES: Record<string, OperationSamples> = {
  ...SYSTEM_SAMPLES,
  ...ACCOUNT_SAMPLES,
  ...FILES_SAMPLES,
  ...RUNS_SAMPLES,
  ...WEBHOOKS_SAMPLES,
};

/** What each variable a sample reads holds, and which call answers it. */
export const SAMPLE_VARS: Record<SampleVar, string> = {
  FILE_ID: 'the `id` of a ready file: what completing an upload answers (`files.upload` in the clients)',
  UPLOAD_ID: 'the `upload_id` the upload-url call answered',
  PART_URL: '`parts[0].url` of the upload-url answer (a file of one part)',
  RUN_ID: 'the `id` of a run: what starting a run answers',
  ASSET_ID: '`outputs[].asset_id` of a succeeded run',
  WEBHOOK_ENDPOINT_ID: 'the `id` of a webhook endpoint: what creating one answers',
  DELIVERY_ID: 'the `id` of a delivery that was given up: listing deliveries with `status=failed` shows them',
};

/** The languages, in the order shown; `lang` and `label` are x-codeSamples' fields, `fence` the Markdown one. */
export const SAMPLE_LANGUAGES = [
  { key: 'curl', lang: 'Shell', label: 'curl', fence: 'sh', title: '**curl**' },
  { key: 'typescript', lang: 'TypeScript', label: 'TypeScript', fence: 'ts', title: '**TypeScript** (`@toolrun/sdk`)' },
  { key: 'python', lang: 'Python', label: 'Python', fence: 'python', title: '**Python** (`toolrun`, in `clients/python`)' },
] as const;

const HTTP_METHODS = new Set(['get', 'put', 'post', 'delete', 'patch']);

function operationsOf(doc: Json): Json[] {
  const out: Json[] = [];
  for (const item of Object.values((doc.paths ?? {}) as Record<string, Json>)) {
    for (const [method, op] of Object.entries(item)) if (HTTP_METHODS.has(method)) out.push(op as Json);
  }
  return out;
}

/** The error codes a response's description lists ("... Codes: a, b."). */
export function listedCodes(description: unknown): string[] {
  const m = /Codes: ([a-z_, ]+)\.$/.exec(String(description ?? ''));
  return m?.[1] ? m[1].split(', ') : [];
}

/** The error code an example answer carries, if it is an error envelope. */
export function exampleCode(value: unknown): string | null {
  const error = (value as { error?: { code?: unknown } } | null)?.error;
  return typeof error?.code === 'string' ? error.code : null;
}

/**
 * A response's examples: the operation's own for that status, then (for an error status) the
 * default example of each code the status lists that none of its own shows. A success without
 * its own keeps the example the document had (its schema component's).
 */
function examplesFor(status: string, response: Json, media: Json, samples: OperationSamples): Record<string, Example> | null {
  const own = samples.responses?.[status] ?? {};
  if (status.startsWith('2')) {
    if (Object.keys(own).length) return own;
    return media.example === undefined ? null : { default: { summary: String(response.description ?? 'Success'), value: media.example } };
  }
  const out: Record<string, Example> = { ...own };
  const shown = new Set(Object.values(own).map((e) => exampleCode(e.value)));
  for (const code of listedCodes(response.description)) {
    const example = shown.has(code) ? null : errorExample(code);
    if (example) out[code] = example;
  }
  return Object.keys(out).length ? out : null;
}

/**
 * Adds every operation's samples to the document in place. Where a media type gets `examples`,
 * its single `example` goes: OpenAPI makes the two mutually exclusive (validators refuse both).
 */
export function attachSamples(doc: Json): void {
  for (const op of operationsOf(doc)) {
    const samples = OPERATION_SAMPLES[String(op.operationId)];
    if (!samples) continue;
    op['x-codeSamples'] = SAMPLE_LANGUAGES.map((l) => ({ lang: l.lang, label: l.label, source: samples[l.key] }));
    for (const param of (op.parameters ?? []) as Json[]) {
      const value = samples.parameters?.[String(param.name)];
      if (value !== undefined && (param.in === 'path' || param.in === 'query')) param.example = value;
    }
    const body = (op.requestBody as Json | undefined)?.content as Record<string, Json> | undefined;
    const bodyMedia = body?.['application/json'];
    if (bodyMedia && samples.request) {
      bodyMedia.examples = samples.request;
      delete bodyMedia.example;
    }
    for (const [status, response] of Object.entries((op.responses ?? {}) as Record<string, Json>)) {
      for (const media of Object.values((response.content ?? {}) as Record<string, Json>)) {
        const examples = examplesFor(status, response, media, samples);
        if (!examples) continue;
        media.examples = examples;
        delete media.example;
      }
    }
  }
}

/** The samples of one operation as Markdown: which variables they read, then one fenced block per language. */
export function samplesMarkdown(samples: OperationSamples, secured: boolean): string {
  const vars = samples.vars.map((v) => `- \`${v}\`: ${SAMPLE_VARS[v]}`);
  const needs = secured ? '`TOOLRUN_API_KEY` (a key, `svc_...`) and `TOOLRUN_BASE_URL`' : '`TOOLRUN_BASE_URL`';
  const lines = [
    '#### Code samples',
    '',
    `Each reads ${needs} (e.g. \`http://127.0.0.1:8080\`) from the environment${vars.length ? ', and:' : '.'}`,
    ...(vars.length ? ['', ...vars] : []),
    ...(samples.files?.length ? ['', `It reads ${samples.files.map((f) => `\`${f}\``).join(', ')} from the current directory.`] : []),
  ];
  for (const l of SAMPLE_LANGUAGES) lines.push('', l.title, '', `\`\`\`${l.fence}`, samples[l.key], '```');
  return lines.join('\n');
}

/**
 * The document as the /docs renderer (Swagger UI, which ignores x-codeSamples) shows it: each
 * operation's samples appended to its description as Markdown. A copy: /v1/openapi.json keeps
 * its descriptions as they are, so the SDK's generated types carry no sample code.
 */
export function withSamplesInDescriptions(doc: Json): Json {
  const copy = structuredClone(doc);
  for (const op of operationsOf(copy)) {
    const samples = OPERATION_SAMPLES[String(op.operationId)];
    if (!samples) continue;
    const secured = Array.isArray(op.security) && op.security.length > 0;
    const description = typeof op.description === 'string' && op.description ? `${op.description}\n\n` : '';
    op.description = description + samplesMarkdown(samples, secured);
  }
  return copy;
}
