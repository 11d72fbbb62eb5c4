// brand_kit_extract on small sites written for each class of error seen on sites nobody tuned it
// for (issue 35), in both modes: the static reader, and the render mode in Debian's Chromium.
// Each folder of test/tools-brand-kit-classes/ is a made-up site of one class (names, colours
// and fonts invented), served at the root of its own loopback port; each failed on the code
// before issue 35. The render mode must be at least as right as the static reader on every one.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import { deltaE2000, SiteServer } from '../bench/lib/brandkit-sites.js';
import type { BrandKit } from '../src/tools/brand-kit/schema.js';
import { CHROMIUM } from './helpers/browser.js';
import { fontFor, kitOf, removeWorkDirs } from './helpers/brand-pages.js';

const DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), 'tools-brand-kit-classes');
const hasChromium = fs.existsSync(CHROMIUM);
const servers = new Map<string, SiteServer>();

before(async () => {
  for (const name of fs.readdirSync(DIR)) servers.set(name, await new SiteServer(path.join(DIR, name)).start());
});
after(async () => {
  for (const s of servers.values()) await s.close();
  removeWorkDirs();
});

const MODES = ['static', 'render'] as const;
type Mode = (typeof MODES)[number];

async function kit(site: string, mode: Mode): Promise<BrandKit> {
  const server = servers.get(site);
  assert.ok(server, `no class site ${site}`);
  return kitOf(`${server.url}/`, mode === 'render' ? { browserPath: CHROMIUM } : {});
}

const logoPath = (k: BrandKit) => (k.logos[0]?.url ? new URL(k.logos[0].url).pathname : (k.logos[0]?.kind ?? null));
const near = (got: string | null, want: string) => got !== null && deltaE2000(got, want) <= 5;
const doubts = (k: BrandKit) => k.warnings.filter((w) => /is uncertain|rests on one signal|rests on weak evidence/.test(w));

interface Case {
  site: string;
  says: string;
  check: (k: BrandKit) => void;
}

const CASES: Record<string, Case[]> = {
  name: [
    { site: 'name-menu-items', says: 'section links and menu toggles in the navigation are not the name', check: (k) => assert.equal(k.name, 'Brindle') },
    {
      site: 'name-h1-image-alt',
      says: "an h1 of images and one word: the brand is the first image's alt, and that image is the logo (the platform mark beside it is not)",
      check: (k) => {
        assert.equal(k.name, 'Quokka');
        assert.equal(logoPath(k), '/quokka.svg');
      },
    },
    { site: 'name-title-tagline', says: '"Name: tagline" titles and an h1 with "(v2.4.1)" give the name alone', check: (k) => assert.equal(k.name, 'Pickle') },
    { site: 'name-title-section', says: 'the header logo\'s text beats a title and heading that add a section ("Harbor & Open Source")', check: (k) => assert.equal(k.name, 'Harbor') },
    { site: 'name-glyph', says: 'a decorative glyph in the wordmark is not part of the name', check: (k) => assert.equal(k.name, 'Pixel Forge') },
    { site: 'name-page-heading', says: 'a page\'s heading in "Usage | Name" is not the site\'s name', check: (k) => assert.equal(k.name, 'Ferret') },
    { site: 'name-version', says: 'a version label linking home is not a name', check: (k) => assert.equal(k.name, 'Marmot') },
  ],
  primary: [
    { site: 'color-demo-greys', says: 'grey demo buttons do not outrank the call-to-action colour', check: (k) => assert.ok(near(k.roles.primary, '#e4572e'), String(k.roles.primary)) },
    { site: 'color-framework-bootstrap3', says: "Bootstrap 3's stock #337ab7, which the page does not show, does not outrank the site's own", check: (k) => assert.ok(near(k.roles.primary, '#0f7b6c'), String(k.roles.primary)) },
    { site: 'color-framework-materialize', says: "Materialize's stock teal does not outrank the site's own", check: (k) => assert.ok(near(k.roles.primary, '#7b2d5b'), String(k.roles.primary)) },
    { site: 'color-render-ink', says: 'a dark heading colour is ink, not the primary colour (the render mode must not pick it)', check: (k) => assert.ok(near(k.roles.primary, '#d6336c'), String(k.roles.primary)) },
  ],
  logo: [
    { site: 'logo-object-svg', says: 'a logo in <object data="...svg"> in the brand link is found', check: (k) => assert.equal(logoPath(k), '/img/wren-mark.svg') },
    { site: 'logo-used-by', says: 'a "Trusted by" row of other companies\' logos is not the brand\'s; its touch icon is', check: (k) => assert.equal(k.logos[0]?.kind, 'apple_touch_icon') },
    { site: 'logo-platform', says: "GitHub's mark on a source link is not the logo; the brand's own image in the footer is", check: (k) => assert.equal(logoPath(k), '/img/logo.png') },
    { site: 'logo-emoji', says: 'emoji images never rank as the logo; the drawn mark in the brand link does', check: (k) => assert.equal(k.logos[0]?.kind, 'inline_svg') },
  ],
  heading: [
    { site: 'font-footer-labels', says: 'a face used only by footer labels is not the heading font', check: (k) => assert.equal(fontFor(k, 'heading'), 'Nunito') },
    { site: 'font-footer-labels-system', says: 'headings in the system font: no heading font, whatever the footer labels use', check: (k) => assert.equal(fontFor(k, 'heading'), null) },
  ],
  warnings: [
    {
      site: 'name-menu-items',
      says: 'a name only the <title> gives is said to rest on one signal',
      check: (k) => assert.deepEqual(doubts(k).filter((w) => w.startsWith('the name')), ['the name "Brindle" rests on one signal (the <title>)']),
    },
    {
      site: 'name-title-section',
      says: 'a name the signals dispute is said to be uncertain, naming both sides',
      check: (k) => assert.deepEqual(doubts(k).filter((w) => w.startsWith('the name')), ['the name "Harbor" is uncertain (from the wordmark): "Harbor & Open Source" has nearly as much support (from the <title> and the first heading)']),
    },
    {
      site: 'logo-platform',
      says: 'a primary colour only the buttons give is said to rest on one signal',
      check: (k) => assert.ok(doubts(k).includes('the primary colour #3866c9 rests on one signal (the buttons on the page)'), doubts(k).join('\n')),
    },
    {
      site: 'warn-primary-disagree',
      says: 'a primary colour with a close rival names the signals on each side',
      check: (k) => {
        const w = doubts(k).find((x) => x.startsWith('the primary colour'));
        assert.ok(w && /is uncertain \(from .+\): #[0-9a-f]{6} has nearly as much support \(from .+\)/.test(w), doubts(k).join('\n'));
        assert.ok(w.includes('#1e88e5') && w.includes('#7a1fa2'), w);
      },
    },
    { site: 'color-framework-bootstrap3', says: 'a name and a colour several signals agree on get no warning', check: (k) => assert.deepEqual(doubts(k), []) },
  ],
};

for (const mode of MODES) {
  describe(`brand_kit_extract, ${mode} mode, on one small site per class of issue 35`, { skip: mode === 'render' && !hasChromium ? `no Chromium at ${CHROMIUM}` : false }, () => {
    for (const [check, cases] of Object.entries(CASES)) {
      for (const c of cases) {
        test(`${check}: ${c.says} (${c.site})`, async () => {
          c.check(await kit(c.site, mode));
        });
      }
    }
  });
}
