import fs from 'node:fs/promises';
import path from 'node:path';
import { Value } from 'typebox/value';
import type { Queryable } from '../../db/pool.js';
import { ToolError, type RunContext, type ToolOutput, type ToolRunner } from '../manifest.js';
import { customProperties } from './css.js';
import { DEFAULT_FETCH_LIMITS, type FetchLimits } from './fetch.js';
import { extractFonts } from './fonts.js';
import { dominantPalette } from './images.js';
import { collectLogos, rankLogos } from './logos.js';
import { weighName, type NamePick } from './name.js';
import { nameWarning, primaryWarning } from './confidence.js';
import { ColorTally, tallyPage } from './palette.js';
import { KIT_FILE } from './rules.js';
import { BrandKitSchema, type BrandKit } from './schema.js';
import { applyRenderedColors, applyRenderedFonts, DEFAULT_RENDER_LIMITS, looksScriptRendered, renderForRun, SHELL_WARNING, SiteFetcher, type RenderLimits } from './render/mode.js';
import { loadSite, type SiteData } from './site.js';
import { insertBrandKit } from './store.js';

const clean = (s: string | null | undefined, max: number): string | null => {
  const t = (s ?? '').replace(/\s+/g, ' ').trim();
  return t ? t.slice(0, max) : null;
};

function weighSiteName(site: SiteData): NamePick | null {
  const { title, metas, nameSignals } = site.page;
  return weighName({ title, metas, manifest: site.manifest, signals: nameSignals, hostname: new URL(site.finalUrl).hostname });
}

function siteDescription(site: SiteData): string | null {
  const m = site.page.metas;
  return clean(m.get('description'), 1000) ?? clean(m.get('og:description'), 1000) ?? clean(m.get('twitter:description'), 1000);
}

function stopIfAborted(signal: AbortSignal): void {
  if (signal.aborted) throw signal.reason instanceof Error ? signal.reason : new Error(String(signal.reason ?? 'aborted'));
}

/**
 * The brand_kit_extract runner. Limits are the defaults in production; tests may pass smaller
 * ones to exercise the bounds without waiting out the real ones, and which addresses count as
 * allowed (one loopback address, to show the others refused: a list, which the render's child
 * process can be given).
 */
export function createBrandKitRunner(
  overrides: Partial<FetchLimits> = {},
  testing: { render?: Partial<RenderLimits>; allowAddresses?: string[] } = {},
): ToolRunner {
  const limits: FetchLimits = { ...DEFAULT_FETCH_LIMITS, ...overrides };
  const renderLimits: RenderLimits = { ...DEFAULT_RENDER_LIMITS, htmlBytes: limits.pageBytes, ...testing.render };
  const allowed = testing.allowAddresses;
  const allowAddress = allowed ? (ip: string) => allowed.includes(ip) : undefined;
  return async (ctx: RunContext): Promise<ToolOutput[]> => {
    const url = typeof ctx.values.url === 'string' ? ctx.values.url : null;
    const files = ctx.files.files ?? [];
    if (!url && !files.length) throw new ToolError('brand_kit_extract needs a url or at least one image in files.');
    const pageShare = url ? (files.length ? 0.7 : 0.95) : 0;
    const warnings: string[] = [];
    const tally = new ColorTally();
    ctx.progress(0.02);

    let site: SiteData | null = null;
    let namePick: NamePick | null = null;
    let fonts: ReturnType<typeof extractFonts> = { fonts: [], services: [] };
    let logos: Awaited<ReturnType<typeof collectLogos>> = { logos: [], outputs: [] };
    if (url) {
      // With a browser, the page is rendered first; the static reader then reads the rendered DOM.
      const rendered = await renderForRun(url, ctx, renderLimits, warnings, allowed);
      stopIfAborted(ctx.signal);
      const fetchOptions = { allowPrivate: ctx.outbound.allowPrivate, signal: ctx.signal, limits, logger: ctx.logger, ...(allowAddress ? { allowAddress } : {}) };
      const fetcher = new SiteFetcher(fetchOptions, rendered ? { url, page: rendered } : null);
      site = await loadSite(url, fetcher, (f) => ctx.progress(f * pageShare));
      stopIfAborted(ctx.signal);
      warnings.push(...site.warnings);
      if (!rendered && looksScriptRendered(site.page.document)) warnings.push(SHELL_WARNING);
      const rules = [...site.sheets.flatMap((s) => s.rules), ...site.inlineRules];
      const vars = customProperties([...site.cascadeRules, ...site.inlineRules]);
      tallyPage(tally, rules, vars, site.page.themeColors, { document: site.page.document, cascadeRules: site.cascadeRules });
      fonts = extractFonts(site.page.document, site.cascadeRules, vars, site.sheets.flatMap((s) => s.fontFaces), site.services);
      if (rendered) {
        applyRenderedColors(tally, rendered.computed);
        fonts = { ...fonts, fonts: applyRenderedFonts(fonts.fonts, rendered.computed) };
      }
      ctx.progress(0.55 * pageShare);
      namePick = weighSiteName(site);
      logos = await collectLogos(rankLogos(site.page.logos, clean(namePick?.name, 200)), fetcher, ctx.workDir, warnings, (f) => ctx.progress((0.55 + 0.4 * f) * pageShare));
      stopIfAborted(ctx.signal);
    }

    const images: BrandKit['images'] = [];
    for (const [i, file] of files.entries()) {
      let palette;
      try {
        palette = await dominantPalette(file.path);
      } catch {
        throw new ToolError(`The image ${file.fileName} (files[${i}]) could not be decoded.`);
      }
      stopIfAborted(ctx.signal);
      images.push({ file_id: file.fileId, file_name: file.fileName, palette });
      // Images weigh like a page's worth of declarations together, shared among them.
      for (const p of palette) tally.add(p.hex, (p.weight * 20) / files.length, 'image');
      ctx.progress(pageShare + ((1 - pageShare) * 0.95 * (i + 1)) / files.length);
    }

    const { colors, roles } = tally.palette(url ? 10 : 8);
    // How sure the kit is of the name and the primary colour, said where it is not (page runs),
    // first: a page's many stylesheet warnings must not crowd them out.
    const doubts = url ? [nameWarning(namePick), primaryWarning(tally, roles.primary)].filter((w): w is string => w !== null) : [];
    const kit: BrandKit = {
      object: 'brand_kit',
      schema_version: 1,
      source: { url, final_url: site?.finalUrl ?? null, stylesheets: site?.sheetUrls ?? [], files: files.map((f) => f.fileId) },
      name: clean(namePick?.name, 200),
      description: site ? siteDescription(site) : null,
      colors,
      roles,
      fonts: fonts.fonts,
      font_services: fonts.services,
      logos: logos.logos,
      images,
      warnings: [...doubts, ...warnings].slice(0, 50),
    };
    const kitPath = path.join(ctx.workDir, KIT_FILE);
    await fs.writeFile(kitPath, `${JSON.stringify(kit, null, 2)}\n`);
    ctx.progress(0.99);
    return [{ path: kitPath, fileName: KIT_FILE, mimeType: 'application/json', data: kit }, ...logos.outputs];
  };
}

/** save: true keeps the kit on the team, in the transaction that marks the run succeeded. */
export async function saveBrandKitOnSuccess(
  tx: Queryable,
  run: { id: string; teamId: string; values: Record<string, unknown> },
  outputs: ToolOutput[],
): Promise<void> {
  if (run.values.save !== true) return;
  const data = outputs.find((o) => o.fileName === KIT_FILE)?.data;
  if (!Value.Check(BrandKitSchema, data)) throw new Error('brand_kit_extract: the kit to save is missing or malformed');
  await insertBrandKit(tx, run.teamId, run.id, data);
}
