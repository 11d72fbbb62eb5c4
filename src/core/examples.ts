// The values the OpenAPI document's examples use: the schemas' own examples and the reference's
// per-operation samples (src/http/samples) tell one story with the same ids. On the ground floor
// because both the domains' schemas and the HTTP layer's samples read them.

export const EXAMPLE_REQUEST_ID = '8c1f6e2a-4b3d-4f5e-9a7b-6c5d4e3f2a1b';
export const EXAMPLE_FILE_ID = '0b6f2a9e-5c1d-4e8a-9f3b-7d2c1e0a4b5c';
export const EXAMPLE_UPLOAD_ID = 'b7e3c1d0a9f84e2b';
export const EXAMPLE_RUN_ID = '5e1d7c3a-2b4f-4a6e-8c9d-0f1e2a3b4c5d';
export const EXAMPLE_ASSET_ID = '9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d';
export const EXAMPLE_KEY_ID = '3c2b1a09-8f7e-4d6c-9b5a-493827161504';
export const EXAMPLE_ENDPOINT_ID = '7f3e2d1c-0b9a-4877-a665-544332211009';
export const EXAMPLE_DELIVERY_ID = '6f1e2d3c-4b5a-4c6d-8e7f-9a0b1c2d3e4f';
export const EXAMPLE_EVENT_ID = '1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d';

/** The output of the example run: image_upscale's PNG. */
export const EXAMPLE_OUTPUT = {
  asset_id: EXAMPLE_ASSET_ID,
  mime_type: 'image/png',
  width: 1280,
  height: 960,
  duration_seconds: null,
  size_bytes: 1843202,
  file_name: 'photo-upscaled.png',
};

/** A run as the API shows it, in a given state. */
export function exampleRun(status: 'queued' | 'running' | 'succeeded' | 'failed' | 'canceled'): Record<string, unknown> {
  const final = status === 'succeeded' || status === 'failed' || status === 'canceled';
  return {
    object: 'run',
    id: EXAMPLE_RUN_ID,
    tool_id: 'image_upscale',
    product_id: 'image_upscale',
    status,
    progress: status === 'succeeded' ? 1 : status === 'queued' ? 0 : 0.5,
    cost_sparks: status === 'failed' || status === 'canceled' ? 0 : 3,
    outputs: status === 'succeeded' ? [EXAMPLE_OUTPUT] : [],
    error: status === 'failed' ? 'The image does not decode: unexpected end of file.' : null,
    api_key_id: EXAMPLE_KEY_ID,
    created_at: '2025-05-01T09:30:00.000Z',
    started_at: status === 'queued' ? null : '2025-05-01T09:30:01.250Z',
    finished_at: final ? '2025-05-01T09:30:03.900Z' : null,
  };
}

/** A webhook endpoint as the API lists it. */
export const EXAMPLE_ENDPOINT = {
  object: 'webhook_endpoint',
  id: EXAMPLE_ENDPOINT_ID,
  url: 'https://hooks.example.com/toolrun',
  events: ['run.succeeded', 'run.failed'],
  enabled: true,
  created_at: '2025-05-01T09:00:00.000Z',
};
