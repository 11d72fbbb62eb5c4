import { EXAMPLE_ENDPOINT } from '../../core/examples.js';
import { EXAMPLE_DELIVERY_ID, EXAMPLE_ENDPOINT_ID, EXAMPLE_EVENT_ID, envelope, type OperationSamples } from './types.js';

const endpointParam = { endpoint_id: EXAMPLE_ENDPOINT_ID };
const endpoint = (extra: Record<string, unknown> = {}) => ({ ...EXAMPLE_ENDPOINT, ...extra });
const notHttps = {
  summary: 'Not an https:// URL',
  value: envelope('invalid_request', 'Invalid request: body.url: must be an https:// URL', {
    errors: [{ loc: ['body', 'url'], message: 'must be an https:// URL', code: 'url_not_https' }],
  }),
};

/** Webhook endpoints, their deliveries, and the team's event stream. */
export const WEBHOOKS_SAMPLES: Record<string, OperationSamples> = {
  listWebhookEndpoints: {
    vars: [],
    curl: `curl -fsS "$TOOLRUN_BASE_URL/v1/webhook-endpoints" -H "Authorization: Bearer $TOOLRUN_API_KEY"`,
    typescript: `import { Toolrun } from '@toolrun/sdk';

const client = new Toolrun();
const { data } = await client.webhookEndpoints.list();
for (const ep of data) console.log(ep.id, ep.url, ep.enabled ? 'enabled' : 'paused', ep.events.join(','));`,
    python: `import toolrun

client = toolrun.Toolrun()
for ep in client.webhook_endpoints.list()["data"]:
    print(ep["id"], ep["url"], "enabled" if ep["enabled"] else "paused", ",".join(ep["events"]))`,
  },

  createWebhookEndpoint: {
    vars: [],
    curl: `# The signing secret (whsec_...) is in this answer only: keep it with your receiver's configuration.
curl -fsS "$TOOLRUN_BASE_URL/v1/webhook-endpoints" \\
  -H "Authorization: Bearer $TOOLRUN_API_KEY" -H "Content-Type: application/json" \\
  -d '{"url": "https://hooks.example.com/toolrun", "events": ["run.succeeded", "run.failed"]}'`,
    typescript: `import { Toolrun } from '@toolrun/sdk';

const client = new Toolrun();
const ep = await client.webhookEndpoints.create({ url: 'https://hooks.example.com/toolrun', events: ['run.succeeded', 'run.failed'] });
console.log(ep.id, ep.events.join(','));
// In this answer only: keep it with your receiver's configuration.
console.log(ep.signing_secret);`,
    python: `import toolrun

client = toolrun.Toolrun()
ep = client.webhook_endpoints.create("https://hooks.example.com/toolrun", events=["run.succeeded", "run.failed"])
print(ep["id"], ",".join(ep["events"]))
# In this answer only: keep it with your receiver's configuration.
print(ep["signing_secret"])`,
    request: {
      some_events: { summary: 'Succeeded and failed runs', value: { url: 'https://hooks.example.com/toolrun', events: ['run.succeeded', 'run.failed'] } },
      all_events: { summary: 'Every run event (events left out)', value: { url: 'https://hooks.example.com/toolrun' } },
    },
    responses: { '422': { url_not_https: notHttps } },
  },

  updateWebhookEndpoint: {
    vars: ['WEBHOOK_ENDPOINT_ID'],
    curl: `# Pauses the endpoint (pending deliveries are dropped); {"enabled": true} resumes it.
curl -fsS -X PATCH "$TOOLRUN_BASE_URL/v1/webhook-endpoints/$WEBHOOK_ENDPOINT_ID" \\
  -H "Authorization: Bearer $TOOLRUN_API_KEY" -H "Content-Type: application/json" \\
  -d '{"enabled": false}'`,
    typescript: `import { Toolrun } from '@toolrun/sdk';

const client = new Toolrun();
// Pauses the endpoint (pending deliveries are dropped); { enabled: true } resumes it.
const ep = await client.webhookEndpoints.update(process.env.WEBHOOK_ENDPOINT_ID!, { enabled: false });
console.log(ep.id, 'enabled:', ep.enabled);`,
    python: `import os

import toolrun

client = toolrun.Toolrun()
# Pauses the endpoint (pending deliveries are dropped); enabled=True resumes it.
ep = client.webhook_endpoints.update(os.environ["WEBHOOK_ENDPOINT_ID"], enabled=False)
print(ep["id"], "enabled:", ep["enabled"])`,
    parameters: endpointParam,
    request: {
      pause: { summary: 'Pause', value: { enabled: false } },
      resume: { summary: 'Resume', value: { enabled: true } },
      events: { summary: 'Replace the events', value: { events: ['run.failed'] } },
    },
    responses: { '200': { paused: { summary: 'Paused', value: endpoint({ enabled: false }) } } },
  },

  deleteWebhookEndpoint: {
    vars: ['WEBHOOK_ENDPOINT_ID'],
    curl: `curl -fsS -X DELETE "$TOOLRUN_BASE_URL/v1/webhook-endpoints/$WEBHOOK_ENDPOINT_ID" -H "Authorization: Bearer $TOOLRUN_API_KEY"`,
    typescript: `import { Toolrun } from '@toolrun/sdk';

const client = new Toolrun();
const deleted = await client.webhookEndpoints.delete(process.env.WEBHOOK_ENDPOINT_ID!);
console.log(deleted.id, 'deleted:', deleted.deleted);`,
    python: `import os

import toolrun

client = toolrun.Toolrun()
deleted = client.webhook_endpoints.delete(os.environ["WEBHOOK_ENDPOINT_ID"])
print(deleted["id"], "deleted:", deleted["deleted"])`,
    parameters: endpointParam,
  },

  testWebhookEndpoint: {
    vars: ['WEBHOOK_ENDPOINT_ID'],
    curl: `curl -fsS -X POST "$TOOLRUN_BASE_URL/v1/webhook-endpoints/$WEBHOOK_ENDPOINT_ID/test" -H "Authorization: Bearer $TOOLRUN_API_KEY"`,
    typescript: `import { Toolrun } from '@toolrun/sdk';

const client = new Toolrun();
const ping = await client.webhookEndpoints.test(process.env.WEBHOOK_ENDPOINT_ID!);
console.log('delivered:', ping.delivered, ping.response_code, \`\${ping.duration_ms} ms\`, ping.error ?? '');`,
    python: `import os

import toolrun

client = toolrun.Toolrun()
ping = client.webhook_endpoints.test(os.environ["WEBHOOK_ENDPOINT_ID"])
print("delivered:", ping["delivered"], ping["response_code"], f"{ping['duration_ms']} ms", ping["error"] or "")`,
    parameters: endpointParam,
    responses: {
      '200': {
        delivered: {
          summary: 'The endpoint answered 2xx',
          value: { object: 'webhook_test', delivery_id: '2d4c6e8a-1b3f-4d5e-a7c9-0e2f4a6c8e1b', delivered: true, response_code: 200, duration_ms: 182, error: null },
        },
        refused: {
          summary: 'The endpoint answered an error',
          value: { object: 'webhook_test', delivery_id: '2d4c6e8a-1b3f-4d5e-a7c9-0e2f4a6c8e1b', delivered: false, response_code: 500, duration_ms: 95, error: 'HTTP 500' },
        },
      },
    },
  },

  rotateWebhookEndpointSecret: {
    vars: ['WEBHOOK_ENDPOINT_ID'],
    curl: `# The new secret is in this answer only; the old one keeps signing beside it for an hour.
curl -fsS "$TOOLRUN_BASE_URL/v1/webhook-endpoints/$WEBHOOK_ENDPOINT_ID/rotate-secret" \\
  -H "Authorization: Bearer $TOOLRUN_API_KEY" -H "Content-Type: application/json" \\
  -d '{"expire_previous_in_seconds": 3600}'`,
    typescript: `import { Toolrun } from '@toolrun/sdk';

const client = new Toolrun();
// The new secret is in this answer only; the old one keeps signing beside it for an hour.
const ep = await client.webhookEndpoints.rotateSecret(process.env.WEBHOOK_ENDPOINT_ID!, { expirePreviousInSeconds: 3600 });
console.log(ep.id, ep.signing_secret);`,
    python: `import os

import toolrun

client = toolrun.Toolrun()
# The new secret is in this answer only; the old one keeps signing beside it for an hour.
ep = client.webhook_endpoints.rotate_secret(os.environ["WEBHOOK_ENDPOINT_ID"], expire_previous_in_seconds=3600)
print(ep["id"], ep["signing_secret"])`,
    parameters: endpointParam,
    request: {
      hour: { summary: 'The old secret signs for one more hour', value: { expire_previous_in_seconds: 3600 } },
      now: { summary: 'The old secret stops at once', value: { expire_previous_in_seconds: 0 } },
    },
  },

  listWebhookDeliveries: {
    vars: ['WEBHOOK_ENDPOINT_ID'],
    curl: `curl -fsS "$TOOLRUN_BASE_URL/v1/webhook-endpoints/$WEBHOOK_ENDPOINT_ID/deliveries?limit=10" -H "Authorization: Bearer $TOOLRUN_API_KEY"`,
    typescript: `import { Toolrun } from '@toolrun/sdk';

const client = new Toolrun();
const page = await client.webhookEndpoints.deliveries(process.env.WEBHOOK_ENDPOINT_ID!, { limit: 10 });
for (const d of page.data) console.log(d.id, d.event_type, d.status, \`\${d.attempts.length} attempts\`);`,
    python: `import os

import toolrun

client = toolrun.Toolrun()
page = client.webhook_endpoints.deliveries(os.environ["WEBHOOK_ENDPOINT_ID"], limit=10)
for d in page["data"]:
    print(d["id"], d["event_type"], d["status"], f"{len(d['attempts'])} attempts")`,
    parameters: { ...endpointParam, limit: 10, status: 'failed', starting_after: EXAMPLE_DELIVERY_ID },
  },

  redeliverWebhookDelivery: {
    vars: ['WEBHOOK_ENDPOINT_ID', 'DELIVERY_ID'],
    curl: `# DELIVERY_ID: a delivery that was given up (status failed), e.g. from ?status=failed.
curl -fsS -X POST "$TOOLRUN_BASE_URL/v1/webhook-endpoints/$WEBHOOK_ENDPOINT_ID/deliveries/$DELIVERY_ID/redeliver" \\
  -H "Authorization: Bearer $TOOLRUN_API_KEY"`,
    typescript: `import { Toolrun } from '@toolrun/sdk';

const client = new Toolrun();
const d = await client.webhookEndpoints.redeliver(process.env.WEBHOOK_ENDPOINT_ID!, process.env.DELIVERY_ID!);
console.log(d.id, d.event_type, d.status);`,
    python: `import os

import toolrun

client = toolrun.Toolrun()
d = client.webhook_endpoints.redeliver(os.environ["WEBHOOK_ENDPOINT_ID"], os.environ["DELIVERY_ID"])
print(d["id"], d["event_type"], d["status"])`,
    parameters: { endpoint_id: EXAMPLE_ENDPOINT_ID, delivery_id: EXAMPLE_DELIVERY_ID },
    responses: {
      '200': {
        pending: {
          summary: 'Pending again, with a fresh retry schedule',
          value: {
            object: 'webhook_delivery',
            id: EXAMPLE_DELIVERY_ID,
            event_id: EXAMPLE_EVENT_ID,
            event_type: 'run.succeeded',
            status: 'pending',
            created_at: '2025-05-01T09:30:04.000Z',
            attempts: [{ attempted_at: '2025-05-01T09:30:04.120Z', status_code: 500, duration_ms: 84, error: 'HTTP 500' }],
          },
        },
      },
    },
  },

  streamEvents: {
    vars: [],
    curl: `# -N prints each event as it comes; the stream stays open (a heartbeat every 15 s) until you stop it.
curl -fsSN "$TOOLRUN_BASE_URL/v1/events" -H "Authorization: Bearer $TOOLRUN_API_KEY"`,
    typescript: `import { Toolrun } from '@toolrun/sdk';

const client = new Toolrun();
// Events from now on, as they happen; this one stops after the first.
for await (const e of client.events.stream({ onOpen: () => console.log('listening') })) {
  console.log(e.type, e.id, e.event.data.run?.id ?? '');
  break;
}`,
    python: `import toolrun

client = toolrun.Toolrun()
# Events from now on, as they happen; this one stops after the first.
for e in client.events.stream(on_open=lambda: print("listening")):
    run = e.event["data"].get("run") or {}
    print(e.type, e.id, run.get("id", ""))
    break`,
  },
};
