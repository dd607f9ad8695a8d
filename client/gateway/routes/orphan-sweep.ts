/**
 * POST /v1/orphan-sweep (operator): run the sweep of a host's workspace root now (`hostId`, default
 * this gateway's host), or only say what it would remove. The sweep runs on that host, through its
 * queue: a host with no record is a 404, one that is down `host_unavailable`.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { hostLiveness } from '../../../db/hosts';
import { runOrphanSweep } from '../engine/engine-hosts';
import { ApiError, notFound } from '../api-error';
import type { GatewayContext } from '../context';
import { errorResponses } from '../schemas';

export function orphanSweepRoutes(ctx: GatewayContext): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.post(
      '/v1/orphan-sweep',
      {
        config: { role: 'operator' },
        schema: {
          tags: ['cleanup'],
          body: Type.Optional(
            Type.Object(
              {
                dryRun: Type.Optional(Type.Boolean()),
                hostId: Type.Optional(Type.String({ minLength: 1, maxLength: 200, pattern: '^[A-Za-z0-9._-]+$' })),
              },
              { additionalProperties: false },
            ),
          ),
          response: {
            200: Type.Object({
              removed: Type.Array(Type.String()),
              kept: Type.Array(Type.Object({ name: Type.String(), reason: Type.String() })),
              dryRun: Type.Boolean(),
              /** Containers labelled as this service's on the host whose records are gone (the container executor); absent without an engine. */
              containers: Type.Optional(
                Type.Object({
                  removed: Type.Array(Type.String()),
                  kept: Type.Array(Type.Object({ id: Type.String(), reason: Type.String() })),
                }),
              ),
            }),
            ...errorResponses,
          },
        },
      },
      async (request) => {
        const hostId = request.body?.hostId ?? ctx.config.hostId;
        const liveness = await hostLiveness(ctx.pool, hostId);
        // A host with no record is known only as this gateway's own, when it runs that host's work.
        if (liveness === 'unknown' && !(hostId === ctx.config.hostId && ctx.config.gatewayRunsLaunches))
          throw notFound('Host');
        if (liveness === 'down') throw new ApiError('host_unavailable');
        return runOrphanSweep(ctx.temporal, ctx.config, hostId, request.body?.dryRun ?? false);
      },
    );
  };
}
