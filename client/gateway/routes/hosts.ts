/** GET /v1/hosts (operator): the executor hosts, whether each is live, its workspace root and executors. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { listHosts } from '../../../db/hosts';
import { badRequest } from '../api-error';
import type { GatewayContext } from '../context';
import { DEFAULT_PAGE_LIMIT, PageQueryFields, pageOf } from '../pagination';
import { errorResponses } from '../schemas';

const Host = Type.Object({
  hostId: Type.String(),
  live: Type.Boolean(),
  lastSeenAt: Type.String(),
  workspaceRoot: Type.String(),
  executors: Type.Array(Type.String()),
  version: Type.String(),
});
const HostPage = pageOf(Host);
const PageQuery = Type.Object(PageQueryFields, { additionalProperties: false });

/** An opaque cursor: the last host id of the page (hosts are few and keyed by their id, so the keyset is the id alone). */
function readCursor(cursor: string | undefined): string | null {
  if (cursor === undefined) return null;
  const value = Buffer.from(cursor, 'base64url').toString('utf8');
  if (value.length === 0 || value.length > 200 || Buffer.from(value).toString('base64url') !== cursor)
    throw badRequest('The cursor is not one this list gave.');
  return value;
}

export function hostRoutes(ctx: GatewayContext): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(
      '/v1/hosts',
      {
        config: { role: 'operator' },
        schema: { tags: ['hosts'], querystring: PageQuery, response: { 200: HostPage, ...errorResponses } },
      },
      async (request) => {
        const limit = request.query.limit === undefined ? DEFAULT_PAGE_LIMIT : Number(request.query.limit);
        const rows = await listHosts(ctx.pool, limit + 1, readCursor(request.query.cursor));
        const page = rows.slice(0, limit);
        const last = page[page.length - 1];
        return {
          items: page,
          nextCursor: rows.length > limit && last ? Buffer.from(last.hostId).toString('base64url') : null,
        };
      },
    );
  };
}
