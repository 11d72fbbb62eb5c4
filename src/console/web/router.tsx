// A few lines of client-side routing: the server answers index.html for every /console path, and
// links change the path with the History API instead of loading the page again.
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';

export const BASE = '/console';

const listeners = new Set<(path: string) => void>();

function currentPath(): string {
  const p = location.pathname.replace(/\/+$/, '');
  return p === '' ? BASE : p;
}

export function navigate(path: string, opts: { replace?: boolean } = {}): void {
  if (opts.replace) history.replaceState(null, '', path);
  else history.pushState(null, '', path);
  for (const l of listeners) l(currentPath());
}

/** The path shown, re-rendering on navigation and on the back and forward buttons. */
export function usePath(): string {
  const [path, setPath] = useState(currentPath);
  useEffect(() => {
    const onPop = () => setPath(currentPath());
    listeners.add(setPath);
    addEventListener('popstate', onPop);
    return () => {
      listeners.delete(setPath);
      removeEventListener('popstate', onPop);
    };
  }, []);
  return path;
}

interface LinkProps {
  href: string;
  children: ComponentChildren;
  'aria-current'?: 'page' | undefined;
}

/** An ordinary link (it opens in a new tab and works without the router); a plain click routes. */
export function Link(props: LinkProps) {
  const { href, children, ...rest } = props;
  const onClick = (e: MouseEvent) => {
    if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    e.preventDefault();
    navigate(href);
  };
  return (
    <a {...rest} href={href} onClick={onClick}>
      {children}
    </a>
  );
}
