// @toolrun/sdk: a typed client for the Tool-Run API v1. No dependencies beyond Node 20's fetch,
// crypto and fs.
export { Toolrun, SDK_VERSION, type ToolrunOptions } from './client.ts';
export { RunFailedError, ToolrunError, type ErrorCode, type KnownErrorCode } from './errors.ts';
export type { RetryInfo, RetryPolicy } from './http.ts';
export type { UploadInput, UploadOptions, UploadProgress } from './files.ts';
export type { FileInput, RunOptions, RunResult } from './run-one.ts';
export type { DownloadedOutput, DownloadOptions, RunEvent, RunRef, StartOptions, WaitOptions } from './runs.ts';
export { newWebhookSecret, signWebhook, type EventStreamOptions, type StreamedEvent } from './events.ts';
export { parseSse, type SseMessage, type StreamOptions } from './sse.ts';
export { verifyWebhook, WebhookVerificationError, type VerifyWebhookOptions, type WebhookVerificationReason } from './webhooks.ts';
export { guessMimeType } from './mime.ts';
export { FINAL_STATUSES, isFinal } from './types.ts';
export type * from './types.ts';
export type { components, operations, paths } from './generated/openapi.ts';
