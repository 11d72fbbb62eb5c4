// The console API of runs, the playground and usage (issue 15): types as the routes answer them,
// the calls on top of api.ts's `call`, and the part upload, done with XMLHttpRequest because
// fetch cannot report upload progress.

export type RunStatus = 'queued' | 'running' | 'succeeded' | 'failed' | 'canceled';
export const RUN_STATUSES: readonly RunStatus[] = ['queued', 'running', 'succeeded', 'failed', 'canceled'];
export const FINAL_STATUSES: readonly RunStatus[] = ['succeeded', 'failed', 'canceled'];
export type SlotKind = 'image' | 'video' | 'audio' | 'text' | 'element' | 'enum' | 'number' | 'bool';
export const MEDIA_KINDS: readonly SlotKind[] = ['image', 'video', 'audio'];
export type LedgerKind = 'grant' | 'hold' | 'charge' | 'release' | 'refund';
export const LEDGER_KINDS: readonly LedgerKind[] = ['grant', 'hold', 'charge', 'release', 'refund'];

export interface ToolSlot {
  name: string;
  kind: SlotKind;
  required: boolean;
  min: number;
  max: number;
  constraints?: Record<string, unknown>;
  choices?: string[] | null;
  default?: unknown;
}

export interface Tool {
  object: 'tool';
  id: string;
  name: string;
  description: string;
  family: string;
  inputs: ToolSlot[];
  output_kind: 'image' | 'video' | 'audio' | 'json';
  consent: string;
  allowed: boolean;
  estimate_hint: { sparks_min: number; sparks_max: number };
}

export interface ToolList {
  data: Tool[];
  playground: { allowed: boolean; reason: string | null };
}

export interface FileUpload {
  object: 'file_upload';
  file_id: string;
  upload_id: string;
  part_size_bytes: number;
  parts: { part_number: number; url: string }[];
  expires_in_seconds: number;
}

export interface UploadedFile {
  object: 'file';
  id: string;
  status: 'ready' | 'rejected';
  problem?: string;
}

export interface Estimate {
  object: 'estimate';
  tool_id: string;
  product_id: string;
  sparks: number;
  reserve_sparks: number;
}

export type StartedBy = { kind: 'key'; id: string; name: string; member_email: string } | { kind: 'member'; id: string; email: string };

export interface RunItem {
  id: string;
  tool_id: string;
  tool_name: string;
  status: RunStatus;
  progress: number;
  cost_sparks: number;
  source: 'api' | 'app';
  started_by: StartedBy;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
}

export interface RunFilters {
  tool_id?: string;
  status?: RunStatus;
  api_key_id?: string;
  member_id?: string;
  source?: 'api' | 'app';
  limit?: number;
  cursor?: string;
}

export interface RunList {
  data: RunItem[];
  next_cursor: string | null;
  filters: { tools: { id: string; name: string }[]; keys: { id: string; name: string }[]; members: { id: string; email: string }[] };
}

export interface RunOutput {
  asset_id: string;
  file_name: string;
  mime_type: string | null;
  width: number | null;
  height: number | null;
  duration_seconds: number | null;
  size_bytes: number;
}

export interface InputFile {
  slot: string;
  file_id: string;
  file_name: string;
  mime_type: string | null;
  width: number | null;
  height: number | null;
  duration_seconds: number | null;
}

export interface RunLedgerEntry {
  id: string;
  kind: 'hold' | 'charge' | 'release' | 'refund';
  amount: number;
  note: string | null;
  created_at: string;
}

export interface ConsoleRun extends RunItem {
  inputs: Record<string, unknown>;
  input_files: InputFile[];
  error: string | null;
  ledger: RunLedgerEntry[];
  outputs: RunOutput[];
  can_cancel: boolean;
  /** Only while queued: its place in the team's queue and the team's slots. */
  queue: { position: number; running: number; limit: number } | null;
}

export interface SignedUrl {
  url: string;
  expires_in_seconds: number;
}

export interface LedgerEntry {
  id: string;
  kind: LedgerKind;
  amount: number;
  run_id: string | null;
  note: string | null;
  created_at: string;
}

export interface LedgerPage {
  sparks_available: number;
  data: LedgerEntry[];
  next_cursor: string | null;
}

export interface Usage {
  sparks_available: number;
  since: string;
  days: { date: string; sparks_spent: number; runs: number }[];
  tools: { tool_id: string; tool_name: string; runs: number; sparks_spent: number }[];
}

export interface RunsApi {
  listTools(): Promise<ToolList>;
  uploadUrl(body: { file_name: string; mime_type: string; size_bytes: number }): Promise<FileUpload>;
  completeUpload(fileId: string, body: { upload_id: string; parts: { part_number: number; etag: string }[] }): Promise<UploadedFile>;
  estimate(toolId: string, inputs: Record<string, unknown>): Promise<Estimate>;
  startRun(toolId: string, inputs: Record<string, unknown>): Promise<ConsoleRun>;
  listRuns(filters: RunFilters): Promise<RunList>;
  getRun(runId: string): Promise<ConsoleRun>;
  cancelRun(runId: string): Promise<ConsoleRun>;
  outputUrl(runId: string, assetId: string): Promise<SignedUrl>;
  inputUrl(runId: string, fileId: string): Promise<SignedUrl>;
  ledger(q: { kind?: LedgerKind; run_id?: string; limit?: number; cursor?: string }): Promise<LedgerPage>;
  usage(): Promise<Usage>;
}

export type Call = <T>(method: 'GET' | 'POST', path: string, body?: unknown) => Promise<T>;

/** "?a=1&b=2" from the set fields only (an empty filter is no filter). */
export function query(q: object): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(q)) if (v !== undefined && v !== null && v !== '') params.set(k, String(v));
  const s = params.toString();
  return s ? `?${s}` : '';
}

export function runsApi(call: Call): RunsApi {
  const id = encodeURIComponent;
  return {
    listTools: () => call('GET', '/tools'),
    uploadUrl: (body) => call('POST', '/files/upload-url', body),
    completeUpload: (fileId, body) => call('POST', `/files/${id(fileId)}/complete`, body),
    estimate: (toolId, inputs) => call('POST', `/tools/${id(toolId)}/estimate`, { inputs }),
    startRun: (toolId, inputs) => call('POST', `/tools/${id(toolId)}/runs`, { inputs }),
    listRuns: (filters) => call('GET', `/runs${query(filters)}`),
    getRun: (runId) => call('GET', `/runs/${id(runId)}`),
    cancelRun: (runId) => call('POST', `/runs/${id(runId)}/cancel`),
    outputUrl: (runId, assetId) => call('GET', `/runs/${id(runId)}/outputs/${id(assetId)}/url`),
    inputUrl: (runId, fileId) => call('GET', `/runs/${id(runId)}/inputs/${id(fileId)}/url`),
    ledger: (q) => call('GET', `/ledger${query(q)}`),
    usage: () => call('GET', '/usage'),
  };
}

/** PUTs one part's bytes to its signed URL; the ETag header the storage answers with. */
export function putPart(url: string, bytes: Blob, onProgress: (loaded: number) => void): Promise<string> {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('PUT', url);
    xhr.upload.onprogress = (e) => onProgress(e.loaded);
    xhr.onload = () => {
      const etag = xhr.getResponseHeader('ETag');
      if (xhr.status >= 200 && xhr.status < 300 && etag) {
        onProgress(bytes.size);
        resolve(etag);
      } else {
        let message = `The upload was refused (HTTP ${xhr.status}).`;
        try {
          const m = (JSON.parse(xhr.responseText) as { error?: { message?: unknown } }).error?.message;
          if (typeof m === 'string') message = m;
        } catch {
          // Not the JSON envelope: the status says enough.
        }
        reject(new Error(message));
      }
    };
    xhr.onerror = () => reject(new Error('The upload could not reach the service. Check the connection and try again.'));
    xhr.send(bytes);
  });
}

/**
 * The multipart upload of one file, as the API does it: ask for part URLs, PUT the parts one after
 * another (progress is bytes sent of the whole file, 0..1), then complete with their ETags.
 */
export async function uploadFile(api: RunsApi, file: File, onProgress: (fraction: number) => void): Promise<UploadedFile> {
  const upload = await api.uploadUrl({ file_name: file.name, mime_type: file.type || 'application/octet-stream', size_bytes: file.size });
  const parts: { part_number: number; etag: string }[] = [];
  let done = 0;
  for (const part of upload.parts) {
    const start = (part.part_number - 1) * upload.part_size_bytes;
    const bytes = file.slice(start, Math.min(start + upload.part_size_bytes, file.size));
    const etag = await putPart(part.url, bytes, (loaded) => onProgress(file.size ? (done + loaded) / file.size : 1));
    done += bytes.size;
    parts.push({ part_number: part.part_number, etag });
  }
  onProgress(1);
  return api.completeUpload(upload.file_id, { upload_id: upload.upload_id, parts });
}
