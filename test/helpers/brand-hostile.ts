// Pages written against brand_kit_extract's render mode (issue 34), served over a loopback
// socket: each one tries to make the service hold, wait on or lose memory it does not control.
//  /bigtext   one 40 M-character text node after a normal header and headings (laid out, it
//             takes the browser about 3 GB: over the render's memory bound)
//  /bighidden the same text node in a hidden element (about 100 MB in the browser)
//  /globals   redefines the globals a reading script in the page's own world would use
//             (String.prototype.match, Array.from, JSON.stringify, getComputedStyle, ...) so
//             that each answer is megabytes; its real fonts are Fraunces and Work Sans
//  /console   once loaded, logs a 100 M-character string every 50 ms
//  /memory    commits ten 256 MB typed arrays (outside the V8 heap)
//  /plain     a small ordinary page (the same brand as /globals)
//  /busy      a script that never yields
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export const HOSTILE_BRAND = { name: 'Hostile Co', heading: 'Fraunces', body: 'Work Sans', primary: '#6d28d9' };

const HEAD = `<meta charset="utf-8"><title>${HOSTILE_BRAND.name}</title>
<style>
  body { font-family: '${HOSTILE_BRAND.body}', Arial, sans-serif; color: #1f1b2e; background: #ffffff; }
  h1, h2 { font-family: '${HOSTILE_BRAND.heading}', Georgia, serif; }
  .cta { background: ${HOSTILE_BRAND.primary}; color: #ffffff; }
</style>`;

const BODY = `<header><h1>${HOSTILE_BRAND.name}</h1></header><main><h2>What we do</h2><p>Text.</p><button class="cta">Go</button></main>`;

const page = (script: string) => `<!doctype html><html><head>${HEAD}</head><body>${BODY}<script>${script}</script></body></html>`;

const BIG_TEXT = `document.body.appendChild(document.createTextNode('x'.repeat(40 * 1000 * 1000)));`;
// The same text out of layout: the browser itself needs little for it, so the render gets to read it.
const BIG_HIDDEN = `const d = document.createElement('div'); d.hidden = true; d.appendChild(document.createTextNode('x'.repeat(40 * 1000 * 1000))); document.body.appendChild(d);`;

const GLOBALS = `
const huge = 'Evil Font '.repeat(600 * 1000);
String.prototype.match = function () { return [huge, huge, huge]; };
String.prototype.trim = function () { return huge; };
String.prototype.replace = function () { return huge; };
Array.from = function () { return [huge]; };
Array.prototype.join = function () { return huge; };
Array.prototype.map = function () { return [huge, huge]; };
Array.prototype.filter = function () { return [huge, huge]; };
JSON.stringify = function () { return huge; };
const real = window.getComputedStyle;
window.getComputedStyle = function (el) {
  return new Proxy(real(el), { get: (t, k) => (k === 'fontFamily' ? huge : typeof t[k] === 'function' ? t[k].bind(t) : t[k]) });
};
Object.defineProperty(CSSStyleDeclaration.prototype, 'fontFamily', { get() { return huge; } });
`;

const CONSOLE = `
const line = 'c'.repeat(100 * 1000 * 1000);
const flood = () => { console.log(line); setTimeout(flood, 50); };
addEventListener('DOMContentLoaded', () => setTimeout(flood, 0));
`;

const MEMORY = `
window.kept = [];
for (let i = 0; i < 10; i++) { const a = new Uint8Array(256 * 1024 * 1024); a.fill(i + 1); window.kept.push(a); }
`;

const PAGES: Record<string, string> = {
  '/plain': page(''),
  '/bigtext': page(BIG_TEXT),
  '/bighidden': page(BIG_HIDDEN),
  '/globals': page(GLOBALS),
  '/console': page(CONSOLE),
  '/memory': page(MEMORY),
  '/busy': page('for (;;) {}'),
};

export class HostileSite {
  private server: http.Server | null = null;
  port = 0;
  /** Paths asked for, in order. */
  readonly served: string[] = [];

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async start(): Promise<this> {
    this.server = http.createServer((req, res) => {
      const p = new URL(req.url ?? '/', 'http://x').pathname;
      this.served.push(p);
      const body = PAGES[p];
      if (body === undefined) {
        res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
        return;
      }
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(body);
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  async close(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}
