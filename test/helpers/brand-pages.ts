// Small pages written for the brand_kit_extract class tests (test/tools-brand-kit-*.test.ts),
// served over a loopback socket, and the runner called on them directly as the worker calls it.
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { resolveMediaBinaries } from '../../src/media/binaries.js';
import { createBrandKitRunner } from '../../src/tools/brand-kit/run.js';
import type { BrandKit } from '../../src/tools/brand-kit/schema.js';
import type { RunContext } from '../../src/tools/manifest.js';
import { assertValidKit } from './brand-kit.js';

const TYPES: Record<string, string> = { '.css': 'text/css', '.svg': 'image/svg+xml', '.png': 'image/png', '.json': 'application/json' };

/** Paths to bodies; a path without an extension is served as HTML. */
export class PageServer {
  private server: http.Server | null = null;
  private port = 0;
  private readonly files = new Map<string, string | Buffer>();

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  set(p: string, body: string | Buffer): this {
    this.files.set(p, body);
    return this;
  }

  async start(): Promise<this> {
    this.server = http.createServer((req, res) => {
      const p = new URL(req.url ?? '/', 'http://x').pathname;
      const body = this.files.get(p);
      if (body === undefined) {
        res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
        return;
      }
      res.writeHead(200, { 'content-type': TYPES[path.extname(p)] ?? 'text/html; charset=utf-8' }).end(body);
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  async close(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise((resolve) => (this.server ? this.server.close(resolve) : resolve(undefined)));
  }
}

const workDirs: string[] = [];

export function removeWorkDirs(): void {
  for (const d of workDirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
}

/** The kit of one page, from the runner called directly (loopback allowed); with a browser, in the render mode. */
export async function kitOf(url: string, opts: { browserPath?: string } = {}): Promise<BrandKit> {
  const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'toolrun-bk-class-'));
  workDirs.push(workDir);
  const ctx: RunContext = {
    runId: '00000000-0000-4000-8000-000000000001',
    teamId: '00000000-0000-4000-8000-000000000002',
    values: { url },
    files: {},
    workDir,
    signal: new AbortController().signal,
    progress: () => undefined,
    media: resolveMediaBinaries(),
    logger: pino({ level: 'silent' }),
    outbound: { allowPrivate: true },
    browserPath: opts.browserPath ?? null,
    limits: { ffmpegThreads: 2, maxOutputBytes: 4 * 1024 ** 3 },
  };
  const outputs = await createBrandKitRunner()(ctx);
  const data = outputs[0]?.data;
  assertValidKit(data);
  return data;
}

export const fontFor = (kit: BrandKit, role: 'heading' | 'body') => kit.fonts.find((f) => f.roles.includes(role))?.family ?? null;

