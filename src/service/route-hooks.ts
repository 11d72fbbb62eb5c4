import type { FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import type { Scope } from '../auth/repository.js';
import type { StringChecks } from '../http/strings.js';

type Hook = (request: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void) => void;
type HookName = 'onRequest' | 'preValidation' | 'preHandler';

/** Our hooks first, then the route's own (Fastify takes one function or a list). */
function prepend(route: RouteOptions, name: HookName, ours: (Hook | undefined)[]): void {
  const add = ours.filter((h): h is Hook => h !== undefined);
  if (add.length === 0) return;
  const own = route[name] as unknown as Hook | Hook[] | undefined;
  const list = [...add, ...(own === undefined ? [] : Array.isArray(own) ? own : [own])];
  (route as unknown as Record<HookName, Hook[]>)[name] = list;
}

/**
 * Puts on each route, as it is added, the hooks it needs and no others: the key check for its
 * scope, then the character checks of the input its schema declares. They were app-wide hooks
 * that every request ran (a 404 and /healthz included) only to find out from
 * request.routeOptions, built afresh on each read, that there was nothing to do. A route's own
 * hooks of the same kind come after these, as they did after the app-wide ones; hooks of
 * encapsulated plugins (the console's guard) now come before them.
 */
export function addRouteHooks(route: RouteOptions, authFor: (scope: Scope) => Hook, strings: StringChecks): void {
  const scope = (route.config as { scope?: Scope } | undefined)?.scope;
  const checks = strings.routeHooks(route.schema);
  prepend(route, 'onRequest', [scope ? authFor(scope) : undefined, checks.onRequest]);
  prepend(route, 'preValidation', [checks.preValidation]);
  prepend(route, 'preHandler', [checks.preHandler]);
}
