// Loading a page's data: the value, or a message while it loads or when it failed, and a reload.
import { useCallback, useEffect, useState } from 'preact/hooks';
import { ConsoleError } from '../api.ts';

export type Loaded<T> = { state: 'loading' } | { state: 'error'; message: string } | { state: 'ready'; value: T };

export function useLoad<T>(load: () => Promise<T>): [Loaded<T>, () => Promise<void>] {
  const [loaded, setLoaded] = useState<Loaded<T>>({ state: 'loading' });
  const reload = useCallback(async () => {
    try {
      setLoaded({ state: 'ready', value: await load() });
    } catch (err) {
      setLoaded({ state: 'error', message: errorText(err) });
    }
    // The loader is fixed for the page's life; its identity changing on each render must not reload.
  }, []);
  useEffect(() => {
    void reload();
  }, [reload]);
  return [loaded, reload];
}

export function errorText(err: unknown): string {
  if (err instanceof ConsoleError) return err.message;
  return 'The service could not be reached. Check the connection and try again.';
}

export function Loading<T>(p: { loaded: Loaded<T> }) {
  if (p.loaded.state === 'loading') return <p role="status">Loading…</p>;
  if (p.loaded.state === 'error')
    return (
      <p role="alert" class="form-error">
        {p.loaded.message}
      </p>
    );
  return null;
}
