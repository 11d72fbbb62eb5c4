// Following a run to its end, with Ctrl-C offering to cancel it:
// - stdin is a terminal: the bar pauses and "Cancel run ...? [y/N]" is asked. y cancels the run;
//   anything else goes back to following; a second Ctrl-C at the question leaves the run running
//   and exits (130).
// - otherwise (scripts, CI): the first Ctrl-C (SIGINT) says what the next one does; the second
//   cancels the run.
import readline from 'node:readline';
import { ToolrunError, type Run, type Toolrun } from '@toolrun/sdk';
import type { Ui } from './ui.ts';

export type FollowOutcome =
  | { kind: 'final'; run: Run }
  /** Canceled from the keyboard; run is what cancel answered (or the run, if it had just ended). */
  | { kind: 'canceled'; run: Run }
  /** The user left the run running. */
  | { kind: 'detached'; run: Run };

export interface FollowOptions {
  intervalMs?: number;
  /** A SIGINT that arrived before the run was known (while it was being started). */
  interruptedEarly?: boolean;
}

export async function follow(client: Toolrun, started: Run, ui: Ui, opts: FollowOptions = {}): Promise<FollowOutcome> {
  const bar = ui.runBar(started);
  const polling = new AbortController();
  let latest = started;
  const state: { prompt: readline.Interface | null } = { prompt: null };
  let interrupts = 0;
  let settle!: (action: 'cancel' | 'detach') => void;
  const userAction = new Promise<'cancel' | 'detach'>((resolve) => (settle = resolve));

  const ask = () => {
    bar.pause();
    const rl = readline.createInterface({ input: process.stdin, output: process.stderr, terminal: true });
    state.prompt = rl;
    // Ctrl-C at the question: leave the run alone and stop following.
    rl.on('SIGINT', () => {
      rl.close();
      state.prompt = null;
      settle('detach');
    });
    rl.question(`\nCancel run ${started.id}? [y/N] `, (answer) => {
      rl.close();
      state.prompt = null;
      if (/^\s*y(es)?\s*$/i.test(answer)) settle('cancel');
      else bar.resume();
    });
  };

  const onSigint = () => {
    interrupts++;
    if (process.stdin.isTTY) {
      if (!state.prompt) ask();
      return;
    }
    if (interrupts === 1) ui.note(`\nInterrupted: press Ctrl-C again (or send SIGINT) to cancel run ${started.id}; it keeps running otherwise.`);
    else settle('cancel');
  };
  process.on('SIGINT', onSigint);
  if (opts.interruptedEarly) onSigint();

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
    process.off('SIGINT', onSigint);
    polling.abort();
    if (state.prompt) {
      // The run ended while the question was open.
      state.prompt.close();
      process.stderr.write('\n');
    }
    bar.stop();
  }
}
