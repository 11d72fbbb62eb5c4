import { vetHost } from '../../../net/outbound.js';
import type { RunContext } from '../../manifest.js';
import { RenderError, type RenderedPage, type RenderLimits } from './limits.js';
import { renderIsolated } from './supervisor.js';

export { applyRenderedColors, applyRenderedFonts } from './apply.js';
export { SiteFetcher } from './fetcher.js';
export { DEFAULT_RENDER_LIMITS, type RenderLimits } from './limits.js';
export { looksScriptRendered, SHELL_WARNING } from './shell.js';
export type { RenderedElementStyle, RenderedStyles } from './styles.js';

const MB = (n: number) => `${Math.round((n / 1024 / 1024) * 10) / 10} MB`;

/**
 * The render mode's part of a run: the page rendered when the operator named a browser, or null
 * (no browser, or the render failed: then the static reader reads the page, and a warning says
 * why it was not rendered). A cancel is not a failure: it is thrown. The render runs in a child
 * process of its own, bounded in memory (TOOLRUN_BROWSER_MEMORY_MB) and time (supervisor.ts).
 */
export async function renderForRun(
  url: string,
  ctx: Pick<RunContext, 'browserPath' | 'browserMemoryMb' | 'outbound' | 'signal' | 'logger' | 'workDir'>,
  limits: RenderLimits,
  warnings: string[],
  allowAddresses?: string[],
): Promise<RenderedPage | null> {
  if (!ctx.browserPath) return null;
  const allowAddress = allowAddresses ? (ip: string) => allowAddresses.includes(ip) : undefined;
  try {
    // A page the outbound rules refuse is not worth a browser: the static reader says why.
    const host = new URL(url).hostname;
    await vetHost(host, { allowPrivate: ctx.outbound.allowPrivate, allowAddress, signal: AbortSignal.any([ctx.signal, AbortSignal.timeout(limits.requestTimeoutMs)]), timeoutMs: limits.requestTimeoutMs });
  } catch {
    if (ctx.signal.aborted) throw ctx.signal.reason instanceof Error ? ctx.signal.reason : new Error('cancelled');
    return null;
  }
  try {
    const page = await renderIsolated(url, {
      executablePath: ctx.browserPath,
      allowPrivate: ctx.outbound.allowPrivate,
      allowAddresses,
      signal: ctx.signal,
      limits: { ...limits, memoryMb: ctx.browserMemoryMb ?? limits.memoryMb },
      workDir: ctx.workDir,
      logger: ctx.logger,
    });
    ctx.logger.debug({ render_memory_bound: page.memory.bound, render_peak_bytes: page.memory.peakBytes, render_bytes: page.stats.bytes }, 'brand_kit_extract: page rendered');
    if (page.truncated) warnings.push(`the rendered page is larger than the ${MB(limits.htmlBytes)} limit: long texts were shortened and what did not fit was not read`);
    return page;
  } catch (err) {
    if (ctx.signal.aborted) throw ctx.signal.reason instanceof Error ? ctx.signal.reason : new Error('cancelled');
    const why = err instanceof RenderError ? err.message : 'the browser failed';
    ctx.logger.warn({ err }, 'brand_kit_extract: render failed, reading the page statically');
    warnings.push(`the page could not be rendered (${why}): it was read without running its scripts`);
    return null;
  }
}
