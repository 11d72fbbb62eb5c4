import { Type, type Static, type TSchema } from 'typebox';

/**
 * brand-kit.json, the JSON output of brand_kit_extract (schema_version 1). Every object is closed.
 * Colours are #rrggbb in lower case; URLs are absolute; weights are shares of use (0..1, summing
 * to about 1 over a list).
 */

const Hex = Type.String({ pattern: '^#[0-9a-f]{6}$', description: 'sRGB colour as #rrggbb, lower case' });
const Url = Type.String({ minLength: 1, description: 'Absolute http(s) URL' });
const Nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()]);

export const ColorRoleSchema = Type.Union([
  Type.Literal('primary'),
  Type.Literal('secondary'),
  Type.Literal('accent'),
  Type.Literal('background'),
  Type.Literal('text'),
]);
export type ColorRole = Static<typeof ColorRoleSchema>;

export const ColorSourceSchema = Type.Union([Type.Literal('css_variable'), Type.Literal('theme_color'), Type.Literal('css'), Type.Literal('image')], {
  description: 'css_variable: a custom property defines it; theme_color: the theme-color meta tag; css: used in a declaration; image: a dominant colour of an input image',
});
export type ColorSource = Static<typeof ColorSourceSchema>;

export const KitColorSchema = Type.Object(
  {
    hex: Hex,
    roles: Type.Array(ColorRoleSchema, { description: 'Roles this colour holds; each role is held by at most one colour' }),
    weight: Type.Number({ minimum: 0, maximum: 1, description: 'Share of use among the listed colours' }),
    sources: Type.Array(ColorSourceSchema),
    variables: Type.Array(Type.String(), { description: 'Custom properties (e.g. --brand-primary) whose value is this colour' }),
  },
  { additionalProperties: false },
);
export type KitColor = Static<typeof KitColorSchema>;

export const FontProviderSchema = Type.Union([Type.Literal('google_fonts'), Type.Literal('adobe_fonts'), Type.Literal('bunny_fonts')]);

export const KitFontSchema = Type.Object(
  {
    family: Type.String({ minLength: 1 }),
    roles: Type.Array(Type.Union([Type.Literal('heading'), Type.Literal('body')]), {
      description: 'heading: the font of h1-h3; body: the font of body/html',
    }),
    fallbacks: Type.Array(Type.String(), { description: 'The rest of the font-family list where the role was found' }),
    sources: Type.Array(
      Type.Object(
        {
          kind: Type.Union([Type.Literal('font_face'), FontProviderSchema]),
          url: Url,
          format: Nullable(Type.String()),
        },
        { additionalProperties: false },
      ),
      { description: 'Where the font files come from: @font-face src URLs and font service stylesheets' },
    ),
  },
  { additionalProperties: false },
);
export type KitFont = Static<typeof KitFontSchema>;

export const KitLogoSchema = Type.Object(
  {
    kind: Type.Union([Type.Literal('inline_svg'), Type.Literal('img'), Type.Literal('apple_touch_icon'), Type.Literal('icon'), Type.Literal('og_image')]),
    url: Nullable(Url),
    alt: Nullable(Type.String()),
    file: Nullable(Type.String({ description: 'The output file holding this image (logo-N.ext), when it was fetched and decoded' })),
    mime_type: Nullable(Type.String()),
    width: Nullable(Type.Integer({ minimum: 1 })),
    height: Nullable(Type.Integer({ minimum: 1 })),
    source_format: Nullable(Type.String({ description: 'Format of the original (svg logos are delivered rasterised to PNG)' })),
    svg: Nullable(Type.String({ description: 'Markup of an inline SVG (at most 64 KB)' })),
  },
  { additionalProperties: false },
);
export type KitLogo = Static<typeof KitLogoSchema>;

const PaletteEntry = Type.Object({ hex: Hex, weight: Type.Number({ minimum: 0, maximum: 1 }) }, { additionalProperties: false });

export const BrandKitSchema = Type.Object(
  {
    object: Type.Literal('brand_kit'),
    schema_version: Type.Literal(1),
    source: Type.Object(
      {
        url: Nullable(Url),
        final_url: Nullable(Type.String({ description: 'The page URL after redirects' })),
        stylesheets: Type.Array(Type.String(), { description: 'Stylesheet URLs read' }),
        files: Type.Array(Type.String({ description: 'File ids of the input images' })),
      },
      { additionalProperties: false },
    ),
    name: Nullable(Type.String({ description: 'The name most of the signals agree on: og:site_name, application-name, the web app manifest, the <title> parts, the wordmark and logo text, the domain' })),
    description: Nullable(Type.String({ description: 'meta description or og:description' })),
    colors: Type.Array(KitColorSchema, { description: 'Most used first' }),
    roles: Type.Object(
      { primary: Nullable(Hex), secondary: Nullable(Hex), accent: Nullable(Hex), background: Nullable(Hex), text: Nullable(Hex) },
      { additionalProperties: false },
    ),
    fonts: Type.Array(KitFontSchema),
    font_services: Type.Array(
      Type.Object({ provider: FontProviderSchema, url: Url, families: Type.Array(Type.String()) }, { additionalProperties: false }),
    ),
    logos: Type.Array(KitLogoSchema, { description: 'Marked logos first, then touch icons, icons, og:image' }),
    images: Type.Array(
      Type.Object(
        { file_id: Type.String(), file_name: Type.String(), palette: Type.Array(PaletteEntry, { description: 'Dominant colours, heaviest first' }) },
        { additionalProperties: false },
      ),
    ),
    warnings: Type.Array(Type.String(), {
      description:
        'First, how sure the kit is where it is not: the name or the primary colour resting on one signal ("rests on one signal (the <title>)") or on signals that disagree ("is uncertain (from ...): X has nearly as much support (from ...)"); then what could not be read (a stylesheet that failed, a logo that did not decode)',
    }),
  },
  { additionalProperties: false, $id: 'BrandKit', title: 'brand_kit' },
);
export type BrandKit = Static<typeof BrandKitSchema>;
