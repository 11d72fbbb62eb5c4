import { EXAMPLE_DELIVERY_ID, EXAMPLE_ENDPOINT_ID, EXAMPLE_FILE_ID, EXAMPLE_RUN_ID, envelope, type Example } from './types.js';

/**
 * One example answer per error code an operation of the reference can send, worded as the service
 * words it. An operation gets, for each error status it documents, one example per code that
 * status lists, unless its samples give that status examples of their own.
 */
const ERRORS: Record<string, Example> = {
  api_key_required: {
    summary: 'No API key',
    value: envelope('api_key_required', 'This call needs an API key: send the header "Authorization: Bearer svc_...". Session tokens are not accepted.'),
  },
  invalid_api_key: {
    summary: 'A malformed, unknown or revoked key',
    value: envelope('invalid_api_key', 'The API key is malformed, unknown or revoked. Check it, or ask a team owner or admin for a new one.'),
  },
  plan_upgrade_required: {
    summary: 'The team is on the Free plan',
    value: envelope('plan_upgrade_required', 'API access needs the Plus, Pro or Team plan. Upgrade the team to use this key.', {
      details: { plan: 'free', required_plans: ['plus', 'pro', 'team'] },
    }),
  },
  insufficient_scope: {
    summary: 'The key lacks the scope',
    value: envelope('insufficient_scope', 'This API key lacks the "run" scope. Create a key with that scope.', { details: { required_scope: 'run' } }),
  },
  insufficient_role: {
    summary: "The key's member is not an owner or admin",
    value: envelope('insufficient_role', "Webhook endpoints are managed by a team owner or admin; this key's member is not one.", {
      details: { required_role: 'admin', role: 'member' },
    }),
  },
  consent_required: {
    summary: 'A person in the input has not consented',
    value: envelope('consent_required', "The voice element must have the person's active consent before voice_clone can use it.", {
      details: { element_ids: ['2b9d8f7e-6c5a-4b3d-9e1f-0a2b3c4d5e6f'] },
    }),
  },
  insufficient_sparks: {
    summary: 'Not enough Sparks for the hold',
    value: envelope('insufficient_sparks', 'This run holds 3 Sparks and the team has 1 available.', { details: { needed_sparks: 3, available_sparks: 1 } }),
  },
  tool_not_found: {
    summary: 'No such tool for this key',
    value: envelope('tool_not_found', 'No tool "image_upscal" is available over the API; GET /v1/tools lists them.'),
  },
  run_not_found: {
    summary: 'No such run in this team',
    value: envelope('run_not_found', `No run ${EXAMPLE_RUN_ID} started with this team's API keys.`),
  },
  output_not_found: {
    summary: 'No such output',
    value: envelope('output_not_found', 'No output 9a8b7c6d-0000-4a3b-8c2d-1e0f9a8b7c6d of this run is available (unknown, of another run, or past its retention).'),
  },
  file_not_found: {
    summary: 'No such file',
    value: envelope('file_not_found', `No file ${EXAMPLE_FILE_ID} (unknown, of another team, or expired). Start a new upload.`),
  },
  webhook_endpoint_not_found: {
    summary: 'No such endpoint in this team',
    value: envelope('webhook_endpoint_not_found', `No webhook endpoint ${EXAMPLE_ENDPOINT_ID} in this team.`),
  },
  delivery_not_found: {
    summary: 'No such delivery of this endpoint',
    value: envelope('delivery_not_found', `No delivery ${EXAMPLE_DELIVERY_ID} of this endpoint.`),
  },
  tool_execution_pipeline: {
    summary: 'A pipeline tool',
    value: envelope('tool_execution_pipeline', 'video_story runs as a multi-step pipeline, which the API does not start.'),
  },
  output_not_ready: {
    summary: 'The output is still being checked',
    value: envelope('output_not_ready', 'This output is still being checked; retry in a few seconds.'),
  },
  run_not_cancelable: {
    summary: 'The run is already final',
    value: envelope('run_not_cancelable', 'The run already succeeded; only queued or running runs can be canceled.', { details: { status: 'succeeded' } }),
  },
  webhook_endpoint_limit_reached: {
    summary: 'The team has its most endpoints',
    value: envelope('webhook_endpoint_limit_reached', 'A team has at most 10 webhook endpoints; delete one first.', { details: { limit: 10 } }),
  },
  delivery_not_redeliverable: {
    summary: 'The delivery was not given up',
    value: envelope('delivery_not_redeliverable', `Delivery ${EXAMPLE_DELIVERY_ID} is pending; only a delivery that was given up (failed) can be sent again.`),
  },
  part_too_small: {
    summary: 'The storage refused parts under its minimum part size',
    value: envelope(
      'part_too_small',
      'The storage refused to assemble parts of 16384 bytes: that is under its minimum part size (S3: 5 MiB for every part but the last). The server is misconfigured (TOOLRUN_PART_SIZE_BYTES, with the test-only TOOLRUN_S3_ALLOW_SMALL_PARTS); tell its operator. This upload cannot complete.',
      { details: { part_size_bytes: 16384 } },
    ),
  },
  upload_not_found: {
    summary: 'The storage no longer holds the upload',
    value: envelope(
      'upload_not_found',
      'The storage no longer holds this upload (NoSuchUpload): it was aborted outside the service, by a bucket lifecycle rule or an operator. Start a new upload.',
    ),
  },
  part_in_progress: {
    summary: 'A part is still being PUT',
    value: envelope('part_in_progress', 'Part 2 is still being written by another PUT; complete the upload once every part PUT has finished.', {
      details: { part_numbers: [2] },
    }),
  },
  payload_too_large: {
    summary: 'The body is too large',
    value: envelope('payload_too_large', 'The request body is larger than this endpoint accepts.'),
  },
  unsupported_media_type: {
    summary: 'The body is not JSON',
    value: envelope('unsupported_media_type', 'Send the body as JSON with "Content-Type: application/json".'),
  },
  idempotency_key_reused: {
    summary: 'The Idempotency-Key started another run',
    value: envelope('idempotency_key_reused', 'This Idempotency-Key was used for a different tool or body; use a new key for a new run.', {
      details: { run_id: EXAMPLE_RUN_ID },
    }),
  },
  invalid_request: {
    summary: 'A malformed id in the path',
    value: envelope('invalid_request', 'Invalid request: path.run_id: has an invalid format', {
      errors: [{ loc: ['path', 'run_id'], message: 'has an invalid format', code: 'invalid_format' }],
    }),
  },
  rate_limited: {
    summary: "The key's requests per minute are used up",
    value: envelope('rate_limited', 'Too many requests for this key; retry in 2 s.', { details: { limit_per_minute: 60 } }),
  },
  request_timeout: {
    summary: 'The request did not arrive in time',
    value: envelope('request_timeout', 'The request did not arrive in time; the connection is closed. Send it again, at a steady pace.'),
  },
  internal_error: {
    summary: 'A failure on the service side',
    value: envelope('internal_error', 'Something failed on our side. Retry with backoff; if it persists, quote the request id.'),
  },
  service_unavailable: {
    summary: 'The database does not answer',
    value: envelope('service_unavailable', 'The service is briefly unavailable; retry with backoff.'),
  },
};

/** The default example of an error code; null for a code the table lacks (the tests name it). */
export function errorExample(code: string): Example | null {
  return ERRORS[code] ?? null;
}
