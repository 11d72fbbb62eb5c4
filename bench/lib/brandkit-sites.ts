/**
 * The shared real-site set for brand_kit_extract (issue 27): `../shared/fixtures/brandkit-sites/`
 * beside the repository, each site served from its own loopback port (the pages name CDN sheets
 * as `/_cdn/<host>/<path>`, so every site needs its own root), and the score of a kit against
 * `truth.json`: name (case-insensitive), primary colour (CIEDE2000 within 5 of truth or its
 * `also`), heading and body family, the truth logo first among `logos`. A null truth is not scored.
 * Used by bench/brandkit.ts and test/tools-brand-kit-sites.test.ts.
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const FIXTURES = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'shared', 'fixtures');

/** One folder of sites with its truth.json: the set tuned on (issue 27) and the second batch (issue 35). */
export interface SiteSet {
  /** Short name used in tables and figure names. */
  name: string;
  dir: string;
}

export const SITE_SETS: SiteSet[] = [
  { name: 'first', dir: path.join(FIXTURES, 'brandkit-sites') },
  { name: 'second', dir: path.join(FIXTURES, 'brandkit-sites-second-batch') },
];
/** The first set: what issue 27 tuned on. */
export const SITES_DIR = SITE_SETS[0]!.dir;

/** Why the set cannot be used here, or null when it can. */
export function sitesMissing(dir = SITES_DIR): string | null {
  return fs.existsSync(path.join(dir, 'truth.json')) ? null : `the shared site set is not at ${dir} (a checkout without ../shared)`;
}

interface TruthColor {
  hex: string;
  also?: string[];
}
interface TruthLogo {
  kind: string;
  files?: string[];
  svg_contains?: string;
}
export interface SiteTruth {
  site: string;
  name: string | null;
  colors: { primary: TruthColor | null };
  fonts: { heading: { family: string } | null; body: { family: string } | null };
  logo: TruthLogo | null;
}

export function loadTruth(dir = SITES_DIR): SiteTruth[] {
  return (JSON.parse(fs.readFileSync(path.join(dir, 'truth.json'), 'utf8')) as { sites: SiteTruth[] }).sites;
}

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.css': 'text/css',
  '.js': 'text/javascript',
  '.json': 'application/json',
  '.webmanifest': 'application/manifest+json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.ico': 'image/x-icon',
  '.woff': 'font/woff',
  '.woff2': 'font/woff2',
};

/** One site's folder served at the root of a loopback port, read-only, nothing outside it. */
export class SiteServer {
  private server: http.Server | null = null;
  port = 0;
  constructor(readonly root: string) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async start(): Promise<this> {
    this.server = http.createServer((req, res) => {
      let p = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname);
      if (p.endsWith('/')) p += 'index.html';
      const file = path.resolve(this.root, `.${p}`);
      if (!file.startsWith(this.root + path.sep) || path.basename(file) === 'SOURCE.txt' || !fs.existsSync(file) || !fs.statSync(file).isFile()) {
        res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
        return;
      }
      const body = fs.readFileSync(file);
      res.writeHead(200, { 'content-type': TYPES[path.extname(file).toLowerCase()] ?? 'application/octet-stream', 'content-length': String(body.length) }).end(body);
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  async close(): Promise<void> {
    if (!this.server) return;
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server!.close(resolve));
  }
}

/** Every site of the set served, each on its own port. */
export async function serveSites(truth: SiteTruth[], dir = SITES_DIR): Promise<Map<string, SiteServer>> {
  const out = new Map<string, SiteServer>();
  for (const t of truth) out.set(t.site, await new SiteServer(path.join(dir, t.site)).start());
  return out;
}

function lab(hex: string): [number, number, number] {
  const n = (i: number) => parseInt(hex.slice(1 + i * 2, 3 + i * 2), 16) / 255;
  const lin = (c: number) => (c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4);
  const [r, g, b] = [lin(n(0)), lin(n(1)), lin(n(2))];
  const x = (0.4124564 * r + 0.3575761 * g + 0.1804375 * b) / 0.95047;
  const y = 0.2126729 * r + 0.7151522 * g + 0.072175 * b;
  const z = (0.0193339 * r + 0.119192 * g + 0.9503041 * b) / 1.08883;
  const f = (t: number) => (t > 216 / 24389 ? Math.cbrt(t) : (24389 / 27 * t + 16) / 116);
  return [116 * f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))];
}

/** CIEDE2000 colour difference (Sharma, Wu and Dalal's formulation) of two #rrggbb colours. */
export function deltaE2000(a: string, b: string): number {
  const [L1, a1, b1] = lab(a);
  const [L2, a2, b2] = lab(b);
  const rad = Math.PI / 180;
  const C1 = Math.hypot(a1, b1);
  const C2 = Math.hypot(a2, b2);
  const Cm = (C1 + C2) / 2;
  const G = 0.5 * (1 - Math.sqrt(Cm ** 7 / (Cm ** 7 + 25 ** 7)));
  const a1p = (1 + G) * a1;
  const a2p = (1 + G) * a2;
  const C1p = Math.hypot(a1p, b1);
  const C2p = Math.hypot(a2p, b2);
  const h = (bb: number, ap: number) => (bb === 0 && ap === 0 ? 0 : (Math.atan2(bb, ap) / rad + 360) % 360);
  const h1p = h(b1, a1p);
  const h2p = h(b2, a2p);
  const dLp = L2 - L1;
  const dCp = C2p - C1p;
  let dhp = 0;
  if (C1p * C2p !== 0) dhp = Math.abs(h2p - h1p) <= 180 ? h2p - h1p : h2p - h1p > 180 ? h2p - h1p - 360 : h2p - h1p + 360;
  const dHp = 2 * Math.sqrt(C1p * C2p) * Math.sin((dhp / 2) * rad);
  const Lm = (L1 + L2) / 2;
  const Cmp = (C1p + C2p) / 2;
  let hm = h1p + h2p;
  if (C1p * C2p !== 0) hm = Math.abs(h1p - h2p) <= 180 ? (h1p + h2p) / 2 : h1p + h2p < 360 ? (h1p + h2p + 360) / 2 : (h1p + h2p - 360) / 2;
  const T = 1 - 0.17 * Math.cos((hm - 30) * rad) + 0.24 * Math.cos(2 * hm * rad) + 0.32 * Math.cos((3 * hm + 6) * rad) - 0.2 * Math.cos((4 * hm - 63) * rad);
  const dTheta = 30 * Math.exp(-(((hm - 275) / 25) ** 2));
  const Rc = 2 * Math.sqrt(Cmp ** 7 / (Cmp ** 7 + 25 ** 7));
  const Sl = 1 + (0.015 * (Lm - 50) ** 2) / Math.sqrt(20 + (Lm - 50) ** 2);
  const Sc = 1 + 0.045 * Cmp;
  const Sh = 1 + 0.015 * Cmp * T;
  const Rt = -Math.sin(2 * dTheta * rad) * Rc;
  return Math.sqrt((dLp / Sl) ** 2 + (dCp / Sc) ** 2 + (dHp / Sh) ** 2 + Rt * (dCp / Sc) * (dHp / Sh));
}

/** What the scorer reads of a kit (a subset of BrandKit, so a kit from the API fits). */
export interface ScoredKit {
  name: string | null;
  roles: { primary: string | null };
  fonts: { family: string; roles: string[] }[];
  logos: { kind: string; url: string | null; svg: string | null }[];
}

export type Check = 'name' | 'primary' | 'heading' | 'body' | 'logo';
export const CHECKS: Check[] = ['name', 'primary', 'heading', 'body', 'logo'];

/** Per check: true/false when scored, null when the truth is null; plus what the kit said. */
export interface SiteScore {
  site: string;
  checks: Record<Check, boolean | null>;
  got: Record<Check, string | null>;
}

const familyOf = (kit: ScoredKit, role: string) => kit.fonts.find((f) => f.roles.includes(role))?.family ?? null;
const sameFamily = (a: string | null, b: string) => (a ?? '').trim().toLowerCase() === b.trim().toLowerCase();

function logoMatches(logo: ScoredKit['logos'][number] | undefined, truth: TruthLogo): boolean {
  if (!logo) return false;
  if (truth.svg_contains) return (logo.svg ?? '').includes(truth.svg_contains);
  if (!logo.url) return false;
  const p = decodeURIComponent(new URL(logo.url).pathname);
  return (truth.files ?? []).some((f) => p === `/${f}` || p.endsWith(`/${f}`));
}

export function scoreKit(kit: ScoredKit, t: SiteTruth): SiteScore {
  const primary = kit.roles.primary;
  const logo = kit.logos[0];
  const checks: Record<Check, boolean | null> = {
    name: t.name === null ? null : (kit.name ?? '').trim().toLowerCase() === t.name.toLowerCase(),
    primary: t.colors.primary === null ? null : primary !== null && [t.colors.primary.hex, ...(t.colors.primary.also ?? [])].some((h) => deltaE2000(primary, h.toLowerCase()) <= 5),
    heading: t.fonts.heading === null ? null : sameFamily(familyOf(kit, 'heading'), t.fonts.heading.family),
    body: t.fonts.body === null ? null : sameFamily(familyOf(kit, 'body'), t.fonts.body.family),
    logo: t.logo === null ? null : logoMatches(logo, t.logo),
  };
  const got: Record<Check, string | null> = {
    name: kit.name,
    primary,
    heading: familyOf(kit, 'heading'),
    body: familyOf(kit, 'body'),
    logo: logo ? (logo.url ? new URL(logo.url).pathname : `${logo.kind}`) : null,
  };
  return { site: t.site, checks, got };
}

export const passed = (s: SiteScore) => CHECKS.filter((c) => s.checks[c] === true).length;
export const scored = (s: SiteScore) => CHECKS.filter((c) => s.checks[c] !== null).length;

/** How many checks a truth file scores: its non-null name, primary colour, heading and body family, and logo. */
export function checksIn(truth: SiteTruth[]): number {
  return truth.reduce((n, t) => n + [t.name, t.colors.primary, t.fonts.heading, t.fonts.body, t.logo].filter((v) => v !== null).length, 0);
}
