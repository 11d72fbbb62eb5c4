import { vetHost } from '../../../net/outbound.js';
import type { RunContext } from '../../manifest.js';
import { renderPage, RenderError, type RenderedPage, type RenderLimits } from './render.js';

export { applyRenderedColors, applyRenderedFonts } from './apply.js';
export { SiteFetcher } from './fetcher.js';
export { DEFAULT_RENDER_LIMITS, type RenderLimits } from './render.js';
export { looksScriptRendered, SHELL_WARNING } from './shell.js';
export type { RenderedElementStyle, RenderedStyles } from './styles.js';

/**
 * The render mode's part of a run: the page rendered when the operator named a browser, or null
 * (no browser, or the render failed: then the static reader reads the page, and a warning says
 * why it was not rendered). A cancel is not a failure: it is thrown.
 */
export async function renderForRun(
  url: string,
  ctx: Pick<RunContext, 'browserPath' | 'outbound' | 'signal' | 'logger'>,
  limits: RenderLimits,
  warnings: string[],
  allowAddress?: (ip: string) => boolean,
): Promise<RenderedPage | null> {
  if (!ctx.browserPath) return null;
  try {
    // A page the outbound rules refuse is not worth a browser: the static reader says why.
    const host = new URL(url).hostname;
    await vetHost(host, { allowPrivate: ctx.outbound.allowPrivate, allowAddress, signal: AbortSignal.any([ctx.signal, AbortSignal.timeout(limits.requestTimeoutMs)]), timeoutMs: limits.requestTimeoutMs });
  } catch {
    if (ctx.signal.aborted) throw ctx.signal.reason instanceof Error ? ctx.signal.reason : new Error('cancelled');
    return null;
  }
  try {
    return await renderPage(url, {
      executablePath: ctx.browserPath,
      allowPrivate: ctx.outbound.allowPrivate,
      allowAddress,
      signal: ctx.signal,
      limits,
      logger: ctx.logger,
    });
  } catch (err) {
    if (ctx.signal.aborted) throw ctx.signal.reason instanceof Error ? ctx.signal.reason : new Error('cancelled');
    const why = err instanceof RenderError ? err.message : 'the browser failed';
    ctx.logger.warn({ err }, 'brand_kit_extract: render failed, reading the page statically');
    warnings.push(`the page could not be rendered (${why}): it was read without running its scripts`);
    return null;
  }
}
