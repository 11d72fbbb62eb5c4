// GET /docs: the interactive API reference (Swagger UI) over a real socket. Served without a key,
// every script and stylesheet from the service itself (the machines have no internet), loading
// the very document GET /v1/openapi.json serves (with each operation's code samples written into
// its description, which Swagger UI renders), hidden from that document, and its misses answered
// in the error envelope with X-Request-Id like every other path. In Chromium, an operation opened
// shows its samples in curl, TypeScript and Python.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { SAMPLE_LANGUAGES, withSamplesInDescriptions } from '../src/http/samples/index.js';
import { launchBrowser, newPage } from './helpers/browser.js';
import { startTestServer, type TestServer } from './helpers/server.js';

let s: TestServer;

before(async () => {
  s = await startTestServer();
});
after(() => s.close());

interface Fetched {
  status: number;
  headers: Headers;
  body: string;
}

async function get(path: string, init: RequestInit = {}): Promise<Fetched> {
  const res = await fetch(`${s.url}${path}`, { redirect: 'manual', ...init });
  return { status: res.status, headers: res.headers, body: await res.text() };
}

/** src and href values of <script> and <link> tags. */
function assetRefs(html: string): string[] {
  const refs: string[] = [];
  for (const m of html.matchAll(/<(script|link)\b[^>]*?\s(?:src|href)="([^"]+)"/g)) refs.push(m[2] ?? '');
  return refs;
}

function assertEnvelope(res: Fetched, code: string): void {
  const requestId = res.headers.get('x-request-id');
  assert.match(requestId ?? '', /^[0-9a-f-]{36}$/);
  assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
  const body = JSON.parse(res.body) as { error: { code: string; request_id: string } };
  assert.equal(body.error.code, code);
  assert.equal(body.error.request_id, requestId);
}

describe('GET /docs', () => {
  test('answers HTML without a key, with X-Request-Id and a same-origin content security policy', async () => {
    for (const path of ['/docs', '/docs/']) {
      const res = await get(path);
      assert.equal(res.status, 200, path);
      assert.match(res.headers.get('content-type') ?? '', /^text\/html/);
      assert.match(res.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/);
      assert.match(res.body, /<div id="swagger-ui">/);
      assert.match(res.body, /<title>Toolrun API reference<\/title>/);
      const csp = res.headers.get('content-security-policy') ?? '';
      assert.match(csp, /default-src 'self'/);
      assert.match(csp, /script-src 'self'(;|$)/);
    }
  });

  test("presented as Toolrun's: its wordmark in the top bar, the renderer's document URL box hidden", async () => {
    const init = await get('/docs/static/swagger-initializer.js');
    assert.equal(init.status, 200);
    const logo = /img\.src = 'data:image\/svg\+xml;base64,([A-Za-z0-9+/=]+)'/.exec(init.body);
    assert.ok(logo, 'the initializer replaces the logo');
    assert.match(Buffer.from(logo[1] ?? '', 'base64').toString('utf8'), /aria-label="Toolrun"/);
    const page = await get('/docs');
    assert.match(page.body, /href="\.\/static\/theme\/toolrun\.css"|href="[^"]*\/theme\/toolrun\.css"/);
    const css = await get('/docs/static/theme/toolrun.css');
    assert.equal(css.status, 200);
    assert.match(css.headers.get('content-type') ?? '', /^text\/css/);
    assert.match(css.body, /\.download-url-wrapper \{ display: none; \}/);
  });

  test('every script and stylesheet is served by the service itself (no CDN), as JS and CSS', async () => {
    const page = await get('/docs');
    const refs = assetRefs(page.body);
    assert.ok(refs.length >= 4, `too few assets: ${JSON.stringify(refs)}`);
    const kinds = new Set<string>();
    for (const ref of refs) {
      const url = new URL(ref, `${s.url}/docs`);
      assert.equal(url.origin, s.url, `${ref} is not served by the service`);
      const res = await get(url.pathname);
      assert.equal(res.status, 200, `${ref}: ${res.status} ${res.body.slice(0, 200)}`);
      assert.ok(res.body.length > 0, `${ref} is empty`);
      const type = res.headers.get('content-type') ?? '';
      if (url.pathname.endsWith('.js')) {
        assert.match(type, /javascript/, ref);
        kinds.add('js');
      }
      if (url.pathname.endsWith('.css')) {
        assert.match(type, /text\/css/, ref);
        kinds.add('css');
        // A stylesheet may not pull fonts or images from elsewhere either.
        assert.doesNotMatch(res.body, /url\(\s*["']?https?:/, `${ref} loads something from another origin`);
      }
    }
    assert.deepEqual([...kinds].sort(), ['css', 'js']);
    // The bundle itself is the renderer, not an error page.
    const bundle = await get('/docs/static/swagger-ui-bundle.js');
    assert.ok(bundle.body.length > 500_000, `swagger-ui-bundle.js is only ${bundle.body.length} bytes`);
    assert.match(bundle.body, /SwaggerUIBundle/);
  });

  test('the page loads ./json: /v1/openapi.json with each operation\'s code samples in its description', async () => {
    const init = await get('/docs/static/swagger-initializer.js');
    assert.equal(init.status, 200);
    assert.match(init.body, /url: resolveUrl\('\.\/json'\)/);
    // The initializer resolves ./json against the page URL with a trailing slash: /docs/json.
    assert.match(init.body, /validatorUrl: null/, 'no call to an outside validator');
    const ui = await get('/docs/json');
    const api = await get('/v1/openapi.json');
    assert.equal(ui.status, 200);
    assert.equal(api.status, 200);
    const apiDoc = JSON.parse(api.body) as Record<string, unknown>;
    const uiDoc = JSON.parse(ui.body) as Record<string, unknown>;
    assert.deepEqual(uiDoc, withSamplesInDescriptions(apiDoc));
    assert.equal(uiDoc.openapi, '3.1.0');
    const ops = (doc: Record<string, unknown>) =>
      Object.values(doc.paths as Record<string, Record<string, { description?: string; 'x-codeSamples'?: { lang: string; source: string }[] }>>).flatMap((p) =>
        Object.values(p),
      );
    const served = ops(apiDoc);
    assert.ok(served.length >= 23);
    for (const [i, op] of ops(uiDoc).entries()) {
      const samples = served[i]?.['x-codeSamples'] ?? [];
      assert.equal(samples.length, SAMPLE_LANGUAGES.length);
      for (const l of SAMPLE_LANGUAGES) {
        const source = samples.find((x) => x.lang === l.lang)?.source ?? '';
        assert.ok(source && op.description?.includes(`\`\`\`${l.fence}\n${source}\n\`\`\``), `${l.label} sample not in the description`);
      }
      // The document itself keeps its descriptions: the SDK's generated types carry no sample code.
      assert.doesNotMatch(served[i]?.description ?? '', /Code samples/);
    }
  });

  test("in a browser, an operation opened shows its samples in curl, TypeScript and Python, and its answers' examples", async () => {
    const browser = await launchBrowser();
    try {
      const { page, problems } = await newPage(browser);
      await page.goto(`${s.url}/docs#/me/getMe`);
      const op = page.locator('#operations-me-getMe');
      const blocks = op.locator('.opblock-description-wrapper pre code');
      await blocks.first().waitFor();
      const code = await blocks.allTextContents();
      assert.equal(code.length, 3, JSON.stringify(code));
      assert.match(code[0] ?? '', /^curl -fsS "\$TOOLRUN_BASE_URL\/v1\/me"/);
      assert.match(code[1] ?? '', /import \{ Toolrun \} from '@toolrun\/sdk'/);
      assert.match(code[2] ?? '', /^import toolrun/);
      // The 401 answer's examples are offered by name.
      assert.match(await op.locator('.responses-wrapper').innerText(), /api_key_required/);
      assert.deepEqual(problems, []);
    } finally {
      await browser.close();
    }
  });

  test('the /docs routes are not in the OpenAPI document', async () => {
    const doc = JSON.parse((await get('/v1/openapi.json')).body) as { paths: Record<string, unknown> };
    const paths = Object.keys(doc.paths);
    assert.ok(paths.includes('/v1/me'), 'the document has its operations');
    assert.deepEqual(
      paths.filter((p) => p.startsWith('/docs')),
      [],
    );
  });

  test('misses under /docs answer 404 not_found in the envelope with X-Request-Id', async () => {
    for (const path of ['/docs/static/nope.js', '/docs/static/', '/docs/static/..%2fpackage.json', '/docs/nope', '/docs/static/theme/x.css']) {
      const res = await get(path);
      assert.equal(res.status, 404, `${path}: ${res.status} ${res.body.slice(0, 200)}`);
      assertEnvelope(res, 'not_found');
    }
    const wrongMethod = await get('/docs', { method: 'POST' });
    assert.equal(wrongMethod.status, 405);
    assert.equal(wrongMethod.headers.get('allow'), 'GET, HEAD');
    assertEnvelope(wrongMethod, 'method_not_allowed');
  });

  test('HEAD works as GET without a body', async () => {
    const res = await get('/docs/static/swagger-ui.css', { method: 'HEAD' });
    assert.equal(res.status, 200);
    assert.equal(res.body, '');
    assert.match(res.headers.get('content-type') ?? '', /text\/css/);
  });
});
