import { EXAMPLE_REQUEST_ID } from '../../core/examples.js';

/** An OpenAPI Example Object: shown by name in the reference, validated against its schema by the tests. */
export interface Example {
  summary: string;
  description?: string;
  value: unknown;
}

/**
 * Environment variables a sample reads besides TOOLRUN_API_KEY and TOOLRUN_BASE_URL: ids an
 * earlier call answered, so the sample shown is exactly what one types after that call.
 */
export type SampleVar = 'FILE_ID' | 'UPLOAD_ID' | 'PART_URL' | 'RUN_ID' | 'ASSET_ID' | 'WEBHOOK_ENDPOINT_ID' | 'DELIVERY_ID';

/** Everything the reference shows for one operation beside what its schemas say. */
export interface OperationSamples {
  /** Variables the code samples read (see SAMPLE_VARS), in the order a reader meets them. */
  vars: SampleVar[];
  /** Files in the current directory a sample reads. */
  files?: string[];
  /** A shell command line for curl 7.84 or newer (bash). */
  curl: string;
  /** A TypeScript program (an ES module with top-level await) using @toolrun/sdk. */
  typescript: string;
  /** A Python 3.9+ program using the standard-library client in clients/python (package toolrun). */
  python: string;
  /** Named examples of the JSON request body, on operations that take one. */
  request?: Record<string, Example>;
  /** An example value for each path and query parameter. */
  parameters?: Record<string, unknown>;
  /**
   * Named examples by response status. Statuses left out get the defaults: a success its schema
   * component's example, an error one example per error code the status lists.
   */
  responses?: Record<string, Record<string, Example>>;
}

/** The error envelope, as the service sends it. */
export function envelope(
  code: string,
  message: string,
  extra: { errors?: { loc: (string | number)[]; message: string; code: string | null }[]; details?: Record<string, unknown> } = {},
): { error: Record<string, unknown> } {
  return { error: { code, message, request_id: EXAMPLE_REQUEST_ID, errors: extra.errors ?? null, details: extra.details ?? null } };
}

// Ids and resources the examples use, shared with the schemas' own examples (one story reads through).
export {
  EXAMPLE_ASSET_ID,
  EXAMPLE_DELIVERY_ID,
  EXAMPLE_ENDPOINT_ID,
  EXAMPLE_EVENT_ID,
  EXAMPLE_FILE_ID,
  EXAMPLE_KEY_ID,
  EXAMPLE_REQUEST_ID,
  EXAMPLE_RUN_ID,
  EXAMPLE_UPLOAD_ID,
  exampleRun,
} from '../../core/examples.js';
