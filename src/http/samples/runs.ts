import { EXAMPLE_ASSET_ID, EXAMPLE_FILE_ID, EXAMPLE_RUN_ID, envelope, exampleRun, type Example, type OperationSamples } from './types.js';

const missingImage: Example = {
  summary: 'A required slot left out',
  value: envelope('invalid_request', 'Invalid request: body.inputs.image: is required', {
    errors: [{ loc: ['body', 'inputs', 'image'], message: 'is required', code: 'missing' }],
  }),
};
const rejectedFile: Example = {
  summary: 'A file that is not ready',
  value: envelope('invalid_request', 'Invalid request: body.inputs.image: item 1 (index 0): the file was rejected: unrecognised file type', {
    errors: [{ loc: ['body', 'inputs', 'image'], message: 'item 1 (index 0): the file was rejected: unrecognised file type', code: 'file_not_ready' }],
  }),
};
const upscaleBody: Example = { summary: 'image_upscale on an uploaded file', value: { inputs: { image: [EXAMPLE_FILE_ID] } } };
const gradeBody: Example = {
  summary: 'image_color_grade with a preset and a setting',
  value: { inputs: { image: [EXAMPLE_FILE_ID], preset: 'warm_film', contrast: 0.2 } },
};
const runIdParam = { run_id: EXAMPLE_RUN_ID };

/** Pricing, starting, following, canceling runs and downloading their outputs. */
export const RUNS_SAMPLES: Record<string, OperationSamples> = {
  estimateRun: {
    vars: ['FILE_ID'],
    curl: `curl -fsS "$TOOLRUN_BASE_URL/v1/tools/image_upscale/estimate" \\
  -H "Authorization: Bearer $TOOLRUN_API_KEY" -H "Content-Type: application/json" \\
  -d "{\\"inputs\\": {\\"image\\": [\\"$FILE_ID\\"]}}"`,
    typescript: `import { Toolrun } from '@toolrun/sdk';

const client = new Toolrun();
const estimate = await client.tools.estimate('image_upscale', { inputs: { image: [process.env.FILE_ID!] } });
console.log(\`\${estimate.tool_id}: \${estimate.sparks} Sparks (holds \${estimate.reserve_sparks} while it runs)\`);`,
    python: `import os

import toolrun

client = toolrun.Toolrun()
estimate = client.estimate("image_upscale", {"image": [os.environ["FILE_ID"]]})
print(f"{estimate.tool_id}: {estimate.sparks} Sparks (holds {estimate.reserve_sparks} while it runs)")`,
    parameters: { tool_id: 'image_upscale' },
    request: { image_upscale: upscaleBody, image_color_grade: gradeBody },
    responses: { '422': { missing: missingImage, file_not_ready: rejectedFile } },
  },

  startRun: {
    vars: ['FILE_ID'],
    curl: `# The Idempotency-Key makes a retry of this very request safe: it answers with the same run.
curl -fsS "$TOOLRUN_BASE_URL/v1/tools/image_upscale/runs" \\
  -H "Authorization: Bearer $TOOLRUN_API_KEY" -H "Content-Type: application/json" \\
  -H "Idempotency-Key: upscale-$FILE_ID" \\
  -d "{\\"inputs\\": {\\"image\\": [\\"$FILE_ID\\"]}}"`,
    typescript: `import { Toolrun } from '@toolrun/sdk';

const client = new Toolrun();
const fileId = process.env.FILE_ID!;
// Without idempotencyKey the SDK makes one up, so its own retries never start a second run.
const run = await client.runs.start('image_upscale', { inputs: { image: [fileId] } }, { idempotencyKey: \`upscale-\${fileId}\` });
console.log(run.id, run.status, \`\${run.cost_sparks} Sparks held\`);`,
    python: `import os

import toolrun

client = toolrun.Toolrun()
file_id = os.environ["FILE_ID"]
# Without idempotency_key the client makes one up, so its own retries never start a second run.
run = client.runs.start("image_upscale", {"image": [file_id]}, idempotency_key=f"upscale-{file_id}")
print(run.id, run.status, f"{run.cost_sparks} Sparks held")`,
    parameters: { tool_id: 'image_upscale' },
    request: { image_upscale: upscaleBody, image_color_grade: gradeBody },
    responses: {
      '202': { queued: { summary: 'Queued; its price is held', value: exampleRun('queued') } },
      '422': { missing: missingImage, file_not_ready: rejectedFile },
    },
  },

  listRuns: {
    vars: [],
    curl: `curl -fsS "$TOOLRUN_BASE_URL/v1/runs?limit=10&status=succeeded" -H "Authorization: Bearer $TOOLRUN_API_KEY"`,
    typescript: `import { Toolrun } from '@toolrun/sdk';

const client = new Toolrun();
const page = await client.runs.list({ limit: 10, status: 'succeeded' });
for (const run of page.data) console.log(run.id, run.tool_id, run.status, \`\${run.cost_sparks} Sparks\`);
// More pages: pass the last id as starting_after while has_more (client.runs.all() does it for you).
console.log(page.has_more ? 'more runs follow' : 'no more runs');`,
    python: `import toolrun

client = toolrun.Toolrun()
page = client.runs.list(limit=10, status="succeeded")
for run in page.data:
    print(run.id, run.tool_id, run.status, f"{run.cost_sparks} Sparks")
# More pages: pass the last id as starting_after while has_more (client.runs.iter() does it for you).
print("more runs follow" if page.has_more else "no more runs")`,
    parameters: { limit: 10, status: 'succeeded', starting_after: EXAMPLE_RUN_ID, tool_id: 'image_upscale', created_after: '2025-05-01T00:00:00Z', created_before: '2025-06-01T00:00:00Z' },
    responses: {
      '422': {
        limit: {
          summary: 'A page size out of range',
          value: envelope('invalid_request', 'Invalid request: query.limit: must be <= 100', {
            errors: [{ loc: ['query', 'limit'], message: 'must be <= 100', code: 'out_of_range' }],
          }),
        },
      },
    },
  },

  getRun: {
    vars: ['RUN_ID'],
    curl: `# Prefer: wait=30 holds the answer until the run is final or 30 s pass; without it, the run as it is now.
curl -fsS "$TOOLRUN_BASE_URL/v1/runs/$RUN_ID" -H "Authorization: Bearer $TOOLRUN_API_KEY" -H "Prefer: wait=30"`,
    typescript: `import { Toolrun } from '@toolrun/sdk';

const client = new Toolrun();
// waitSeconds holds the answer until the run is final or that long passes (Prefer: wait).
const run = await client.runs.get(process.env.RUN_ID!, { waitSeconds: 30 });
console.log(run.id, run.status, run.progress, run.outputs.map((o) => o.file_name).join(' '));`,
    python: `import os

import toolrun

client = toolrun.Toolrun()
# wait holds the answer until the run is final or that long passes (Prefer: wait).
run = client.runs.get(os.environ["RUN_ID"], wait=30)
print(run.id, run.status, run.progress, " ".join(o.file_name or o.asset_id for o in run.outputs))`,
    parameters: runIdParam,
    responses: {
      '200': {
        succeeded: { summary: 'Succeeded, with its outputs', value: exampleRun('succeeded') },
        running: { summary: 'Still running', value: exampleRun('running') },
        failed: { summary: 'Failed; its hold was released', value: exampleRun('failed') },
      },
    },
  },

  cancelRun: {
    vars: ['RUN_ID'],
    curl: `curl -fsS -X POST "$TOOLRUN_BASE_URL/v1/runs/$RUN_ID/cancel" -H "Authorization: Bearer $TOOLRUN_API_KEY"`,
    typescript: `import { Toolrun } from '@toolrun/sdk';

const client = new Toolrun();
const run = await client.runs.cancel(process.env.RUN_ID!);
console.log(run.id, run.status, \`\${run.cost_sparks} Sparks charged\`);`,
    python: `import os

import toolrun

client = toolrun.Toolrun()
run = client.runs.cancel(os.environ["RUN_ID"])
print(run.id, run.status, f"{run.cost_sparks} Sparks charged")`,
    parameters: runIdParam,
    responses: { '200': { canceled: { summary: 'Canceled; its hold was released', value: exampleRun('canceled') } } },
  },

  getOutputUrl: {
    vars: ['RUN_ID', 'ASSET_ID'],
    curl: `# ASSET_ID: outputs[].asset_id of the succeeded run. Fetch the URL straight away: it expires.
# Right after the run succeeds an output may still be being checked: 409 output_not_ready, ask again after Retry-After.
curl -fsS "$TOOLRUN_BASE_URL/v1/runs/$RUN_ID/outputs/$ASSET_ID/url" -H "Authorization: Bearer $TOOLRUN_API_KEY"`,
    typescript: `import { writeFile } from 'node:fs/promises';
import { Toolrun } from '@toolrun/sdk';

const client = new Toolrun();
const signed = await client.runs.outputUrl(process.env.RUN_ID!, process.env.ASSET_ID!);
// The signed URL carries its own authorization: no key goes to storage.
const res = await fetch(signed.url);
const bytes = Buffer.from(await res.arrayBuffer());
await writeFile('output.bin', bytes);
console.log(signed.asset_id, \`\${bytes.length} bytes\`, \`URL valid \${signed.expires_in_seconds} s\`);`,
    python: `import os
import urllib.request

import toolrun

client = toolrun.Toolrun()
signed = client.outputs.url(os.environ["RUN_ID"], os.environ["ASSET_ID"])
# The signed URL carries its own authorization: no key goes to storage.
with urllib.request.urlopen(signed.url) as res, open("output.bin", "wb") as out:
    size = out.write(res.read())
print(signed.asset_id, f"{size} bytes", f"URL valid {signed.expires_in_seconds} s")`,
    parameters: { run_id: EXAMPLE_RUN_ID, asset_id: EXAMPLE_ASSET_ID },
  },

  streamRunEvents: {
    vars: ['RUN_ID'],
    curl: `# -N prints each event as it comes; the stream ends after the done event.
curl -fsSN "$TOOLRUN_BASE_URL/v1/runs/$RUN_ID/events" -H "Authorization: Bearer $TOOLRUN_API_KEY"`,
    typescript: `import { Toolrun } from '@toolrun/sdk';

const client = new Toolrun();
// status first, progress as it moves, done with the final run; then the loop ends.
for await (const e of client.runs.events(process.env.RUN_ID!)) {
  console.log(e.event, e.run.status, e.run.progress);
}`,
    python: `import os

import toolrun

client = toolrun.Toolrun()
# status first, progress as it moves, done with the final run; then the loop ends.
for e in client.runs.events(os.environ["RUN_ID"]):
    print(e.event, e.run.status, e.run.progress)`,
    parameters: runIdParam,
  },
};
