// What the containers reach on the host during the deploy test, on the address of the containers'
// network bridge: an HTTPS webhook receiver, with a certificate from a CA made for the run (the
// containers trust it through NODE_EXTRA_CA_CERTS, as an operator trusts a private CA), and a web
// page that only a browser sees as it is meant (its title and colours are set by a script).
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import selfsigned from 'selfsigned';

export interface RunCa {
  dir: string;
  /** The CA certificate, mounted into the containers. */
  caFile: string;
  cert: string;
  key: string;
}

/** A CA made for this run, in a fresh directory the containers' user can read. */
export async function makeCa(): Promise<RunCa> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'toolrun-deploy-ca-'));
  fs.chmodSync(dir, 0o755);
  const pems = await selfsigned.generate([{ name: 'commonName', value: 'toolrun deploy test CA' }], {
    keySize: 2048,
    algorithm: 'sha256',
    extensions: [
      { name: 'basicConstraints', cA: true },
      { name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true },
    ],
  });
  const caFile = path.join(dir, 'ca.pem');
  // Read by the containers' user (uid 10001) through a bind mount.
  fs.writeFileSync(caFile, pems.cert, { mode: 0o644 });
  return { dir, caFile, cert: pems.cert, key: pems.private };
}

/** A server certificate for one address, signed by the run's CA. */
async function serverCertificate(ca: RunCa, ip: string): Promise<{ cert: string; key: string }> {
  const pems = await selfsigned.generate([{ name: 'commonName', value: ip }], {
    keySize: 2048,
    algorithm: 'sha256',
    ca: { cert: ca.cert, key: ca.key },
    extensions: [
      { name: 'basicConstraints', cA: false },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true },
      { name: 'extKeyUsage', serverAuth: true },
      { name: 'subjectAltName', altNames: [{ type: 7, ip }] },
    ],
  });
  return { cert: pems.cert, key: pems.private };
}

export interface Delivery {
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

/** An HTTPS server on `host` that records every request and answers 204. */
export class WebhookReceiver {
  readonly deliveries: Delivery[] = [];
  private server: https.Server | null = null;
  private port = 0;

  constructor(
    private readonly host: string,
    private readonly ca: RunCa,
  ) {}

  async start(): Promise<this> {
    this.server = https.createServer(await serverCertificate(this.ca, this.host), (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        this.deliveries.push({ headers: req.headers, body: Buffer.concat(chunks) });
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve, reject) => {
      this.server!.once('error', reject);
      this.server!.listen(0, this.host, resolve);
    });
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  get url(): string {
    return `https://${this.host}:${this.port}/hook`;
  }

  async close(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

export const RENDERED_BRAND = { name: 'Rendered Only Co', primary: '#c2185b' };

const SHELL = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Loading</title><script src="/app.js" defer></script></head>
<body><div id="root"></div></body></html>`;
const APP = `
document.title = ${JSON.stringify(RENDERED_BRAND.name)};
const style = document.createElement('style');
document.head.appendChild(style);
style.sheet.insertRule('.cta { background: ${RENDERED_BRAND.primary}; color: #ffffff; padding: 12px; }', 0);
style.sheet.insertRule('body { color: #202020; background: #ffffff; }', 1);
document.getElementById('root').innerHTML = '<header><h1>${RENDERED_BRAND.name}</h1></header><main><p>Made by a script.</p><button class="cta">Start</button><a class="cta" href="/go">Go</a></main>';
`;

/** A page whose name and colours exist only once its script has run. */
export class ShellPage {
  private server: http.Server | null = null;
  private port = 0;

  constructor(private readonly host: string) {}

  async start(): Promise<this> {
    this.server = http.createServer((req, res) => {
      const [type, body] = req.url === '/' ? ['text/html; charset=utf-8', SHELL] : req.url === '/app.js' ? ['text/javascript', APP] : [null, 'not found'];
      res.writeHead(type ? 200 : 404, { 'content-type': type ?? 'text/plain' }).end(body);
    });
    await new Promise<void>((resolve, reject) => {
      this.server!.once('error', reject);
      this.server!.listen(0, this.host, resolve);
    });
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  get url(): string {
    return `http://${this.host}:${this.port}/`;
  }

  async close(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}
