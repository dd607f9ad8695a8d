import { timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ApiError } from './api-error';

export type Role = 'user' | 'operator';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The least role a route needs; routes without it need none (health, metrics, OpenAPI). */
    role?: Role;
  }
}

function sameSecret(a: string, b: string): boolean {
  const ab = Buffer.from(a);
  const bb = Buffer.from(b);
  return ab.length === bb.length && timingSafeEqual(ab, bb);
}

/** From the Authorization header only, never the query: a URL ends up in logs, proxies and histories. */
function roleOf(request: FastifyRequest, tokens: { user: string; operator: string }): Role | null {
  const header = request.headers.authorization;
  const match = typeof header === 'string' ? /^Bearer\s+(\S+)$/i.exec(header) : null;
  if (!match) return null;
  const token = match[1]!;
  if (sameSecret(token, tokens.operator)) return 'operator';
  if (sameSecret(token, tokens.user)) return 'user';
  return null;
}

/** Bearer-token auth with two roles: missing or wrong token → 401, wrong role → 403. */
export function registerAuth(app: FastifyInstance, tokens: { user: string; operator: string }): void {
  app.decorateRequest('callerRole', null);
  app.addHook('onRequest', async (request) => {
    const needed = request.routeOptions.config?.role;
    if (!needed) return;
    const role = roleOf(request, tokens);
    if (!role) throw new ApiError('unauthorized');
    request.callerRole = role;
    if (needed === 'operator' && role !== 'operator')
      throw new ApiError(
        'forbidden',
        'This route needs the operator role: the operator token is operatorToken in .data/secrets.json, or TWS_OPERATOR_TOKEN.',
      );
  });
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The role of the caller's token, set by the auth hook on every route that needs one. */
    callerRole: Role | null;
  }
}
