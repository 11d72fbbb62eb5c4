// Shared by the brand_kit_extract tests (test/tools-brand-kit-*.test.ts): the check of a kit
// against its JSON Schema, what the local test site (brand-site.ts) must yield wherever the kit
// was made, and small images to feed the tool and read back.
import assert from 'node:assert/strict';
import { Ajv2020 } from 'ajv/dist/2020.js';
import sharp from 'sharp';
import { BrandKitSchema, type BrandKit } from '../../src/tools/brand-kit/schema.js';
import { GOOGLE_FONTS } from './brand-site.js';

const validateKit = new Ajv2020({ strict: true, allErrors: true }).compile(BrandKitSchema);

export function assertValidKit(data: unknown): asserts data is BrandKit {
  assert.ok(validateKit(data), `brand-kit.json does not match its schema: ${JSON.stringify(validateKit.errors)}`);
}

/** A PNG whose left three quarters are one colour and the right quarter another. */
export async function twoColourPng(width: number, height: number, left: string, right: string): Promise<Buffer> {
  const rightWidth = width / 4;
  const patch = await sharp({ create: { width: rightWidth, height, channels: 3, background: right } }).png().toBuffer();
  return sharp({ create: { width, height, channels: 3, background: left } })
    .composite([{ input: patch, left: width - rightWidth, top: 0 }])
    .png()
    .toBuffer();
}

export async function pixel(file: string | Buffer, x: number, y: number): Promise<string> {
  const { data, info } = await sharp(file).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  const i = (y * info.width + x) * info.channels;
  return `#${[data[i]!, data[i + 1]!, data[i + 2]!].map((v) => v.toString(16).padStart(2, '0')).join('')}`;
}

const EXPECTED_ROLES = { primary: '#1a73e8', secondary: '#ff5722', accent: '#00bd7e', background: '#fffdf7', text: '#2f4f4f' };

/** What the test site must give, wherever the kit was made. */
export function assertSiteKit(kit: BrandKit, siteUrl: string): void {
  assert.equal(kit.name, 'Acme Rockets');
  assert.equal(kit.description, 'Acme Rockets builds reusable rockets for small satellites.');
  assert.deepEqual(kit.roles, EXPECTED_ROLES);
  assert.deepEqual(kit.source.stylesheets, [`${siteUrl}/css/main.css`, `${siteUrl}/css/extra.css`]);
  const hexes = kit.colors.map((c) => c.hex);
  // Every colour of the default look, none from the dark-scheme or print rules, none from a 20%-alpha overlay.
  assert.deepEqual([...hexes].sort(), ['#00bd7e', '#1557b0', '#1a73e8', '#2f4f4f', '#e0e0e0', '#ff5722', '#fffdf7', '#ffffff']);
  for (const role of Object.keys(EXPECTED_ROLES) as (keyof typeof EXPECTED_ROLES)[]) {
    const holder = kit.colors.find((c) => c.roles.includes(role));
    assert.equal(holder?.hex, EXPECTED_ROLES[role], `role ${role}`);
  }
  assert.equal(kit.colors[0]!.hex, '#1a73e8', 'the primary colour is the most used');
  assert.deepEqual(kit.colors[0]!.variables, ['--brand-primary']);
  assert.deepEqual(kit.colors[0]!.sources, ['css', 'css_variable', 'theme_color']);
  assert.deepEqual(kit.colors.find((c) => c.hex === '#00bd7e')?.variables, ['--brand-accent']);
  const weights = kit.colors.map((c) => c.weight);
  assert.deepEqual(weights, [...weights].sort((a, b) => b - a), 'heaviest first');
  assert.ok(Math.abs(weights.reduce((a, b) => a + b, 0) - 1) < 0.001);
  assert.ok(kit.colors.find((c) => c.hex === '#e0e0e0')!.weight < kit.colors.find((c) => c.hex === '#2f4f4f')!.weight);

  assert.deepEqual(kit.fonts, [
    { family: 'Playfair Display', roles: ['heading'], fallbacks: ['Georgia', 'serif'], sources: [{ kind: 'google_fonts', url: GOOGLE_FONTS, format: null }] },
    {
      family: 'Acme Sans',
      roles: ['body'],
      fallbacks: ['Inter', 'system-ui', 'sans-serif'],
      sources: [
        { kind: 'font_face', url: `${siteUrl}/fonts/acme-sans.woff2`, format: 'woff2' },
        { kind: 'font_face', url: `${siteUrl}/fonts/acme-sans.woff`, format: 'woff' },
      ],
    },
    { family: 'Inter', roles: [], fallbacks: [], sources: [{ kind: 'google_fonts', url: GOOGLE_FONTS, format: null }] },
  ]);
  assert.deepEqual(kit.font_services, [{ provider: 'google_fonts', url: GOOGLE_FONTS, families: ['Playfair Display', 'Inter'] }]);

  assert.deepEqual(
    kit.logos.map((l) => [l.kind, l.url, l.file, l.mime_type, l.width, l.height, l.source_format]),
    [
      ['inline_svg', null, 'logo-1.png', 'image/png', 512, 171, 'svg'],
      ['img', `${siteUrl}/img/logo.png`, 'logo-2.png', 'image/png', 200, 60, 'png'],
      ['apple_touch_icon', `${siteUrl}/apple-touch-icon.png`, 'logo-3.png', 'image/png', 180, 180, 'png'],
      ['icon', `${siteUrl}/favicon.ico`, null, null, null, null, null],
      ['og_image', `${siteUrl}/og.jpg`, 'logo-4.jpg', 'image/jpeg', 300, 157, 'jpeg'],
    ],
  );
  assert.match(kit.logos[0]!.svg ?? '', /^<svg xmlns="http:\/\/www.w3.org\/2000\/svg" width="120"/);
  assert.equal(kit.logos[0]!.alt, 'Acme Rockets');
  assert.equal(kit.logos[1]!.alt, 'Acme Rockets');
  assert.deepEqual(kit.warnings, [`logo ${siteUrl}/favicon.ico: not a decodable image`]);
  assert.deepEqual(kit.images, []);
}
