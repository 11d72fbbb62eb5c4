import { Worker } from 'node:worker_threads';

// MD5 of a part's bytes, taken by a worker thread that reads them back from the file they were
// just written to, so that the event loop's thread only receives and writes (MD5 was about half
// of its time: ~1.7 s a GiB here). The thread reads through the writer's own descriptor (pread,
// so the writer's file offset is untouched) into one reused buffer: nothing is copied between
// threads and no ArrayBuffer changes hands, and the bytes hashed are exactly the bytes stored.
// Messages on one port arrive in order, and the thread handles each before the next, so a
// digest (or an abort) answered means every update before it is done with the descriptor: the
// writer may close it then, and not before (a closed number could be reused by another file).
//
// The thread's code is plain JavaScript given as a string (`eval`), so the same code runs from
// the sources through tsx and from the compiled dist/ without a loader in the thread.

const THREAD_SOURCE = `
const { parentPort } = require('node:worker_threads');
const { createHash } = require('node:crypto');
const { readSync } = require('node:fs');
const buf = Buffer.allocUnsafe(1024 * 1024);
const jobs = new Map();
parentPort.on('message', (m) => {
  let job = jobs.get(m.id);
  if (!job) jobs.set(m.id, (job = { hash: createHash('md5'), error: null }));
  if (m.op === 'update') {
    if (job.error) return;
    try {
      for (let done = 0; done < m.length; ) {
        const n = readSync(m.fd, buf, 0, Math.min(buf.length, m.length - done), m.position + done);
        if (n === 0) throw new Error('the file ended before the bytes written to it');
        job.hash.update(buf.subarray(0, n));
        done += n;
      }
    } catch (err) {
      job.error = String((err && err.message) || err);
    }
    return;
  }
  jobs.delete(m.id);
  if (m.op === 'digest' && !job.error) parentPort.postMessage({ id: m.id, md5: job.hash.digest('hex') });
  else parentPort.postMessage({ id: m.id, error: job.error });
});
`;

/** A worker idle this long is stopped (its isolate holds ~10 MiB); the next upload starts one. */
const IDLE_MS = 10_000;

type Request =
  | { op: 'update'; id: number; fd: number; position: number; length: number }
  | { op: 'digest' | 'abort'; id: number };
type Reply = { id: number; md5?: string; error?: string | null };

interface Waiter {
  resolve(md5: string): void;
  reject(err: Error): void;
}

class Md5Thread {
  private worker: Worker | null = null;
  private nextId = 1;
  /** Jobs begun and not yet digested or aborted. */
  private open = 0;
  private readonly waiting = new Map<number, Waiter>();
  private idleTimer: NodeJS.Timeout | null = null;

  private thread(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(THREAD_SOURCE, { eval: true, stdout: false, stderr: false });
    // Never what keeps the process alive.
    worker.unref();
    worker.on('message', (reply: Reply) => {
      const waiter = this.waiting.get(reply.id);
      if (!waiter) return;
      this.waiting.delete(reply.id);
      if (reply.md5) waiter.resolve(reply.md5);
      else waiter.reject(new Error(`MD5 of the stored part failed: ${reply.error ?? 'aborted'}`));
    });
    const lost = (err: Error) => {
      if (this.worker !== worker) return;
      this.worker = null;
      // Every job on it is lost; their writers fail (and leave no record), later ones get a new thread.
      for (const waiter of this.waiting.values()) waiter.reject(err);
      this.waiting.clear();
    };
    worker.on('error', lost);
    worker.on('exit', (code) => lost(new Error(`the MD5 thread exited (code ${code})`)));
    this.worker = worker;
    return worker;
  }

  private ask(worker: Worker, message: Request & { op: 'digest' | 'abort' }): Promise<string> {
    // A job's updates went to one thread; if that thread is gone they are lost with it.
    if (this.worker !== worker) return Promise.reject(new Error('the MD5 thread was lost during the part'));
    return new Promise<string>((resolve, reject) => {
      this.waiting.set(message.id, { resolve, reject });
      worker.postMessage(message);
    });
  }

  begin(): Md5Job {
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = null;
    this.open++;
    const id = this.nextId++;
    let worker: Worker;
    try {
      worker = this.thread();
    } catch (err) {
      this.open--;
      throw err;
    }
    let ended = false;
    /** Whether the thread was ever given a range of this job (and so may still read its descriptor). */
    let posted = false;
    const end = () => {
      if (ended) return;
      ended = true;
      if (--this.open === 0) this.idleTimer = setTimeout(() => this.stopIfIdle(), IDLE_MS).unref();
    };
    return {
      update: (fd, position, length) => {
        // Posted to a lost thread, the update goes nowhere and the digest then fails.
        if (length > 0 && this.worker === worker) {
          worker.postMessage({ op: 'update', id, fd, position, length } satisfies Request);
          posted = true;
        }
      },
      digest: async () => {
        try {
          return await this.ask(worker, { op: 'digest', id });
        } finally {
          end();
        }
      },
      abort: async () => {
        try {
          // Answered once the thread is past every update of this job, so the descriptor is free;
          // with none given, it is free now (a body cut off early is answered without a wait).
          if (posted) await this.ask(worker, { op: 'abort', id }).catch(() => undefined);
        } finally {
          end();
        }
      },
    };
  }

  private stopIfIdle(): void {
    this.idleTimer = null;
    if (this.open > 0 || !this.worker) return;
    const worker = this.worker;
    this.worker = null;
    void worker.terminate();
  }
}

/** One part's MD5, fed with ranges of a file as they are written. */
export interface Md5Job {
  /** Hash `length` bytes of `fd` from `position` next; call in the order the bytes come. */
  update(fd: number, position: number, length: number): void;
  /** Bare hex MD5 of every range given; the descriptor may be closed once it resolves. */
  digest(): Promise<string>;
  /** Drops the job; the descriptor may be closed once it resolves. */
  abort(): Promise<void>;
}

const shared = new Md5Thread();

export function beginMd5(): Md5Job {
  return shared.begin();
}
