/** A text node longer than this is shortened to it (a <style>'s CSS is kept whole). */
export const MAX_TEXT_CHARS = 64 * 1024;
/** An attribute longer than this (a data: URL of a photo) is left out. */
export const MAX_ATTRIBUTE_CHARS = 256 * 1024;

/**
 * The document serialised as HTML (the HTML fragment serialisation algorithm, the same markup
 * `outerHTML` gives), evaluated in the reader's isolated world and bounded there, before anything
 * crosses to the service: at most `budget` characters, texts over MAX_TEXT_CHARS shortened,
 * attributes over MAX_ATTRIBUTE_CHARS left out, comments and shadow trees left out (as
 * `page.content()` left shadow trees out); once the budget is spent the rest is not serialised
 * (open elements stay open: the HTML parser closes them). Control characters and lone surrogates
 * are dropped, so that JSON on the way out at most doubles the size (a quote or backslash is two
 * characters; a control character would be six). Returns the markup, whether its end was cut,
 * and how many characters the document would have taken whole (counted up to the cut).
 */
export function serialiseScript(budget: number): string {
  return `((budget) => {
  const VOID = new Set(['area', 'base', 'basefont', 'bgsound', 'br', 'col', 'embed', 'frame', 'hr', 'img', 'input', 'keygen', 'link', 'meta', 'param', 'source', 'track', 'wbr']);
  const RAW = new Set(['style', 'script', 'xmp', 'iframe', 'noembed', 'noframes', 'plaintext', 'noscript']);
  const CONTROL = /[\\u0000-\\u0008\\u000b\\u000e-\\u001f\\u007f]|[\\ud800-\\udbff](?![\\udc00-\\udfff])|(?<![\\ud800-\\udbff])[\\udc00-\\udfff]/g;
  const TEXT = /[&<>\\u00a0]/g;
  const ATTR = /[&"\\u00a0]/g;
  const ENTITY = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', '\\u00a0': '&nbsp;' };
  const clean = (s) => s.replace(CONTROL, '');
  const out = [];
  let size = 0;
  let full = 0;
  let cut = false;
  const put = (s) => {
    if (cut) return;
    if (size + s.length > budget) { cut = true; return; }
    out.push(s);
    size += s.length;
  };
  const doc = document;
  if (doc.doctype) { put('<!DOCTYPE ' + clean(doc.doctype.name).slice(0, 100) + '>'); full += 15; }
  const stack = [[doc.documentElement, false]];
  while (stack.length && !cut) {
    const [node, closing] = stack.pop();
    if (!node) continue;
    if (closing) { put('</' + node.localName + '>'); full += node.localName.length + 3; continue; }
    if (node.nodeType === 3 || node.nodeType === 4) {
      const data = node.data;
      full += data.length;
      const parent = node.parentNode;
      const raw = parent && parent.nodeType === 1 && RAW.has(parent.localName) && parent.namespaceURI === 'http://www.w3.org/1999/xhtml';
      const whole = raw && parent.localName === 'style';
      const text = clean(whole ? data : data.slice(0, ${MAX_TEXT_CHARS}));
      put(raw ? text : text.replace(TEXT, (c) => ENTITY[c]));
      continue;
    }
    if (node.nodeType !== 1) continue;
    const name = node.localName;
    let open = '<' + name;
    for (const a of node.attributes) {
      full += a.name.length + a.value.length + 4;
      if (a.value.length > ${MAX_ATTRIBUTE_CHARS}) continue;
      open += ' ' + a.name + '="' + clean(a.value).replace(ATTR, (c) => ENTITY[c]) + '"';
    }
    put(open + '>');
    full += name.length + 2;
    if (VOID.has(name) && node.namespaceURI === 'http://www.w3.org/1999/xhtml') continue;
    stack.push([node, true]);
    const children = name === 'template' && node.content ? node.content.childNodes : node.childNodes;
    for (let i = children.length - 1; i >= 0; i--) stack.push([children[i], false]);
  }
  return { html: out.join(''), cut, full };
})(${Math.max(0, Math.floor(budget))})`;
}

export interface Serialised {
  html: string;
  /** Its end was not serialised: the budget was spent. */
  cut: boolean;
  /** Characters the document would have taken whole, counted up to the cut. */
  full: number;
}

/** What the serialiser returned, checked (the isolated world keeps the page's scripts out, but nothing is taken on trust). */
export function checkSerialised(raw: unknown, budget: number): Serialised {
  const o = (raw && typeof raw === 'object' ? raw : {}) as Record<string, unknown>;
  const html = typeof o.html === 'string' ? o.html.slice(0, budget) : '';
  return { html, cut: o.cut === true || (typeof o.html === 'string' && o.html.length > budget), full: typeof o.full === 'number' && Number.isFinite(o.full) ? o.full : html.length };
}
