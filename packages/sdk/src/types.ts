// The SDK's names for the API's resources, all taken from the types generated from
// /v1/openapi.json (src/generated/openapi.ts), so they cannot drift from the server.
import type { components, operations } from './generated/openapi.ts';

type Schemas = components['schemas'];
type JsonBody<Op extends keyof operations> = operations[Op] extends { requestBody?: { content: { 'application/json': infer B } } } ? B : never;

export type Me = Schemas['Me'];
export type Tool = Schemas['Tool'];
export type ToolInput = Schemas['ToolInput'];
export type ToolList = Schemas['ToolList'];
export type Estimate = Schemas['Estimate'];
export type Run = Schemas['Run'];
export type RunOutput = Schemas['RunOutput'];
export type RunStatus = Run['status'];
export type RunList = Schemas['RunList'];
/** Query of GET /v1/runs: limit, starting_after, status, tool_id, created_after, created_before. */
export type ListRunsQuery = NonNullable<operations['listRuns']['parameters']['query']>;
export type OutputUrl = Schemas['OutputUrl'];
export type FileUpload = Schemas['FileUpload'];
/** A completed upload (`object: 'file'`); named so it does not shadow the global File. */
export type FileObject = Schemas['File'];
export type WebhookEndpoint = Schemas['WebhookEndpoint'];
export type CreatedWebhookEndpoint = Schemas['CreatedWebhookEndpoint'];
export type WebhookEndpointList = Schemas['WebhookEndpointList'];
export type WebhookTest = Schemas['WebhookTest'];
export type WebhookDelivery = Schemas['WebhookDelivery'];
export type WebhookDeliveryList = Schemas['WebhookDeliveryList'];
/** Query of GET /v1/webhook-endpoints/{id}/deliveries: limit, starting_after, status. */
export type ListDeliveriesQuery = NonNullable<operations['listWebhookDeliveries']['parameters']['query']>;
export type Deleted = Schemas['Deleted'];
export type ErrorResponse = Schemas['ErrorResponse'];
export type FieldError = NonNullable<ErrorResponse['error']['errors']>[number];

/** Body of estimate and start run (the same shape). */
export type RunBody = JsonBody<'startRun'>;
export type EstimateBody = JsonBody<'estimateRun'>;
export type UploadUrlBody = JsonBody<'createFileUpload'>;
export type CompleteUploadBody = JsonBody<'completeFileUpload'>;
export type CreateWebhookEndpointBody = JsonBody<'createWebhookEndpoint'>;
export type UpdateWebhookEndpointBody = JsonBody<'updateWebhookEndpoint'>;

/** Statuses after which a run never changes. */
export const FINAL_STATUSES: readonly string[] = ['succeeded', 'failed', 'canceled'] satisfies RunStatus[];

export function isFinal(run: Pick<Run, 'status'>): boolean {
  return FINAL_STATUSES.includes(run.status);
}

/** Event types the service documents; others may arrive and are passed through. */
export type KnownEventType = 'run.succeeded' | 'run.failed' | 'run.canceled' | 'ping';

/**
 * A webhook delivery's body. `data.run` is set on run.* events (the run resource), and
 * `data.webhook_endpoint_id` on ping. Unknown event types and fields are kept as they came.
 */
export interface WebhookEvent {
  id: string;
  object: 'event' | (string & {});
  type: KnownEventType | (string & {});
  created_at: string;
  data: { run?: Run; webhook_endpoint_id?: string; [key: string]: unknown };
  [key: string]: unknown;
}
