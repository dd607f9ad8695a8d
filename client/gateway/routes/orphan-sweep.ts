/** POST /v1/orphan-sweep (operator): run the sweep of this host's workspace root now, or only say what it would remove. */
import { randomUUID } from 'node:crypto';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { orphanSweepWorkflowId } from '../../../domain/workflow-ids';
import type { orphanSweep } from '../../../workflows';
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
        ctx.temporal.workflow.execute<typeof orphanSweep>('orphanSweep', {
          workflowId: orphanSweepWorkflowId(randomUUID()),
          taskQueue: ctx.config.taskQueue,
          args: [{ hostId: ctx.config.hostId, graceMs: ctx.config.orphanGraceMs, dryRun: request.body?.dryRun ?? false }],
        }),
    );
  };
}
