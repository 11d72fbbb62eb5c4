import { OutboundError, type OutboundResponse } from '../../../net/outbound.js';
import { Fetcher, type FetcherOptions } from '../fetch.js';
import type { RenderedPage } from './render.js';

/**
 * The static reader's fetcher, answering from the render where it can: the page URL gets the
 * rendered DOM (once: the page is read once), stylesheets and images the browser loaded come
 * from what it received; anything else is fetched as usual, on the same outbound rules. Without
 * a render it is the usual fetcher.
 */
export class SiteFetcher extends Fetcher {
  private pageServed = false;
  private readonly rendered: RenderedPage | null;
  private readonly pageUrl: string | null;

  constructor(opts: FetcherOptions, render: { url: string; page: RenderedPage } | null = null) {
    super(opts);
    this.rendered = render?.page ?? null;
    this.pageUrl = render?.url ?? null;
  }

  override async get(url: string, maxBytes: number, accept: string): Promise<OutboundResponse> {
    const r = this.rendered;
    if (r && url === this.pageUrl && !this.pageServed) {
      this.pageServed = true;
      const body = Buffer.from(r.html, 'utf8');
      if (body.length > maxBytes) throw new OutboundError('too_large', `the response is larger than ${maxBytes} bytes`);
      return { status: 200, headers: { 'content-type': 'text/html; charset=utf-8' }, body, url: r.finalUrl, address: '' };
    }
    const kept = r?.resources.get(url);
    if (kept && kept.body.length <= maxBytes) return kept;
    return super.get(url, maxBytes, accept);
  }
}
