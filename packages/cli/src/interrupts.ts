// Ctrl-C while a run is being started and followed, as the CLI hears it.
//
// At a terminal, stdin goes into raw mode and Ctrl-C arrives as the key it is (0x03) instead of
// being turned by the terminal into a SIGINT for the whole foreground process group. That group
// holds more than the CLI under `npx toolrun-cli`: npm and the `sh -c` it runs the bin through.
// npm relays the signal once more, and a shell that got SIGINT while waiting (dash, Debian's
// /bin/sh) kills itself with it once the CLI exits, so npx exited 130 whatever the CLI had chosen
// (4 after cancelling). Read as a key, the Ctrl-C reaches nobody else and the CLI's exit code
// stands. A SIGINT sent some other way (kill, or with no terminal) is still heard: the listener
// also keeps Node from dying of it, for the same reason.
//
// Raw mode only in the terminal's foreground: a background process that changes the terminal's
// mode is stopped (SIGTTOU). And raw mode swallows Ctrl-Z too, so that key suspends the process
// group as the terminal would have; raw mode comes back when it is continued in the foreground.
import fs from 'node:fs';
import readline from 'node:readline';

export type Answer = 'yes' | 'no' | 'interrupted';

/** Whether this process is in its terminal's foreground process group. Linux says so in /proc; elsewhere it is assumed. */
function inForeground(): boolean {
  let stat: string;
  try {
    stat = fs.readFileSync('/proc/self/stat', 'utf8');
  } catch {
    return true;
  }
  // After "pid (comm) ": state ppid pgrp session tty_nr tpgid ...
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return fields[2] === fields[5];
}

export class Interrupts {
  /** Ctrl-Cs heard before a handler was set (while the run was being started). */
  private pending = 0;
  private handler: (() => void) | null = null;
  private question: { rl: readline.Interface; resolve: (answer: Answer) => void } | null = null;
  private started = false;
  /** stdin is in raw mode, read by us. */
  private reading = false;

  constructor(
    private readonly stdin: NodeJS.ReadStream = process.stdin,
    private readonly out: NodeJS.WriteStream = process.stderr,
  ) {}

  /** A person at a terminal, who can be asked; otherwise only signals arrive. */
  get interactive(): boolean {
    return this.stdin.isTTY === true;
  }

  start(): this {
    if (this.started) return this;
    this.started = true;
    process.on('SIGINT', this.heard);
    if (this.interactive) {
      process.on('SIGCONT', this.continued);
      this.readKeys();
    }
    return this;
  }

  /** Calls fn for each Ctrl-C from now on, and at once for any heard before. */
  handle(fn: () => void): void {
    this.handler = fn;
    for (; this.pending > 0; this.pending--) fn();
  }

  get asking(): boolean {
    return this.question !== null;
  }

  /** Asks at the terminal; Ctrl-C at the question answers 'interrupted'. The answer ends its line. */
  ask(text: string): Promise<Answer> {
    return new Promise((resolve) => {
      // readline reads the keys while it asks (in raw mode too: Ctrl-C is its 'SIGINT' event).
      const rl = readline.createInterface({ input: this.stdin, output: this.out, terminal: true });
      this.question = { rl, resolve };
      const done = (answer: Answer) => {
        rl.close();
        // After the keypress being handled has reached every 'data' listener, ours included: the
        // Ctrl-C that answered must not also count as a new one.
        process.nextTick(() => {
          this.question = null;
          this.reading = false; // readline's close left raw mode and paused stdin
          this.readKeys();
          resolve(answer);
        });
      };
      rl.on('SIGINT', () => {
        // Ctrl-C is not echoed: end the question's line, or what follows is glued to it.
        this.out.write('^C\n');
        done('interrupted');
      });
      rl.question(text, (answer) => done(/^\s*y(es)?\s*$/i.test(answer) ? 'yes' : 'no'));
    });
  }

  /** Closes an open question unanswered (the run ended meanwhile), ending its line; it answers 'no'. */
  dropQuestion(): void {
    if (!this.question) return;
    const { rl, resolve } = this.question;
    this.question = null;
    rl.close();
    this.out.write('\n');
    this.reading = false;
    this.readKeys();
    resolve('no');
  }

  stop(): void {
    if (!this.started) return;
    this.dropQuestion();
    this.started = false;
    process.off('SIGINT', this.heard);
    process.off('SIGCONT', this.continued);
    this.stopReading();
    this.handler = null;
  }

  private readKeys(): void {
    if (!this.started || !this.interactive || this.reading || !inForeground()) return;
    this.reading = true;
    this.stdin.setRawMode(true);
    if (!this.stdin.listeners('data').includes(this.key)) this.stdin.on('data', this.key);
    this.stdin.resume();
  }

  private stopReading(): void {
    this.stdin.off('data', this.key);
    if (!this.reading) return;
    this.reading = false;
    this.stdin.setRawMode(false);
    this.stdin.pause();
  }

  private readonly key = (chunk: Buffer | string) => {
    // Keys typed while the question is open are readline's.
    if (this.question) return;
    const text = typeof chunk === 'string' ? chunk : chunk.toString('latin1');
    if (text.includes('\x1a')) {
      // Ctrl-Z: the terminal's mode back, then stop the whole group (npx's npm and shell too), as the key would have.
      this.stopReading();
      process.kill(0, 'SIGTSTP');
      return;
    }
    // Once this chunk has reached every 'data' listener: a question opened now would otherwise
    // get the same Ctrl-C through readline's own listener, left on stdin by an earlier question.
    if (text.includes('\x03')) process.nextTick(this.heard);
  };

  private readonly continued = () => {
    if (!this.question) this.readKeys();
  };

  private readonly heard = () => {
    if (this.handler) this.handler();
    else this.pending++;
  };
}
