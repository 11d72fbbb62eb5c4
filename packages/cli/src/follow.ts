// Following a run to its end, with Ctrl-C offering to cancel it:
// - stdin is a terminal: the bar pauses and "Cancel run ...? [y/N]" is asked. y cancels the run;
//   anything else goes back to following; a second Ctrl-C at the question leaves the run running
//   and exits (130). Ctrl-C is read as a key there (interrupts.ts says why).
// - otherwise (scripts, CI): the first Ctrl-C (SIGINT) says what the next one does; the second
//   cancels the run.
import { ToolrunError, type Run, type Toolrun } from '@toolrun/sdk';
import type { Interrupts } from './interrupts.ts';
import type { Ui } from './ui.ts';

export type FollowOutcome =
  | { kind: 'final'; run: Run }
  /** Canceled from the keyboard; run is what cancel answered (or the run, if it had just ended). */
  | { kind: 'canceled'; run: Run }
  /** The user left the run running. */
  | { kind: 'detached'; run: Run };

export interface FollowOptions {
  intervalMs?: number;
}

/** Follows the run; `interrupts` has been started (before the run was, so none is missed). */
export async function follow(client: Toolrun, started: Run, ui: Ui, interrupts: Interrupts, opts: FollowOptions = {}): Promise<FollowOutcome> {
  const bar = ui.runBar(started);
  const polling = new AbortController();
  let latest = started;
  let count = 0;
  let settle!: (action: 'cancel' | 'detach') => void;
  const userAction = new Promise<'cancel' | 'detach'>((resolve) => (settle = resolve));

  const ask = async () => {
    bar.pause();
    const answer = await interrupts.ask(`\nCancel run ${started.id}? [y/N] `);
    if (answer === 'yes') settle('cancel');
    else if (answer === 'interrupted') settle('detach');
    else if (!polling.signal.aborted) bar.resume();
  };

  interrupts.handle(() => {
    count++;
    if (interrupts.interactive) {
      if (!interrupts.asking) void ask();
      return;
    }
    if (count === 1) ui.note(`\nInterrupted: press Ctrl-C again (or send SIGINT) to cancel run ${started.id}; it keeps running otherwise.`);
    else settle('cancel');
  });

  const waited = client.runs.wait(started, {
    signal: polling.signal,
    ...(opts.intervalMs !== undefined ? { intervalMs: opts.intervalMs } : {}),
    onProgress: (r) => {
      latest = r;
      bar.update(r);
    },
  });
  waited.catch(() => undefined); // its rejection after abort is expected; a real one is raced below

  try {
    const first = await Promise.race([waited.then((run) => ({ kind: 'final' as const, run })), userAction.then((action) => ({ kind: action }))]);
    if (first.kind === 'final') return first;
    polling.abort();
    if (first.kind === 'detach') return { kind: 'detached', run: latest };
    bar.stop();
    try {
      return { kind: 'canceled', run: await client.runs.cancel(started.id) };
    } catch (err) {
      // It ended on its own meanwhile: report how.
      if (err instanceof ToolrunError && err.code === 'run_not_cancelable') return { kind: 'final', run: await client.runs.get(started.id) };
      throw err;
    }
  } finally {
    polling.abort();
    // The run may have ended while the question was open.
    interrupts.dropQuestion();
    bar.stop();
  }
}
