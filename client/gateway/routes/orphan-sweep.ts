/** POST /v1/orphan-sweep (operator): run the sweep of this host's workspace root now, or only say what it would remove. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { runOrphanSweep } from '../../engine-client';
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
          body: Type.Optional(Type.Object({ dryRun: Type.Optional(Type.Boolean()) }, { additionalProperties: false })),
          response: { 200: Type.Object({ removed: Type.Array(Type.String()), kept: Type.Array(Type.Object({ name: Type.String(), reason: Type.String() })), dryRun: Type.Boolean() }), ...errorResponses },
        },
      },
      async (request) =>
        runOrphanSweep(ctx.temporal, ctx.config, request.body?.dryRun ?? false),
    );
  };
}
