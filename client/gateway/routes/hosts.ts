/**
 * GET /v1/hosts (operator): the executor hosts, whether each is live, its workspace root and
 * executors, its disk as last measured and whether it is low; GET /v1/hosts/:id/disk (operator):
 * one host's disk and its largest workspaces, for `tws disk` [R6.11].
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { largestWorkspaces } from '../../../db/disk';
import { findHost, listHosts } from '../../../db/hosts';
import { badRequest, notFound } from '../api-error';
import type { GatewayContext } from '../context';
import { DEFAULT_PAGE_LIMIT, PageQueryFields, pageOf } from '../pagination';
import { errorResponses } from '../schemas';
import { ContainersStatus } from '../preparation-view';

/** The host's filesystem and workspaces as its worker last measured them; null before the first measurement. */
const HostDiskSchema = Type.Union([
  Type.Object({
    freeBytes: Type.Number(),
    totalBytes: Type.Number(),
    workspaceBytes: Type.Number(),
    measuredAt: Type.String(),
  }),
  Type.Null(),
]);

const Host = Type.Object({
  hostId: Type.String(),
  live: Type.Boolean(),
  lastSeenAt: Type.String(),
  workspaceRoot: Type.String(),
  executors: Type.Array(Type.String()),
  version: Type.String(),
  /** Whether it can run `container` agents, as its worker last found it; `reason` when not (not_configured, engine_unreachable, image_missing, not_root, not_reported). */
  containers: ContainersStatus,
  disk: HostDiskSchema,
  lowDisk: Type.Boolean(),
});
const HostPage = pageOf(Host);
const HostDiskQuery = Type.Object(
  {
    limit: Type.Optional(
      Type.String({
        ...PageQueryFields.limit,
        description: 'How many of the largest workspaces: 1 to 200 (default 20)',
      }),
    ),
  },
  { additionalProperties: false },
);
const HostDiskAnswer = Type.Object({
  hostId: Type.String(),
  disk: HostDiskSchema,
  lowDisk: Type.Boolean(),
  largest: Type.Array(
    Type.Object({
      taskId: Type.String(),
      taskEnvironmentId: Type.String(),
      bytes: Type.Number(),
      measuredAt: Type.String(),
    }),
  ),
});
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

    app.get(
      '/v1/hosts/:id/disk',
      {
        config: { role: 'operator' },
        schema: {
          tags: ['hosts'],
          params: Type.Object({ id: Type.String({ minLength: 1, maxLength: 200 }) }),
          querystring: HostDiskQuery,
          response: { 200: HostDiskAnswer, ...errorResponses },
        },
      },
      async (request) => {
        const host = await findHost(ctx.pool, request.params.id);
        if (!host) throw notFound('Host');
        const largest = await largestWorkspaces(ctx.pool, host.hostId, Number(request.query.limit ?? 20));
        return {
          hostId: host.hostId,
          disk: host.disk,
          lowDisk: host.lowDisk,
          largest: largest.map((w) => ({
            taskId: w.taskId,
            taskEnvironmentId: w.environmentId,
            bytes: w.bytes,
            measuredAt: w.measuredAt,
          })),
        };
      },
    );
  };
}
