// Each page's heading and document title; the heading takes focus after a navigation so a screen
// reader announces the new page and Tab starts from it.
import { useEffect, useRef } from 'preact/hooks';

export function PageTitle(p: { title: string; heading?: string }) {
  const ref = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    document.title = `${p.title} · Toolrun console`;
    // Only after an in-app navigation: on first load the browser's own start is right.
    if (document.body.dataset.navigated === 'true') ref.current?.focus();
    document.body.dataset.navigated = 'true';
  }, [p.title]);
  return (
    <h1 ref={ref} tabIndex={-1}>
      {p.heading ?? p.title}
    </h1>
  );
}
