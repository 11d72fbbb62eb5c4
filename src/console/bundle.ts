// The console's browser code (src/console/web) bundled by esbuild: written to disk by the build
// (scripts/build.js, beside the compiled server in dist/console/assets) or, when the server runs
// from the TypeScript sources (tests, `TOOLRUN_FROM_SOURCE=1`, a stale build), made in memory on
// the first console request. One set of options serves both, so what tests load is what ships.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';

export const ASSET_PREFIX = '/console/assets/';
const MANIFEST = 'manifest.json';

export interface Asset {
  body: Buffer;
  /** The same bytes gzipped once, for clients that accept it. */
  gzip: Buffer;
  contentType: string;
  /** Hashed names never change content, so they may be cached for good. */
  immutable: boolean;
}

export interface ConsoleAssets {
  /** Keyed by the name after /console/assets/. */
  files: Map<string, Asset>;
  /** The page every console URL answers: it loads the bundle's script and stylesheet. */
  indexHtml: Buffer;
  indexHtmlGzip: Buffer;
}

interface Manifest {
  script: string;
  stylesheet: string | null;
}

const CONTENT_TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
};

/** The sources' entry point, next to this file in src/ (absent in dist/, which ships the built files). */
export function sourceEntry(): string {
  return path.join(path.dirname(fileURLToPath(import.meta.url)), 'web', 'main.tsx');
}

/** Where the build writes the bundle: next to the compiled server module. */
export function prebuiltDir(): string {
  return path.join(path.dirname(fileURLToPath(import.meta.url)), 'assets');
}

function indexHtml(m: Manifest): string {
  const css = m.stylesheet ? `<link rel="stylesheet" href="${ASSET_PREFIX}${m.stylesheet}">` : '';
  // No inline script or style anywhere: the content security policy allows only files from here.
  return [
    '<!doctype html>',
    '<html lang="en">',
    '<head>',
    '<meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    '<title>Toolrun console</title>',
    `<link rel="icon" href="${ASSET_PREFIX}icon.svg" type="image/svg+xml">`,
    css,
    `<script type="module" src="${ASSET_PREFIX}${m.script}"></script>`,
    '</head>',
    '<body>',
    '<div id="app"></div>',
    '<noscript>The Toolrun console needs JavaScript.</noscript>',
    '</body>',
    '</html>',
    '',
  ].join('\n');
}

const ICON = '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><rect width="16" height="16" rx="3" fill="#1d4ed8"/><path d="M4 4h8v2H9v6H7V6H4z" fill="#fff"/></svg>\n';

function asset(name: string, body: Buffer, immutable: boolean): Asset {
  const contentType = CONTENT_TYPES[path.extname(name)] ?? 'application/octet-stream';
  return { body, gzip: gzipSync(body, { level: 9 }), contentType, immutable };
}

function assemble(outputs: Map<string, Buffer>, manifest: Manifest): ConsoleAssets {
  const files = new Map<string, Asset>();
  for (const [name, body] of outputs) files.set(name, asset(name, body, true));
  files.set('icon.svg', asset('icon.svg', Buffer.from(ICON), false));
  const html = Buffer.from(indexHtml(manifest));
  return { files, indexHtml: html, indexHtmlGzip: gzipSync(html, { level: 9 }) };
}

/** Runs esbuild over the entry; the outputs by file name (content-hashed), not written anywhere. */
async function runEsbuild(entry: string): Promise<{ outputs: Map<string, Buffer>; manifest: Manifest }> {
  // Loaded here, not at import: a server running the built files never needs the bundler.
  const esbuild = await import('esbuild');
  const result = await esbuild.build({
    entryPoints: [entry],
    bundle: true,
    write: false,
    outdir: '/console-assets',
    entryNames: '[name]-[hash]',
    format: 'esm',
    platform: 'browser',
    target: ['chrome111', 'firefox111', 'safari16.4'],
    minify: true,
    legalComments: 'none',
    jsx: 'automatic',
    jsxImportSource: 'preact',
    tsconfig: path.join(path.dirname(entry), 'tsconfig.json'),
    define: { 'process.env.NODE_ENV': '"production"' },
    logLevel: 'silent',
  });
  const outputs = new Map<string, Buffer>();
  let script = '';
  let stylesheet: string | null = null;
  for (const file of result.outputFiles) {
    const name = path.basename(file.path);
    outputs.set(name, Buffer.from(file.contents));
    if (name.endsWith('.js')) script = name;
    if (name.endsWith('.css')) stylesheet = name;
  }
  if (!script) throw new Error('esbuild produced no script for the console');
  return { outputs, manifest: { script, stylesheet } };
}

/** Bundles the sources in memory (the server running from src/). */
export async function bundleInMemory(entry = sourceEntry()): Promise<ConsoleAssets> {
  const { outputs, manifest } = await runEsbuild(entry);
  return assemble(outputs, manifest);
}

/** Bundles the sources into dir with a manifest (the build step); returns the files written. */
export async function writeBundle(entry: string, dir: string): Promise<string[]> {
  const { outputs, manifest } = await runEsbuild(entry);
  fs.mkdirSync(dir, { recursive: true });
  for (const [name, body] of outputs) fs.writeFileSync(path.join(dir, name), body);
  fs.writeFileSync(path.join(dir, MANIFEST), JSON.stringify(manifest) + '\n');
  return [...outputs.keys(), MANIFEST];
}

/** Reads a bundle the build wrote; null when dir holds none. */
export function readBundle(dir: string): ConsoleAssets | null {
  let manifest: Manifest;
  try {
    manifest = JSON.parse(fs.readFileSync(path.join(dir, MANIFEST), 'utf8')) as Manifest;
  } catch {
    return null;
  }
  const outputs = new Map<string, Buffer>();
  for (const name of fs.readdirSync(dir)) {
    if (name !== MANIFEST) outputs.set(name, fs.readFileSync(path.join(dir, name)));
  }
  return assemble(outputs, manifest);
}
