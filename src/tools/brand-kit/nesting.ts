/**
 * HTML tree building costs time in proportion to the depth of open elements for each tag (the
 * spec's "has an element in scope" checks walk the stack), so a 2 MB page of unclosed <div>s
 * would take minutes of CPU in parse5. Browsers cap the depth too (Chromium at 512). Before
 * parsing, a linear scan tracks an upper estimate of the open-element depth; a page that goes
 * deeper than the cap is cut where it first does. What a brand kit needs (the head, the header)
 * comes first in a page, so the cut costs little.
 */
export const MAX_NESTING = 256;

const VOID = new Set(['area', 'base', 'br', 'col', 'embed', 'hr', 'img', 'input', 'link', 'meta', 'param', 'source', 'track', 'wbr', 'keygen', 'basefont', 'bgsound', 'frame']);
/** Elements whose content is text up to their end tag. */
const RAW_TEXT = new Set(['script', 'style', 'textarea', 'title', 'xmp', 'iframe', 'noembed', 'noframes', 'noscript', 'plaintext']);
/** Elements the parser closes implicitly when a sibling starts: they do not deepen the tree. */
const AUTO_CLOSED = new Set(['p', 'li', 'dt', 'dd', 'option', 'optgroup', 'tr', 'td', 'th', 'tbody', 'thead', 'tfoot', 'colgroup', 'caption', 'rb', 'rt', 'rp', 'rtc', 'html', 'head', 'body']);
/** An end tag further down the stack than this is treated as unmatched (so the scan stays linear). */
const END_TAG_SEARCH = 32;

/**
 * The page, cut before the first tag that would open more than maxDepth elements. Linear: every
 * character is looked at a bounded number of times (quotes in attribute values are not tracked,
 * which only makes the estimate rougher).
 */
export function limitNesting(html: string, maxDepth = MAX_NESTING): { html: string; cut: boolean } {
  const lower = html.toLowerCase();
  const stack: string[] = [];
  let foreign = 0;
  let i = 0;
  for (;;) {
    const lt = html.indexOf('<', i);
    if (lt < 0) break;
    if (html.startsWith('<!--', lt)) {
      const end = html.indexOf('-->', lt + 4);
      if (end < 0) break;
      i = end + 3;
      continue;
    }
    const m = /^<(\/?)([a-zA-Z][^\s/>]*)/.exec(html.slice(lt, lt + 64));
    if (!m) {
      i = lt + 1;
      continue;
    }
    const gt = html.indexOf('>', lt);
    if (gt < 0) break;
    i = gt + 1;
    const name = (m[2] ?? '').toLowerCase();
    if (m[1] === '/') {
      const at = stack.lastIndexOf(name);
      if (at >= 0 && at >= stack.length - END_TAG_SEARCH) {
        stack.length = at;
        if (name === 'svg' || name === 'math') foreign = Math.max(0, foreign - 1);
      }
      continue;
    }
    const selfClosing = html[gt - 1] === '/';
    if (VOID.has(name) || (AUTO_CLOSED.has(name) && !foreign) || (selfClosing && foreign)) continue;
    if (RAW_TEXT.has(name) && !foreign) {
      const end = lower.indexOf(`</${name}`, i);
      if (end < 0) break;
      i = end;
      continue;
    }
    stack.push(name);
    if (name === 'svg' || name === 'math') foreign++;
    if (stack.length > maxDepth) return { html: html.slice(0, lt), cut: true };
  }
  return { html, cut: false };
}
