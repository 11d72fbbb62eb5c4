/**
 * A child process of bench/webhooks.ts (never run on its own): BENCH_RECEIVERS HTTPS receivers on
 * 127.0.0.1, each the tests' Receiver (test/helpers/receiver.ts: the certificate from
 * TEST_TLS_CERT_FILE / TEST_TLS_KEY_FILE, every request recorded with Date.now() when its body has
 * arrived, answered 204). A process of their own, so the receivers' clocks and TLS work do not
 * share an event loop with the load the benchmark generates.
 *
 * IPC: {type:'ready', urls} once listening; 'count' -> how many requests arrived; 'dump' -> the
 * arrivals (receiver index, time, event id, Service-Delivery); 'reset' forgets them; 'stop'.
 */
import { closeReceivers, Receiver } from '../test/helpers/receiver.js';

export interface Arrival {
  receiver: number;
  /** Epoch ms when the whole body had arrived. */
  at: number;
  eventId: string;
  delivery: string;
}
export type ReceiverParentMessage = { type: 'count' } | { type: 'dump' } | { type: 'reset' } | { type: 'stop' };
export type ReceiverChildMessage =
  | { type: 'ready'; urls: string[] }
  | { type: 'count'; count: number }
  | { type: 'records'; records: Arrival[] }
  | { type: 'reset-done' }
  | { type: 'error'; message: string };

const send = (m: ReceiverChildMessage) => process.send?.(m);

function eventId(body: Buffer): string {
  try {
    const parsed = JSON.parse(body.toString('utf8')) as { id?: unknown };
    return typeof parsed.id === 'string' ? parsed.id : '';
  } catch {
    return '';
  }
}

async function main(): Promise<void> {
  if (!process.send) throw new Error('bench/webhook-receivers.ts is started by bench/webhooks.ts over IPC');
  const n = Number(process.env.BENCH_RECEIVERS ?? 3);
  const receivers: Receiver[] = [];
  for (let i = 0; i < n; i++) receivers.push(await Receiver.start());
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    closeReceivers().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('message', (m: ReceiverParentMessage) => {
    if (m.type === 'count') send({ type: 'count', count: receivers.reduce((k, r) => k + r.requests.length, 0) });
    else if (m.type === 'dump') {
      const records = receivers.flatMap((r, i) =>
        r.requests.map((q) => ({ receiver: i, at: q.at, eventId: eventId(q.body), delivery: String(q.headers['service-delivery'] ?? '') })),
      );
      send({ type: 'records', records });
    } else if (m.type === 'reset') {
      for (const r of receivers) r.requests.splice(0);
      send({ type: 'reset-done' });
    } else if (m.type === 'stop') stop();
  });
  process.on('disconnect', stop);
  process.on('SIGTERM', stop);
  send({ type: 'ready', urls: receivers.map((r) => r.url('/hook')) });
}

main().catch((err: unknown) => {
  send({ type: 'error', message: err instanceof Error ? (err.stack ?? err.message) : String(err) });
  process.exit(1);
});
