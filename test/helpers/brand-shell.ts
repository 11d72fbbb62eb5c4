// An empty-shell web site for brand_kit_extract's render mode, served over a loopback socket: the
// HTML is a title "Loading…", a <div id="root"> and a script; the script fetches the brand's data
// and builds everything (title, header with the logo image, headings, button, links) and inserts
// its CSS through the CSSOM only, as CSS-in-JS libraries do in production. Plus a page that tries
// to reach a second, private address in every way a page can, and one whose script never yields.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import sharp from 'sharp';

export const SHELL_BRAND = {
  name: 'Nimbus Cloud',
  primary: '#6d28d9',
  background: '#f7f5ff',
  text: '#1f1b2e',
  accent: '#0e9f6e',
  heading: 'Fraunces',
  body: 'Work Sans',
};

const SHELL = `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Loading…</title><script src="/static/app.js" defer></script></head>
<body><div id="root"></div></body>
</html>`;

const APP = `
const style = document.createElement('style');
document.head.appendChild(style);
[
  "html { background: ${SHELL_BRAND.background}; }",
  "body { margin: 0; color: ${SHELL_BRAND.text}; font-family: '${SHELL_BRAND.body}', Arial, sans-serif; }",
  "h1, h2 { font-family: '${SHELL_BRAND.heading}', Georgia, serif; }",
  ".cta { background: ${SHELL_BRAND.primary}; color: #ffffff; border: 0; padding: 12px 20px; }",
  "main a { color: ${SHELL_BRAND.accent}; }",
  "header { display: flex; gap: 16px; padding: 8px; }",
].forEach((rule) => style.sheet.insertRule(rule, style.sheet.cssRules.length));
fetch('/api/brand.json').then((r) => r.json()).then((brand) => {
  document.title = brand.name;
  const root = document.getElementById('root');
  root.innerHTML = '<header><a href="/"><img class="logo" src="/img/logo.png" alt="' + brand.name + '" width="160" height="48"></a>'
    + '<nav><a href="/pricing">Pricing</a><a href="/docs">Docs</a></nav></header>'
    + '<main><h1>' + brand.tagline + '</h1><p>' + brand.pitch + ' <a href="/learn">Learn how</a>.</p>'
    + '<button class="cta">Start free</button><h2>Why ' + brand.name + '</h2><p>' + brand.pitch + '</p></main>';
});
`;

const BRAND_JSON = JSON.stringify({
  name: SHELL_BRAND.name,
  tagline: 'Storage that scales with you',
  pitch: 'Nimbus Cloud keeps your files close to your users, on every continent, with nothing to run yourself.',
});

/** A page whose script reaches for the address given in every way a page can. */
function probePage(target: string): string {
  const ws = target.replace(/^http/, 'ws');
  const host = new URL(target).host;
  return `<!doctype html>
<html><head><meta charset="utf-8"><title>Loading…</title>
<link rel="stylesheet" href="${target}/style.css">
<link rel="preconnect" href="${target}"><link rel="dns-prefetch" href="${target}">
<script src="/static/probe.js" defer></script></head>
<body><div id="root"></div><img src="${target}/pixel.png" alt=""><iframe src="${target}/frame"></iframe></body></html>
<script>
  fetch('${target}/data').catch(() => {});
  try { const s = new WebSocket('${ws}/socket'); s.onerror = () => {}; } catch {}
  try { navigator.sendBeacon('${target}/beacon', 'x'); } catch {}
  try { new EventSource('${target}/events'); } catch {}
  try { const w = window.open('${target}/popup'); } catch {}
  // UDP: a STUN server and a WebTransport (QUIC) endpoint on the same address and port.
  try {
    const pc = new RTCPeerConnection({ iceServers: [{ urls: 'stun:${host}' }] });
    pc.createDataChannel('x');
    pc.createOffer().then((o) => pc.setLocalDescription(o)).catch(() => {});
  } catch {}
  try { new WebTransport('https://${host}/wt').ready.catch(() => {}); } catch {}
</script>`;
}

const PROBE_JS = `
document.title = 'Private Probe';
document.getElementById('root').innerHTML = '<h1>Private Probe</h1><p>This page asked for a private address and rendered all the same.</p>';
`;

export class ShellSite {
  private server: http.Server | null = null;
  port = 0;
  /** Where the probe page reaches (set before start). */
  probeTarget = 'http://127.0.0.2:9';
  private logo: Buffer | null = null;

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async start(): Promise<this> {
    this.logo = await sharp({ create: { width: 160, height: 48, channels: 3, background: SHELL_BRAND.primary } }).png().toBuffer();
    this.server = http.createServer((req, res) => this.handle(req, res));
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const send = (type: string, body: string | Buffer) => {
      res.writeHead(200, { 'content-type': type });
      res.end(body);
    };
    switch (req.url) {
      case '/':
        return send('text/html; charset=utf-8', SHELL);
      case '/static/app.js':
        return send('text/javascript', APP);
      case '/api/brand.json':
        return send('application/json', BRAND_JSON);
      case '/img/logo.png':
        return send('image/png', this.logo!);
      case '/probe':
        return send('text/html; charset=utf-8', probePage(this.probeTarget));
      case '/static/probe.js':
        return send('text/javascript', PROBE_JS);
      case '/busy':
        // A script that never yields: the page never gets past parsing.
        return send('text/html; charset=utf-8', '<!doctype html><html><head><title>Busy Loop Co</title></head><body><h1>Busy Loop Co</h1><script>for (;;) {}</script><p>never reached</p></body></html>');
      default:
        res.writeHead(404, { 'content-type': 'text/plain' });
        res.end('not found');
    }
  }

  async close(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}
