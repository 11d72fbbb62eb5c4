import FindMyWay from 'find-my-way';
import type { FastifyInstance } from 'fastify';

/** Routes suggested in not-found messages: the API's own, not storage URLs or the docs UI. */
const API_PREFIX = '/v1/';
/** Longest path text quoted back in a message; the rest is cut (a URL may be 16 KiB). */
const QUOTED_PATH = 200;
/** Segments of a path compared; a longer path is near no route anyway. */
const COMPARED_SEGMENTS = 16;
/** Segment text compared letter by letter; longer unequal segments simply differ. */
const COMPARED_LETTERS = 64;
/** What a different method adds to a route's distance: less than a segment, more than a typo. */
const METHOD_COST = 0.5;
/** A segment added or left out; an empty one (a doubled or trailing slash) nearly costs nothing. */
const SEGMENT_COST = 1;
const EMPTY_SEGMENT_COST = 0.25;
/** A segment that shares less than half its letters with the route's is a different word. */
const UNRELATED_COST = 1.5;
/** Routes farther than this (one segment added or left out, a typo or two) are not suggested. */
const MAX_SUGGESTED_COST = 1.25;

interface Route {
  method: string;
  /** Fastify form: /v1/runs/:run_id */
  url: string;
  segments: string[];
}

function segmentsOf(path: string): string[] {
  return path.split('/').slice(1);
}

/** /v1/runs/:run_id as the API's documents write it: /v1/runs/{run_id}. */
function documented(url: string): string {
  return url.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
}

function quoted(path: string): string {
  return path.length > QUOTED_PATH ? `${path.slice(0, QUOTED_PATH)}...` : path;
}

function levenshtein(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    prev = row;
  }
  return prev[b.length]!;
}

/** Path parameters that are UUIDs (the spec: run_id, asset_id, file_id, endpoint_id); tool_id is a name. */
const UUID_PARAM = /^:(run|asset|file|endpoint)_id$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** A word where an id belongs: as likely a typo of a route's segment as an id. */
const MISFIT_PARAM_COST = 0.5;

/** 0 for a match (a parameter matches a segment of its form), up to 0.5 for a typo, then unrelated. */
function segmentCost(got: string, want: string): number {
  if (want.startsWith(':')) return got.length === 0 ? UNRELATED_COST : !UUID_PARAM.test(want) || UUID.test(got) ? 0 : MISFIT_PARAM_COST;
  if (got === want) return 0;
  const a = got.toLowerCase();
  const b = want.toLowerCase();
  if (a.length > COMPARED_LETTERS || b.length > COMPARED_LETTERS) return UNRELATED_COST;
  const share = levenshtein(a, b) / Math.max(a.length, b.length);
  return share <= 0.5 ? share : UNRELATED_COST;
}

const gapCost = (segment: string): number => (segment === '' ? EMPTY_SEGMENT_COST : SEGMENT_COST);

/** Edit distance over segments: a segment added or left out costs gapCost, a changed one its segmentCost. */
function pathDistance(got: string[], want: string[]): number {
  let prev = [0];
  for (let j = 1; j <= want.length; j++) prev[j] = prev[j - 1]! + gapCost(want[j - 1]!);
  for (let i = 1; i <= got.length; i++) {
    const row = [prev[0]! + gapCost(got[i - 1]!)];
    for (let j = 1; j <= want.length; j++) {
      row[j] = Math.min(prev[j]! + gapCost(got[i - 1]!), row[j - 1]! + gapCost(want[j - 1]!), prev[j - 1]! + segmentCost(got[i - 1]!, want[j - 1]!));
    }
    prev = row;
  }
  return prev[want.length]!;
}

function orList(items: string[]): string {
  return items.length <= 1 ? (items[0] ?? '') : `${items.slice(0, -1).join(', ')} or ${items[items.length - 1]}`;
}

/**
 * Fastify answers 404 for a known path with the wrong method. We keep a second router of every
 * registered path so the not-found handler can tell 405 (with Allow) from 404, and the routes
 * themselves so either answer can name the routes nearest to what was asked.
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
  let apiRoutes: Route[] | null = null;

  const routes = (): Route[] =>
    (apiRoutes ??= [...methodsByPath].flatMap(([url, methods]) =>
      url.startsWith(API_PREFIX)
        ? [...methods].filter((m) => m !== 'HEAD' && m !== 'OPTIONS').map((method) => ({ method, url, segments: segmentsOf(url) }))
        : [],
    ));

  /** The API routes nearest to method + path, best first; none when nothing is near. */
  const nearest = (method: string, path: string, exclude: (r: Route) => boolean): string[] => {
    const got = segmentsOf(path).slice(0, COMPARED_SEGMENTS);
    const scored = routes()
      .filter((r) => !exclude(r))
      .map((r) => ({ r, cost: pathDistance(got, r.segments) + (r.method === method ? 0 : METHOD_COST) }))
      .filter((s) => s.cost <= MAX_SUGGESTED_COST)
      .sort((a, b) => a.cost - b.cost || a.r.url.localeCompare(b.r.url) || a.r.method.localeCompare(b.r.method));
    const best = scored[0]?.cost ?? 0;
    return scored
      .filter((s) => s.cost <= best + 0.25)
      .slice(0, 3)
      .map((s) => `${s.r.method} ${documented(s.r.url)}`);
  };

  return {
    allowedMethods(url: string): string[] {
      if (!router) {
        router = FindMyWay({ ignoreTrailingSlash: false });
        for (const [path, methods] of methodsByPath) {
          router.on('GET', path, () => undefined, { methods: [...methods].sort(), path });
        }
      }
      const found = router.find('GET', url.split('?')[0] ?? url);
      return found ? ((found.store as { methods: string[] }).methods ?? []) : [];
    },

    /** The 404 message: what was asked, and the routes nearest to it. */
    notFoundMessage(method: string, url: string): string {
      const path = url.split('?')[0] ?? url;
      const near = nearest(method, path, () => false);
      const hint = near.length ? `Did you mean ${orList(near)}?` : 'GET /v1/openapi.json lists every route.';
      const prefix = path.startsWith(API_PREFIX) ? '' : 'Every path starts with /v1. ';
      return `No route ${method} ${quoted(path)}. ${prefix}${hint}`;
    },

    /** The 405 message: the methods the path takes, and a near route that takes this method. */
    methodNotAllowedMessage(method: string, url: string, allowed: string[]): string {
      const path = url.split('?')[0] ?? url;
      const found = router?.find('GET', path);
      const template = found ? documented((found.store as { path: string }).path) : quoted(path);
      const near = nearest(method, path, (r) => r.method !== method || documented(r.url) === template);
      const more = near.length ? ` Did you mean ${orList(near)}?` : '';
      return `${template} does not take ${method}; it takes ${orList(allowed)}.${more}`;
    },
  };
}
