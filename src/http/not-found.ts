import FindMyWay from 'find-my-way';
import type { FastifyInstance } from 'fastify';

/**
 * Fastify answers 404 for a known path with the wrong method. We keep a second router of every
 * registered path so the not-found handler can tell 405 (with Allow) from 404.
 */
export function createMethodIndex(app: FastifyInstance) {
  const methodsByPath = new Map<string, Set<string>>();
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    const set = methodsByPath.get(route.url) ?? new Set<string>();
    for (const m of methods) set.add(m);
    methodsByPath.set(route.url, set);
  });
  let router: FindMyWay.Instance<FindMyWay.HTTPVersion.V1> | null = null;
  return {
    allowedMethods(url: string): string[] {
      if (!router) {
        router = FindMyWay({ ignoreTrailingSlash: false });
        for (const [path, methods] of methodsByPath) {
          router.on('GET', path, () => undefined, { methods: [...methods].sort() });
        }
      }
      const found = router.find('GET', url.split('?')[0] ?? url);
      return found ? ((found.store as { methods: string[] }).methods ?? []) : [];
    },
  };
}
