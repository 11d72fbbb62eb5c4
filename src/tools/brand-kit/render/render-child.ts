// The entry module of a render's child process (forked by supervisor.ts, one per render): it
// drives Chromium with Playwright and runs the render's proxy, so that whatever the page makes
// Playwright hold (console messages, CDP events, answers) is held here, under this process's own
// heap limit, and not in the service. It says {type:'ready'}, takes one {type:'render'} job,
// answers {type:'done'} or {type:'failed'} (small messages: the page's DOM and resources go to
// files in the render's directory), closes the browser within the grace and exits. It also exits
// when the service goes away (the IPC channel closes).
import { MAX_LOG_MESSAGES } from './limits.js';
import type { FromChild, ToChild } from './protocol.js';
import { PageRender } from './render.js';

const send = (m: FromChild): Promise<void> =>
  new Promise((resolve) => {
    if (!process.send || !process.connected) return resolve();
    process.send(m, undefined, {}, () => resolve());
  });

let logged = 0;
/** The proxy's refusals, forwarded to the service's log (bounded in number and size). */
const logger = {
  warn(fields: unknown, msg?: unknown): void {
    if (logged++ >= MAX_LOG_MESSAGES || typeof fields !== 'object' || fields === null) return;
    const out: Record<string, string | number | boolean> = {};
    for (const [k, v] of Object.entries(fields).slice(0, 8)) {
      if (typeof v === 'number' || typeof v === 'boolean') out[k.slice(0, 40)] = v;
      else if (typeof v === 'string') out[k.slice(0, 40)] = v.slice(0, 500);
    }
    void send({ type: 'log', msg: String(msg ?? '').slice(0, 200), fields: out });
  },
};

process.on('disconnect', () => process.exit(0));
process.once('message', (m: ToChild) => {
  if (m?.type !== 'render') process.exit(2);
  const render = new PageRender(m.job, logger);
  void render
    .run()
    .then(
      (result) => send({ type: 'done', result }),
      (err: unknown) => send({ type: 'failed', message: (err instanceof Error ? err.message : 'the browser failed').slice(0, 500) }),
    )
    .then(() => render.close(Math.max(0, m.job.limits.closeGraceMs - 500)))
    .finally(() => process.exit(0));
});
void send({ type: 'ready' });
