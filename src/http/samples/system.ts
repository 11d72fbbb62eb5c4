import { envelope, type OperationSamples } from './types.js';

/** The probes and the document: no key, so no client either; plain HTTP in each language. */
export const SYSTEM_SAMPLES: Record<string, OperationSamples> = {
  healthz: {
    vars: [],
    curl: `curl -fsS "$TOOLRUN_BASE_URL/healthz"`,
    typescript: `// No key needed: plain fetch.
const base = process.env.TOOLRUN_BASE_URL ?? 'http://127.0.0.1:8080';
const res = await fetch(\`\${base}/healthz\`);
const body = (await res.json()) as { status: string };
console.log(res.status, body.status);`,
    python: `# No key needed: the standard library's urllib.
import json
import os
import urllib.request

base = os.environ.get("TOOLRUN_BASE_URL", "http://127.0.0.1:8080")
with urllib.request.urlopen(base + "/healthz") as res:
    print(res.status, json.load(res)["status"])`,
  },

  readyz: {
    vars: [],
    curl: `curl -fsS "$TOOLRUN_BASE_URL/readyz"`,
    typescript: `// No key needed: plain fetch. 503 while the database does not answer.
const base = process.env.TOOLRUN_BASE_URL ?? 'http://127.0.0.1:8080';
const res = await fetch(\`\${base}/readyz\`);
const body = (await res.json()) as { status?: string };
console.log(res.status, res.ok ? body.status : 'not ready');`,
    python: `# No key needed: the standard library's urllib (503 raises HTTPError).
import json
import os
import urllib.request

base = os.environ.get("TOOLRUN_BASE_URL", "http://127.0.0.1:8080")
with urllib.request.urlopen(base + "/readyz") as res:
    print(res.status, json.load(res)["status"])`,
    responses: {
      '503': {
        database_down: {
          summary: 'The database does not answer',
          value: envelope('service_unavailable', 'The database does not answer.'),
        },
      },
    },
  },

  getOpenApi: {
    vars: [],
    curl: `curl -fsS "$TOOLRUN_BASE_URL/v1/openapi.json" -o openapi.json
head -c 120 openapi.json`,
    typescript: `// No key needed: plain fetch. The SDK's types are generated from this document.
const base = process.env.TOOLRUN_BASE_URL ?? 'http://127.0.0.1:8080';
const res = await fetch(\`\${base}/v1/openapi.json\`);
const doc = (await res.json()) as { openapi: string; info: { title: string }; paths: Record<string, unknown> };
console.log(doc.info.title, 'OpenAPI', doc.openapi, Object.keys(doc.paths).length, 'paths');`,
    python: `# No key needed: the standard library's urllib.
import json
import os
import urllib.request

base = os.environ.get("TOOLRUN_BASE_URL", "http://127.0.0.1:8080")
with urllib.request.urlopen(base + "/v1/openapi.json") as res:
    doc = json.load(res)
print(doc["info"]["title"], "OpenAPI", doc["openapi"], len(doc["paths"]), "paths")`,
  },
};
