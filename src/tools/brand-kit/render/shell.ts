import type { DefaultTreeAdapterMap } from 'parse5';

type Node = DefaultTreeAdapterMap['node'];

const SKIPPED = new Set(['script', 'style', 'noscript', 'template', 'svg', 'title']);
/** What a <head> holds: not content. */
const HEAD_ONLY = new Set(['head', 'meta', 'link', 'base']);
/** Where single-page-app frameworks mount their output. */
const MOUNT_ID = /^(root|app|__next|__nuxt|___gatsby|svelte|main|application|react-root|vue-app)$/i;
const MAX_NODES = 20_000;

export interface ShellSigns {
  /** Characters of visible text (whitespace collapsed). */
  text: number;
  /** <script src> and inline module scripts. */
  scripts: number;
  /** Elements in <body> besides scripts and styles. */
  elements: number;
  /** An element whose id is a framework's mount point (root, app, __next, ...). */
  mount: boolean;
}

/** Counts what tells an empty shell from a page in its parsed tree: text, scripts, elements, a mount point. */
export function shellSigns(root: Node): ShellSigns {
  const signs: ShellSigns = { text: 0, scripts: 0, elements: 0, mount: false };
  const stack: Node[] = [root];
  let seen = 0;
  while (stack.length && seen++ < MAX_NODES) {
    const n = stack.pop()!;
    if (n.nodeName === '#text' && 'value' in n) {
      signs.text += n.value.replace(/\s+/g, ' ').trim().length;
      continue;
    }
    if (!('tagName' in n)) {
      if ('childNodes' in n) stack.push(...n.childNodes);
      continue;
    }
    if (n.tagName === 'script') {
      const type = n.attrs.find((a) => a.name === 'type')?.value ?? '';
      if (n.attrs.some((a) => a.name === 'src') || type === 'module') signs.scripts++;
      continue;
    }
    if (SKIPPED.has(n.tagName)) continue;
    if (n.tagName !== 'html' && n.tagName !== 'body' && !HEAD_ONLY.has(n.tagName)) signs.elements++;
    if (n.attrs.some((a) => a.name === 'id' && MOUNT_ID.test(a.value))) signs.mount = true;
    stack.push(...n.childNodes);
  }
  return signs;
}

/**
 * An empty shell: scripts, next to no text, and either a framework's mount point or hardly any
 * elements. A short static page with a script or two still has its elements and its words.
 */
export function looksScriptRendered(root: Node): boolean {
  const s = shellSigns(root);
  return s.scripts > 0 && s.text < 200 && (s.mount || s.elements <= 15);
}

export const SHELL_WARNING =
  'the page looks rendered by script (its HTML is an empty shell that scripts fill): read without running them, so its name, colours, fonts and logo may be missing; the render mode (TOOLRUN_BROWSER_PATH) reads such pages';
