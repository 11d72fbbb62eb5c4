import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type { LumaOutput } from './luma-net.js';
import { THREAD_SOURCE } from './thread.js';

/** What the thread is asked for: one strip of one model's output (thread.ts `strip`). */
export interface StripRequest {
  modelPath: string;
  threads: number;
  luma: SharedArrayBuffer;
  width: number;
  height: number;
  y0: number;
  y1: number;
  output: LumaOutput;
  tile: number;
  halo: number;
  scale: number;
}

interface Waiter {
  resolve(data: Float32Array): void;
  reject(err: Error): void;
}

/**
 * The worker thread that runs upscaling networks (thread.ts): any number of models, one job at a
 * time, the last one loaded. A process's shipped networks share one (sharedLumaNet,
 * sharedVideoNet), so a second model costs a swap of sessions (6-8 ms), not a second thread and a
 * second strip of activations kept (docs/decisions.md, "One thread for a process's networks").
 * Started on the first request; idle, it never keeps the process alive.
 */
export class NetThread {
  private worker: Worker | null = null;
  private nextId = 1;
  private readonly waiting = new Map<number, Waiter>();

  private thread(): Worker {
    if (this.worker) return this.worker;
    const ortPath = createRequire(import.meta.url).resolve('onnxruntime-node');
    const worker = new Worker(THREAD_SOURCE, { eval: true, workerData: { ortPath } });
    worker.on('message', (reply: { id: number; data?: Float32Array; error?: string }) => {
      const waiter = this.waiting.get(reply.id);
      if (!waiter) return;
      this.waiting.delete(reply.id);
      if (this.waiting.size === 0) worker.unref();
      if (reply.data) waiter.resolve(reply.data);
      else waiter.reject(new Error(`the upscaler's network failed: ${reply.error ?? 'no answer'}`));
    });
    const lost = (err: Error) => {
      if (this.worker !== worker) return;
      this.worker = null;
      for (const waiter of this.waiting.values()) waiter.reject(err);
      this.waiting.clear();
    };
    worker.on('error', lost);
    worker.on('exit', (code) => lost(new Error(`the upscaler's thread exited (code ${code})`)));
    // The session stays loaded for the next run; while a request waits, the thread is ref'd (ask()).
    // After the listeners: adding one refs the thread again.
    worker.unref();
    this.worker = worker;
    return worker;
  }

  private ask(message: object): Promise<Float32Array> {
    const worker = this.thread();
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      if (this.waiting.size === 0) worker.ref();
      this.waiting.set(id, { resolve, reject });
      worker.postMessage({ ...message, id });
    });
  }

  strip(request: StripRequest): Promise<Float32Array> {
    return this.ask(request);
  }

  /** Frees this model's session if it is the one loaded (after any strip already asked of it); a later strip loads it again. */
  async unload(modelPath: string): Promise<void> {
    if (this.worker) await this.ask({ unload: true, modelPath });
  }

  /** Stops the thread and every session in it; a later request starts a new one. */
  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = null;
    if (worker) await worker.terminate();
  }
}
