import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyPluginAsync } from 'fastify';
import { ApiError } from '../core/errors.js';
import { withSamplesInDescriptions } from './samples/index.js';

export const DOCS_PREFIX = '/docs';

/** The wordmark in the reference's top bar, in place of the renderer's own logo. */
const LOGO_SVG = `<svg xmlns="http://www.w3.org/2000/svg" width="150" height="32" viewBox="0 0 150 32" role="img" aria-label="Toolrun">
<rect x="1" y="4" width="24" height="24" rx="6" fill="#f2f2f2"/><path d="M8 11h10M13 11v12" stroke="#1b1b1b" stroke-width="3" stroke-linecap="round"/>
<text x="33" y="23" font-family="system-ui, -apple-system, Segoe UI, sans-serif" font-size="19" font-weight="600" fill="#f2f2f2">Toolrun API</text></svg>`;

/**
 * The top bar shows the wordmark only: the renderer's box with the document's URL (/docs/json)
 * invites exploring other documents, which this reference never serves.
 */
const DOCS_CSS = `.swagger-ui .topbar .download-url-wrapper { display: none; }
.swagger-ui .topbar { background-color: #1b1b1b; }`;

/**
 * The renderer's files are served from the package itself: the machines that run the service need
 * no internet, so nothing may come from a CDN.
 */
function staticAssetNames(): Set<string> {
  const require = createRequire(import.meta.url);
  const dir = path.join(path.dirname(require.resolve('@fastify/swagger-ui/package.json')), 'static');
  return new Set(fs.readdirSync(dir));
}

/**
 * GET /docs: an interactive API reference (Swagger UI, served locally) of the very document
 * GET /v1/openapi.json serves, with a request and response example and a curl, TypeScript and
 * Python sample for every operation. Needs no key; its routes are hidden from the document.
 */
export function docsRoutes(deps: {
  openapi: () => Record<string, unknown>;
  publicBaseUrl: string;
  /** The message of a 404, as the server words it for any unknown path. */
  notFoundMessage: (method: string, url: string) => string;
}): FastifyPluginAsync {
  return async (app) => {
    const assets = staticAssetNames();
    let rendered: Record<string, unknown> | null = null;
    const staticPrefix = `${DOCS_PREFIX}/static/`;
    // The static files sit behind a wildcard route, so a missing one would reach the not-found
    // handler as a known path (405). Answer it here as what it is: 404 not_found, in the envelope.
    app.addHook('onRequest', async (request) => {
      const url = request.url.split('?')[0] ?? request.url;
      if (!url.startsWith(staticPrefix)) return;
      const name = url.slice(staticPrefix.length);
      // The initializer and the index redirect are routes of their own, not files.
      if (name === 'swagger-initializer.js' || name === 'index.html' || name === 'theme/toolrun.css') return;
      if (!assets.has(name)) throw new ApiError('not_found', deps.notFoundMessage(request.method, url));
    });
    await app.register(swaggerUi, {
      routePrefix: DOCS_PREFIX,
      // The UI loads ./json: the document /v1/openapi.json serves, with each operation's code
      // samples (x-codeSamples, which Swagger UI does not show) written into its description.
      transformSpecification: () => (rendered ??= withSamplesInDescriptions(deps.openapi())),
      transformSpecificationClone: false,
      theme: { title: 'Toolrun API reference', css: [{ filename: 'toolrun.css', content: DOCS_CSS }] },
      logo: { type: 'image/svg+xml', content: LOGO_SVG, href: DOCS_PREFIX },
      uiConfig: { deepLinking: true, displayRequestDuration: true },
      // Everything from this origin (Swagger UI sets inline styles and shows data: images); "Try it
      // out" calls the API at the document's server URL.
      staticCSP: [
        "default-src 'self'",
        "base-uri 'self'",
        `connect-src 'self' ${new URL(deps.publicBaseUrl).origin}`,
        "img-src 'self' data:",
        "script-src 'self'",
        "style-src 'self' 'unsafe-inline'",
        "object-src 'none'",
        "frame-ancestors 'self'",
      ].join('; '),
    });
  };
}
