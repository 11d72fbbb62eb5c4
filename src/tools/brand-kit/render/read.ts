import type { BrowserContext, Page } from 'playwright-core';
import { RenderError } from './limits.js';
import { checkSerialised, serialiseScript, type Serialised } from './serialise.js';
import { checkReading, READ_PAGE_SCRIPT, type PageReading } from './styles.js';

export interface PageRead {
  reading: PageReading;
  /** The DOM serialised, without the CSSOM's CSS (the caller adds it). */
  dom: Serialised;
}

/**
 * Reads the loaded page from an isolated world of the reader's own (CDP Page.createIsolatedWorld,
 * as extensions' content scripts run): the page's DOM, but globals the page's scripts cannot
 * reach, so a page that redefines String.prototype.match, Array.from or getComputedStyle changes
 * nothing here. Both scripts bound their answers inside the page, so what crosses the pipe is at
 * most about 2 x (htmlChars + the CSS bound) characters, whatever the page holds.
 */
export async function readPage(context: BrowserContext, page: Page, opts: { htmlChars: number; timeoutMs: number }): Promise<PageRead> {
  const cdp = await context.newCDPSession(page);
  try {
    const { frameTree } = await cdp.send('Page.getFrameTree');
    const { executionContextId } = await cdp.send('Page.createIsolatedWorld', { frameId: frameTree.frame.id, worldName: 'toolrun-reader' });
    const evaluate = async (expression: string): Promise<unknown> => {
      const answer = await cdp.send('Runtime.evaluate', { expression, contextId: executionContextId, returnByValue: true, timeout: Math.max(1, opts.timeoutMs) });
      if (answer.exceptionDetails) throw new RenderError(`reading the page failed: ${(answer.exceptionDetails.exception?.description ?? answer.exceptionDetails.text).slice(0, 200)}`);
      return answer.result.value;
    };
    const reading = checkReading(await evaluate(READ_PAGE_SCRIPT));
    // The CSSOM's CSS goes into the same page: the DOM gets what is left of the bound.
    const cssChars = reading.css.reduce((n, css) => n + css.length + 40, 0);
    const budget = Math.max(0, opts.htmlChars - cssChars);
    return { reading, dom: checkSerialised(await evaluate(serialiseScript(budget)), budget) };
  } finally {
    await cdp.detach().catch(() => {});
  }
}
