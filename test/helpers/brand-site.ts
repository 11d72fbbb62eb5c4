// A small brand web site served over a loopback socket, written for the brand_kit_extract tests:
// a page with a title, description, theme-color, a Google Fonts link, a linked stylesheet that
// @imports another, inline styles, an inline SVG logo in the header, an <img class="logo">, an
// apple-touch-icon, a favicon that is not a decodable image, and an og:image. Plus pages that
// break the bounds: one over 2 MB, one whose stylesheet never answers, a redirect loop, one
// nested 300,000 elements deep.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import sharp from 'sharp';

export const GOOGLE_FONTS = 'https://fonts.googleapis.com/css2?family=Playfair+Display:wght@700&family=Inter:wght@400;600&display=swap';

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Home | Acme Rockets</title>
<meta name="description" content="Acme Rockets builds
   reusable rockets for small satellites.">
<meta name="theme-color" content="#1A73E8">
<meta property="og:image" content="/og.jpg">
<link rel="preconnect" href="https://fonts.gstatic.com">
<link rel="stylesheet" href="${GOOGLE_FONTS.replace(/&/g, '&amp;')}">
<link rel="stylesheet" href="/css/main.css">
<link rel="apple-touch-icon" sizes="180x180" href="/apple-touch-icon.png">
<link rel="icon" href="/favicon.ico">
<style>
  .hero { background: linear-gradient(90deg, var(--brand-primary), var(--brand-secondary)); }
  .badge { color: rgba(0, 0, 0, 0.2); }
</style>
</head>
<body>
<header class="site-header">
  <a href="/" aria-label="Acme Rockets home"><svg width="120" height="40" viewBox="0 0 120 40"><title>Acme Rockets</title><rect width="120" height="40" fill="#1a73e8"/><circle cx="20" cy="20" r="12" fill="#ff5722"/></svg></a>
  <nav><a href="/about">About</a></nav>
</header>
<main>
  <h1>Fly higher</h1>
  <img class="logo" src="/img/logo.png" alt="Acme Rockets">
  <p style="color: #2F4F4F">Small satellites, big ideas.</p>
  <a class="btn" href="/buy">Buy a launch</a>
  <img src="/img/photo.png" alt="A rocket on the pad">
</main>
</body>
</html>`;

const MAIN_CSS = `@import url("extra.css");
:root {
  --brand-primary: #1a73e8;
  --brand-secondary: rgb(255, 87, 34);
  --brand-accent: hsl(160, 100%, 37%);
}
@font-face {
  font-family: "Acme Sans";
  src: url("/fonts/acme-sans.woff2") format("woff2"), url(/fonts/acme-sans.woff) format("woff");
  font-weight: 400;
}
html, body { background-color: #FFFDF7; color: darkslategray; font-family: "Acme Sans", Inter, system-ui, sans-serif; }
h1, h2, h3 { font-family: 'Playfair Display', Georgia, serif; color: var(--brand-primary); }
a { color: var(--brand-accent); }
.btn { background-color: var(--brand-primary); color: white; border: 1px solid #1a73e8; }
.btn:hover { background-color: #1557b0; }
@media (prefers-color-scheme: dark) { body { background-color: #000000; color: #eeeeee; } }
@media print { body { color: black; } }
`;

const EXTRA_CSS = `.footer { background: #ff5722; color: white; }
.card { border-color: #e0e0e0; }
`;

const solid = (width: number, height: number, hex: string) =>
  sharp({ create: { width, height, channels: 3, background: hex } });

export class BrandSite {
  readonly requests: string[] = [];
  private server: http.Server | null = null;
  private readonly hung: http.ServerResponse[] = [];
  private files = new Map<string, { type: string; body: Buffer }>();
  port = 0;

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async start(): Promise<this> {
    const add = (p: string, type: string, body: Buffer | string) => this.files.set(p, { type, body: Buffer.from(body) });
    add('/', 'text/html; charset=utf-8', PAGE);
    add('/css/main.css', 'text/css', MAIN_CSS);
    add('/css/extra.css', 'text/css', EXTRA_CSS);
    add('/img/logo.png', 'image/png', await solid(200, 60, '#1a73e8').png().toBuffer());
    add('/img/photo.png', 'image/png', await solid(64, 64, '#808080').png().toBuffer());
    add('/apple-touch-icon.png', 'image/png', await solid(180, 180, '#ff5722').png().toBuffer());
    add('/favicon.ico', 'image/x-icon', Buffer.from('this is not an icon'));
    add('/og.jpg', 'image/jpeg', await solid(300, 157, '#00bd7e').jpeg().toBuffer());
    // Over the 2 MB page limit by one byte.
    add('/big', 'text/html', Buffer.concat([Buffer.from('<!doctype html><title>Big</title>'), Buffer.alloc(2 * 1024 * 1024 - 33 + 1, 0x20)]));
    add('/stuck', 'text/html', '<!doctype html><title>Stuck | Slow Co</title><link rel="stylesheet" href="/never.css"><link rel="stylesheet" href="/css/main.css"><header><svg width="10" height="10"><rect width="10" height="10" fill="#123456"/></svg></header>');
    // 300,000 unclosed <div>s: minutes of tree building if the depth were not capped.
    add('/deep', 'text/html', `<!doctype html><title>Deep Co</title><header><img class="logo" src="/img/logo.png"></header>${'<div>'.repeat(300_000)}`);
    add('/data.json', 'application/json', '{"not":"html"}');

    this.server = http.createServer((req, res) => {
      const p = new URL(req.url ?? '/', 'http://x').pathname;
      this.requests.push(p);
      if (p === '/never.css') {
        this.hung.push(res); // never answers
        return;
      }
      if (p === '/loop') {
        res.writeHead(302, { location: '/loop' }).end();
        return;
      }
      const f = this.files.get(p);
      if (!f) {
        res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
        return;
      }
      res.writeHead(200, { 'content-type': f.type, 'content-length': String(f.body.length) }).end(f.body);
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  async close(): Promise<void> {
    for (const r of this.hung) r.destroy();
    if (!this.server) return;
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server!.close(resolve));
  }
}
