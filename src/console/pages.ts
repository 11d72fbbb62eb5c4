// GET /console and every page under it answer one index.html (the browser code routes); the
// bundle it loads is served under /console/assets/. /console/api/ belongs to the JSON routes.
import fs from 'node:fs';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { StorageConfig } from '../config/config.js';
import { ApiError } from '../core/errors.js';
import { ASSET_PREFIX, bundleInMemory, prebuiltDir, readBundle, sourceEntry, type Asset, type ConsoleAssets } from './bundle.js';

export const CONSOLE_PREFIX = '/console';
const API_PREFIX = '/console/api/';

/**
 * Everything the page loads comes from this origin, and nothing inline runs: a script injected
 * through some field would need an inline script or another origin, and both are refused. The
 * one other origin allowed is the storage's (`storageOrigin`, S3's for signed URLs): previews
 * (images, videos), part uploads and brand-kit JSON are fetched from there, never scripts.
 */
export function consoleCsp(storageOrigin: string | null = null): string {
  const files = storageOrigin ? `'self' ${storageOrigin}` : "'self'";
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    `img-src ${files}`,
    `media-src ${files}`,
    `connect-src ${files}`,
    "font-src 'self'",
    "manifest-src 'self'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ');
}

/** The origin signed URLs of this storage point at, when not the service's own. */
export function storageOrigin(storage: StorageConfig): string | null {
  if (storage.kind === 'local') return null;
  if (storage.endpoint) {
    const u = new URL(storage.endpoint);
    return storage.forcePathStyle ? u.origin : `${u.protocol}//${storage.bucket}.${u.host}`;
  }
  return storage.forcePathStyle ? `https://s3.${storage.region}.amazonaws.com` : `https://${storage.bucket}.s3.${storage.region}.amazonaws.com`;
}

function securityHeaders(csp: string): Record<string, string> {
  return {
    'Content-Security-Policy': csp,
    'X-Content-Type-Options': 'nosniff',
    'Referrer-Policy': 'no-referrer',
    'X-Frame-Options': 'DENY',
    'Cross-Origin-Opener-Policy': 'same-origin',
    'Cross-Origin-Resource-Policy': 'same-origin',
  };
}

export interface ConsolePagesDeps {
  /** The 404 message as the server words it for any unknown path. */
  notFoundMessage: (method: string, url: string) => string;
  /** Where a built bundle is looked for; defaults to next to this module (dist/console/assets). */
  prebuilt?: string;
  /** The origin of the storage's signed URLs when it is not this service (S3). */
  storageOrigin?: string | null;
}

function acceptsGzip(request: FastifyRequest): boolean {
  const accept = request.headers['accept-encoding'];
  return typeof accept === 'string' && /\bgzip\b/i.test(accept) && !/\bgzip;\s*q=0(\.0*)?\b/i.test(accept);
}

function send(request: FastifyRequest, reply: FastifyReply, headers: Record<string, string>, body: Buffer, gzip: Buffer, contentType: string, cacheControl: string) {
  reply.header('Content-Type', contentType);
  reply.header('Cache-Control', cacheControl);
  reply.header('Vary', 'Accept-Encoding');
  for (const [name, value] of Object.entries(headers)) reply.header(name, value);
  if (acceptsGzip(request)) {
    reply.header('Content-Encoding', 'gzip');
    return reply.send(gzip);
  }
  return reply.send(body);
}

/**
 * The console's pages and assets. The bundle comes from the build (dist/console/assets) when
 * there is one; otherwise it is made from the sources on the first console request, once per app.
 */
export function consolePages(deps: ConsolePagesDeps): FastifyPluginAsync {
  return async (app) => {
    const headers = securityHeaders(consoleCsp(deps.storageOrigin ?? null));
    const dir = deps.prebuilt ?? prebuiltDir();
    const entry = sourceEntry();
    const prebuilt = readBundle(dir);
    if (!prebuilt && !fs.existsSync(entry)) {
      throw new Error(`the console bundle is missing: neither ${dir}/manifest.json nor the sources at ${entry}; run npm run build`);
    }
    let loading: Promise<ConsoleAssets> | null = prebuilt ? Promise.resolve(prebuilt) : null;
    const assets = (): Promise<ConsoleAssets> => {
      loading ??= bundleInMemory(entry).catch((err: unknown) => {
        // A failed bundle is retried on the next request rather than remembered.
        loading = null;
        throw err;
      });
      return loading;
    };

    const notFound = (request: FastifyRequest): ApiError =>
      new ApiError('not_found', deps.notFoundMessage(request.method, request.url));

    const page = async (request: FastifyRequest, reply: FastifyReply) => {
      const path = request.url.split('?')[0] ?? request.url;
      // The JSON routes answer their own paths; one that none of them has is a plain 404 here.
      if (path.startsWith(API_PREFIX) || path.startsWith(ASSET_PREFIX)) throw notFound(request);
      const a = await assets();
      return send(request, reply, headers, a.indexHtml, a.indexHtmlGzip, 'text/html; charset=utf-8', 'no-cache');
    };

    app.get(CONSOLE_PREFIX, { schema: { hide: true } }, page);
    app.get(`${CONSOLE_PREFIX}/*`, { schema: { hide: true } }, page);
    // Other methods on a path no JSON route has: 404 as for GET (without this, the GET wildcard
    // above made them 405 "method not allowed" for paths that exist under no method at all).
    app.route({
      method: ['POST', 'PUT', 'PATCH', 'DELETE'],
      url: `${API_PREFIX}*`,
      schema: { hide: true },
      handler: async (request) => {
        throw notFound(request);
      },
    });
    app.get<{ Params: { '*': string } }>(`${ASSET_PREFIX}*`, { schema: { hide: true } }, async (request, reply) => {
      const a = await assets();
      const file: Asset | undefined = a.files.get(request.params['*']);
      if (!file) throw notFound(request);
      const cache = file.immutable ? 'public, max-age=31536000, immutable' : 'public, max-age=3600';
      return send(request, reply, headers, file.body, file.gzip, file.contentType, cache);
    });
  };
}
