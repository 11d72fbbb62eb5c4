// toolrun-cli listen --forward-to URL: the team's events (GET /v1/events) forwarded to a local
// server, signed as webhook deliveries are, with a signing secret made up here and printed at the
// start (as `stripe listen` does). The CLI pulls the events over its own connection, so nothing
// from the service has to reach the local machine. Ctrl-C (or SIGTERM) stops it (exit 0).
import { randomUUID } from 'node:crypto';
import { newWebhookSecret, signWebhook, type StreamedEvent, type Toolrun } from '@toolrun/sdk';
import { EXIT } from './commands.ts';
import { UsageError } from './inputs.ts';
import type { Ui } from './ui.ts';

/** A delivery's deadline, the service's own for webhook endpoints. */
const FORWARD_TIMEOUT_MS = 10_000;

export interface ListenArgs {
  forwardTo: string;
  /** Only these event types (comma-separated); all when absent. */
  events?: string;
}

function forwardUrl(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UsageError(`--forward-to takes a URL such as http://localhost:3000/hooks; got ${raw}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UsageError(`--forward-to takes an http or https URL; got ${raw}`);
  return url;
}

/** POSTs the event's body, byte for byte, with the headers a webhook delivery carries. */
async function forward(url: URL, e: StreamedEvent, secret: string): Promise<{ status: number | null; error: string | null }> {
  try {
    const res = await fetch(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'user-agent': 'Service-Webhooks/1',
        'service-event': e.type,
        'service-delivery': randomUUID(),
        'service-signature': signWebhook(e.body, secret),
      },
      body: e.body,
      redirect: 'manual',
      signal: AbortSignal.timeout(FORWARD_TIMEOUT_MS),
    });
    await res.arrayBuffer().catch(() => undefined);
    return { status: res.status, error: null };
  } catch (err) {
    const cause = err instanceof Error && err.cause instanceof Error ? err.cause.message : err instanceof Error ? err.message : String(err);
    return { status: null, error: cause };
  }
}

export async function listenCommand(client: Toolrun, ui: Ui, args: ListenArgs): Promise<number> {
  const url = forwardUrl(args.forwardTo);
  const types = args.events ? new Set(args.events.split(',').map((t) => t.trim()).filter(Boolean)) : null;
  const secret = newWebhookSecret();
  const stop = new AbortController();
  // Ctrl-C, or SIGTERM (a service manager, or a script's `kill`): stop reading and exit 0.
  const onSigint = () => stop.abort(new Error('interrupted'));
  process.on('SIGINT', onSigint);
  process.on('SIGTERM', onSigint);
  const print = (value: Record<string, unknown>, text: string) => (ui.json ? process.stdout.write(`${JSON.stringify(value)}\n`) : ui.line(text));
  print({ object: 'listen', forward_to: url.href, signing_secret: secret }, `Your webhook signing secret is ${secret}`);
  let opened = false;
  try {
    for await (const e of client.events.stream({
      signal: stop.signal,
      onOpen: () => {
        if (opened) return;
        opened = true;
        print({ object: 'listen', ready: true }, `Ready: forwarding events to ${url.href} (Ctrl-C to quit)`);
      },
      onRetry: ({ error, delayMs }) => ui.note(`Could not open the event stream (${error.code}${error.status ? `, HTTP ${error.status}` : ''}); retrying in ${Math.ceil(delayMs / 1000)} s`),
      onReconnect: ({ lastEventId }) => ui.note(`Reconnected${lastEventId ? ` after event ${lastEventId}` : ''}`),
      onResumeRefused: () => {
        ui.note('Reconnected, but events from the gap could not be resumed (more than 24 hours?): some may have been missed.');
        return true;
      },
    })) {
      if (types && !types.has(e.type)) continue;
      const answer = await forward(url, e, secret);
      const outcome = answer.status !== null ? String(answer.status) : `failed: ${answer.error}`;
      print(
        { event_id: e.id, type: e.type, run_id: e.event.data.run?.id ?? null, status: answer.status, error: answer.error },
        `${new Date().toISOString()}  ${e.type.padEnd(13)}  ${e.id}  -> ${outcome}`,
      );
    }
    return EXIT.ok;
  } catch (err) {
    if (stop.signal.aborted) {
      ui.note('Stopped.');
      return EXIT.ok;
    }
    throw err;
  } finally {
    process.off('SIGINT', onSigint);
    process.off('SIGTERM', onSigint);
  }
}
