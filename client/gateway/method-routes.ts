/**
 * Which methods each route path answers, so a request of another method on a path that exists
 * is `405 method_not_allowed` with an `Allow` header (RFC 9110), not a 404. Collected from the
 * routes as they are registered; a path parameter (`:id`) matches one segment.
 */
import type { FastifyInstance } from 'fastify';

export interface MethodRoutes {
  /** The methods the routes of this path answer (sorted); empty when no route has the path. */
  allowedFor(url: string): string[];
}

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

function patternOf(routePath: string): RegExp {
  const segments = routePath.split('/').map((segment) => (segment.startsWith(':') ? '[^/]+' : escape(segment)));
  return new RegExp(`^${segments.join('/')}/?$`);
}

/** Registered before the routes: it watches them being added. */
export function collectMethodRoutes(app: FastifyInstance): MethodRoutes {
  const byPath = new Map<string, { pattern: RegExp; methods: Set<string> }>();
  app.addHook('onRoute', (route) => {
    let entry = byPath.get(route.url);
    if (!entry) byPath.set(route.url, (entry = { pattern: patternOf(route.url), methods: new Set() }));
    for (const method of Array.isArray(route.method) ? route.method : [route.method]) entry.methods.add(method);
  });
  return {
    allowedFor(url) {
      const pathOnly = url.split('?')[0] ?? '';
      const methods = new Set<string>();
      for (const { pattern, methods: these } of byPath.values())
        if (pattern.test(pathOnly)) for (const m of these) methods.add(m);
      return [...methods].sort();
    },
  };
}
