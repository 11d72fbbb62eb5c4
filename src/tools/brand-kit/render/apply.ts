import { isChromatic, isGrey, lightness } from '../colors.js';
import type { ColorTally } from '../palette.js';
import { isGeneric } from '../fonts.js';
import type { KitFont } from '../schema.js';
import type { RenderedElementStyle, RenderedStyles } from './styles.js';

/**
 * Hint strengths of computed styles, well above what the static reader's guesses add up to on
 * real sites (tens): the browser resolved the cascade, inheritance and scripts, so what it
 * computed is what the visitor sees, and it decides where it speaks. Among them: a coloured page
 * header first, then buttons, links, heading colours. A kind's strength is shared among its
 * elements, so twelve links count no more than one hint.
 */
const STRENGTH = { background: 60, text: 60, header: 60, headerRest: 20, buttons: 45, links: 24, heading: 9 };
/** Below this L* a heading's colour is a text colour (near-black navy, charcoal), whatever its hue. */
const DARK_TEXT = 35;

/**
 * A colour the render may put forward as a brand colour: a hue, not a grey (tinted greys
 * included). Text colours (the body's, and dark heading colours) are the page's ink: rendering
 * must not turn them into a primary the static reader, rightly, did not pick.
 */
const brandHue = (hex: string | null): hex is string => hex !== null && isChromatic(hex) && !isGrey(hex);

/** Adds the computed colours to the tally as strong evidence of their roles. */
export function applyRenderedColors(tally: ColorTally, computed: RenderedStyles): void {
  const { body } = computed;
  if (body?.background) tally.add(body.background, 6, 'css', { role: 'background', strength: STRENGTH.background, from: 'the rendered body' });
  if (body?.color) tally.add(body.color, 6, 'css', { role: 'text', strength: STRENGTH.text, from: 'the rendered body' });
  const share = (elements: RenderedElementStyle[], pick: (e: RenderedElementStyle) => string | null, role: 'primary' | 'accent', total: number, from: string) => {
    const hexes = elements.map(pick).filter(brandHue);
    for (const hex of hexes) tally.add(hex, 3, 'css', { role, strength: total / hexes.length, from });
  };
  share(computed.buttons, (e) => e.background, 'primary', STRENGTH.buttons, 'the rendered buttons');
  // A coloured header (an app bar, a navbar in the brand colour) is the brand's own surface, more
  // than a button, which may carry the accent (Material's pink action button on an indigo bar).
  // The page's first header counts most; a nav inside or after it shares the rest.
  const [top, ...rest] = computed.header;
  if (brandHue(top?.background ?? null)) tally.add(top!.background!, 3, 'css', { role: 'primary', strength: STRENGTH.header, from: 'the rendered header' });
  share(rest, (e) => e.background, 'primary', STRENGTH.headerRest, 'the rendered header');
  const ink = (hex: string | null) => (hex !== null && (hex === body?.color || lightness(hex) < DARK_TEXT) ? null : hex);
  share([computed.h1, computed.h2].filter((e): e is RenderedElementStyle => e !== null), (e) => ink(e.color), 'primary', STRENGTH.heading, 'the rendered headings');
  share(computed.links, (e) => e.color, 'accent', STRENGTH.links, 'the rendered links');
}

function mainFamily(style: RenderedElementStyle | null): { family: string; fallbacks: string[] } | null {
  const list = style?.fontFamily ?? [];
  const i = list.findIndex((f) => !isGeneric(f));
  return i < 0 ? null : { family: list[i]!, fallbacks: list.slice(i + 1) };
}

/**
 * The heading (h1, else h2, else h3) and body fonts as computed replace the roles the static
 * reader gave, a system font clearing the role: the sources it found for a family stay with it.
 */
export function applyRenderedFonts(fonts: KitFont[], computed: RenderedStyles): KitFont[] {
  const out = fonts.map((f) => ({ ...f, roles: [...f.roles] }));
  // The page's first heading decides (h1, else h2, else h3): when it renders with a system or
  // generic font, the page has no heading font, whatever a later heading or label uses.
  const first = computed.h1 ?? computed.h2 ?? computed.h3;
  for (const [role, style] of [
    ['heading', first],
    ['body', computed.body],
  ] as const) {
    if (!style?.fontFamily.length) continue;
    for (const f of out) f.roles = f.roles.filter((r) => r !== role);
    const found = mainFamily(style);
    if (!found) continue;
    let entry = out.find((f) => f.family.toLowerCase() === found.family.toLowerCase());
    if (!entry) {
      entry = { family: found.family, roles: [], fallbacks: [], sources: [] };
      out.push(entry);
    }
    entry.roles.push(role);
    entry.roles.sort((a, b) => (a === 'heading' ? -1 : b === 'heading' ? 1 : 0));
    if (!entry.fallbacks.length) entry.fallbacks = found.fallbacks;
  }
  const order = (f: KitFont) => (f.roles.includes('heading') ? 0 : f.roles.includes('body') ? 1 : 2);
  return out.sort((a, b) => order(a) - order(b)).slice(0, 20);
}
