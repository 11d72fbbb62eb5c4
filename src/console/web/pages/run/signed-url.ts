// A signed URL for a preview, asked for once when the preview shows.
import { useEffect, useState } from 'preact/hooks';
import type { SignedUrl } from '../../api-runs.ts';
import { errorText } from '../../components/load.tsx';

/** A signed URL fetched once for a preview; null until it comes (or when it could not). */
export function useSignedUrl(load: () => Promise<SignedUrl>): { url: string | null; error: string | null } {
  const [state, setState] = useState<{ url: string | null; error: string | null }>({ url: null, error: null });
  useEffect(() => {
    let current = true;
    load().then(
      (u) => current && setState({ url: u.url, error: null }),
      (err: unknown) => current && setState({ url: null, error: errorText(err) }),
    );
    return () => {
      current = false;
    };
  }, []);
  return state;
}

