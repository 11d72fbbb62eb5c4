// brand_kit_extract on small pages written for each class of error seen on real sites (issue 27):
// the name picked by agreement of its signals, fonts from the cascade as a browser resolves it,
// the primary colour by where a colour is used, and logos ranked by position and naming. Each
// page stands for a class, not a site: the names, colours and fonts are made up.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { fontFor, kitOf, PageServer, removeWorkDirs } from './helpers/brand-pages.js';

let pages: PageServer;
const page = (head: string, body: string, bodyAttrs = '') => `<!doctype html><html><head><meta charset="utf-8">${head}</head><body${bodyAttrs}>${body}</body></html>`;

before(async () => {
  pages = await new PageServer().start();
});
after(async () => {
  await pages.close();
  removeWorkDirs();
});

describe('brand_kit_extract: the name, by agreement of its signals', () => {
  test('a version number after the name is not part of it', async () => {
    pages.set('/n-version', page('<title>Widgetry 5</title>', '<div id="nav"><a href="/"><h1>Widgetry</h1></a></div><p>Text</p>'));
    assert.equal((await kitOf(`${pages.url}/n-version`)).name, 'Widgetry');
  });
  test('a descriptive suffix ("Documentation", "CSS Framework") is dropped when the wordmark agrees', async () => {
    pages.set('/n-docs', page('<title>Quark Documentation</title>', '<header class="navbar"><span class="navbar-brand"><strong>Quark</strong></span></header>'));
    assert.equal((await kitOf(`${pages.url}/n-docs`)).name, 'Quark');
    pages.set('/n-framework', page('<title>Gizmo.css CSS Framework</title>', '<div class="brand"><a class="site-logo" href="index.html"><img src="/g.svg" alt="Gizmo.css CSS Framework"></a></div>'));
    assert.equal((await kitOf(`${pages.url}/n-framework`)).name, 'Gizmo.css');
  });
  test('"by X" is the author, not the name', async () => {
    pages.set('/n-by', page('<title>Nova by Studio Ten</title>', '<header><a href="index.html" class="logo"><strong>Nova</strong> <span>by Studio Ten</span></a></header>'));
    assert.equal((await kitOf(`${pages.url}/n-by`)).name, 'Nova');
  });
  test('a publisher og:site_name loses to the wordmark, logo alt and title that agree', async () => {
    pages.set(
      '/n-publisher',
      page(
        '<title>Lumen - Tailwind CSS Landing Page Demo</title><meta property="og:site_name" content="PublisherCo">',
        '<header><nav><a href="#"><img src="/lumen.svg" alt="Lumen Logo"><span>Lumen</span></a></nav></header>',
      ),
    );
    assert.equal((await kitOf(`${pages.url}/n-publisher`)).name, 'Lumen');
  });
  test('a bare domain title is not the name when the page names itself', async () => {
    pages.set('/n-domain', page('<title>zeta.io</title>', '<div class="jumbotron"><h1><img src="/img/zeta-logo.png" alt="">zeta</h1><p>a tool</p></div>'));
    assert.equal((await kitOf(`${pages.url}/n-domain`)).name, 'zeta');
  });
});

describe('brand_kit_extract: fonts from the cascade', () => {
  test('headings that inherit (a reset, or no rule) take the body font; a later heading rule beats the reset', async () => {
    pages.set('/f-inherit.css', 'body { font-family: "Brand Sans", Arial, sans-serif; } h1, h2, h3, h4, h5, h6 { font-family: inherit; margin: 0; }');
    pages.set('/f-inherit', page('<title>F</title><link rel="stylesheet" href="/f-inherit.css">', '<h1>Hello</h1><p>x</p>'));
    const kit = await kitOf(`${pages.url}/f-inherit`);
    assert.equal(fontFor(kit, 'body'), 'Brand Sans');
    assert.equal(fontFor(kit, 'heading'), 'Brand Sans');
    pages.set('/f-later', page('<title>F</title><link rel="stylesheet" href="/f-inherit.css"><style>h2, h3, h4 { font-family: "Display Serif", serif; }</style>', '<h2>Hello</h2>'));
    assert.equal(fontFor(await kitOf(`${pages.url}/f-later`), 'heading'), 'Display Serif');
  });
  test('specificity beats order; a style attribute on body counts', async () => {
    pages.set('/f-spec', page('<title>F</title><style>body.home { font-family: "Alpha Grotesk"; } body { font-family: "Beta Sans"; }</style>', '<h1>A</h1>', ' class="home"'));
    assert.equal(fontFor(await kitOf(`${pages.url}/f-spec`), 'body'), 'Alpha Grotesk');
    pages.set('/f-attr', page('<title>F</title>', '<h1>A</h1>', ` style="font-family: 'Attr Sans', sans-serif;"`));
    const kit = await kitOf(`${pages.url}/f-attr`);
    assert.equal(fontFor(kit, 'body'), 'Attr Sans');
    assert.equal(fontFor(kit, 'heading'), 'Attr Sans');
  });
  test('the font shorthand on html, and var() in a rule that reaches the heading by its class', async () => {
    pages.set('/f-short', page('<title>F</title><style>:root { --brand-serif: "Var Display"; } html { font: 16px/1.5 Mono Face, monospace; } .page-title { font-family: var(--brand-serif), serif; }</style>', '<h1 class="page-title">A</h1><p>b</p>'));
    const kit = await kitOf(`${pages.url}/f-short`);
    assert.equal(fontFor(kit, 'body'), 'Mono Face');
    assert.equal(fontFor(kit, 'heading'), 'Var Display');
  });
  test('a 2.9 MB stylesheet is read', async () => {
    // Size, not rule count: a long comment parses fast and still has to be downloaded whole.
    const filler = `.u-x{margin:0}\n/* ${'x'.repeat(2.9 * 1024 * 1024)} */\n`;
    pages.set('/f-big.css', `${filler}body{font-family:"Big Sheet Sans",sans-serif}`);
    pages.set('/f-big', page('<title>F</title><link rel="stylesheet" href="/f-big.css">', '<h1>A</h1>'));
    const kit = await kitOf(`${pages.url}/f-big`);
    assert.equal(fontFor(kit, 'body'), 'Big Sheet Sans');
    assert.ok(!kit.warnings.some((w) => /f-big\.css/.test(w)), kit.warnings.join('; '));
  });
});

describe('brand_kit_extract: the primary colour by where it is used', () => {
  test('var() inside rgb() (Tailwind) is expanded, and a white theme-color is not primary', async () => {
    pages.set(
      '/c-tw.css',
      '.bg-white{--tw-bg-opacity:1;background-color:rgb(255 255 255/var(--tw-bg-opacity))}.bg-brand-700{--tw-bg-opacity:1;background-color:rgb(108 43 217/var(--tw-bg-opacity))}.text-white{color:#fff}.text-gray-500{color:rgb(107 114 128)}.border-gray-200{border-color:rgb(229 231 235)}',
    );
    pages.set(
      '/c-tw',
      page(
        '<title>T</title><meta name="theme-color" content="#ffffff"><link rel="stylesheet" href="/c-tw.css">',
        '<header><nav class="bg-white border-gray-200"><a href="/signup" class="text-white bg-brand-700">Download</a></nav></header><p class="text-gray-500">x</p><p class="text-gray-500">y</p>',
      ),
    );
    assert.equal((await kitOf(`${pages.url}/c-tw`)).roles.primary, '#6c2bd9');
  });
  test('focus and active shades do not outvote the base colour of .btn-primary', async () => {
    const shades = ['.btn-primary.focus,.btn-primary:focus{background-color:#4d1d4d;border-color:#4d1d4d}', '.btn-primary.active,.btn-primary:active,.open>.dropdown-toggle.btn-primary{background-color:#4d1d4d}', '.btn-primary.active.focus,.btn-primary:active:hover{background-color:#4d1d4d}', '.navbar-default .navbar-nav>.active>a{background-color:#4d1d4d}'];
    pages.set('/c-bs.css', `.btn-primary{color:#fff;background-color:#722b72;border-color:#622562}${shades.join('')}${shades.join('')}a{color:#3f3f3f}`);
    pages.set('/c-bs', page('<title>B</title><link rel="stylesheet" href="/c-bs.css">', '<a class="btn btn-primary" href="/get">Get it</a>'));
    assert.equal((await kitOf(`${pages.url}/c-bs`)).roles.primary, '#722b72');
  });
  test('the link colour that is also the primary button colour stays primary', async () => {
    pages.set(
      '/c-link',
      page(
        '<title>L</title><style>a{color:#5755d9}.btn.btn-primary{background:#5755d9;border-color:#4b48d6;color:#fff}.label.label-warning{background:#ffb700}.btn.btn-error{background:#e85600}.label.label-error{background:#e85600}.text-error{color:#e85600}.toast.toast-error{background:#e85600}.form-input.is-error{border-color:#e85600}</style>',
        '<a class="btn btn-primary" href="/x">Go</a>',
      ),
    );
    assert.equal((await kitOf(`${pages.url}/c-link`)).roles.primary, '#5755d9');
  });
  test('near-white and near-black are never primary or accent', async () => {
    pages.set('/c-grey', page('<title>G</title><meta name="theme-color" content="#fdfdfd"><style>.btn{background:#0a0a0a;color:#fff}a{color:#111}</style>', '<a class="btn" href="/b">B</a>'));
    const kit = await kitOf(`${pages.url}/c-grey`);
    assert.equal(kit.roles.primary, null);
    assert.equal(kit.roles.accent, null);
  });
});

describe('brand_kit_extract: logos ranked by position and naming', () => {
  test('a badge whose URL holds ?logo= is not a logo; the icon is', async () => {
    pages.set('/l-badge', page('<title>Badgy</title><link rel="icon" href="/icon.png">', '<h1>Badgy</h1><p><a href="https://example.test"><img alt="GitHub stars" src="/badge/stars.svg?logo=github"></a></p>'));
    const kit = await kitOf(`${pages.url}/l-badge`);
    assert.equal(kit.logos[0]?.kind, 'icon');
  });
  test('an inline SVG in <nav> inside the brand link comes first', async () => {
    pages.set(
      '/l-nav',
      page('<title>Navvy</title><link rel="icon" href="/icon.png">', '<nav id="top"><a class="brand" href="#"><svg viewBox="0 0 10 10" class="h-8"><rect width="10" height="10" fill="#123456"/></svg> NAVVY</a></nav><main><h1>Navvy</h1></main>'),
    );
    const kit = await kitOf(`${pages.url}/l-nav`);
    assert.equal(kit.logos[0]?.kind, 'inline_svg');
  });
  test('an image named after the site comes before the icons', async () => {
    pages.set('/l-named', page('<title>Ramble Documentation</title><link rel="icon" href="/icon.png">', '<header class="navbar"><span class="navbar-brand">Ramble</span></header><main><h1>Ramble</h1><p><img src="/rambleMark_200.png" width="170" height="190"></p><p><img src="/moon.png" alt="" id="icon"></p></main>'));
    const kit = await kitOf(`${pages.url}/l-named`);
    assert.equal(new URL(kit.logos[0]?.url ?? 'http://x/none').pathname, '/rambleMark_200.png');
  });
});
