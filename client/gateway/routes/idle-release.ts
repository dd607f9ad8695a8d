/**
 * Idle release on request and pins [R6.9]: `POST /v1/idle-release` (operator) runs a host's
 * release now (or says what it would release), through the same workflow the host's schedule
 * runs; `POST|DELETE /v1/tasks/:id/pin` (user) keep a task's workspace from being released for
 * idleness, or let it be again.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { rebuildableOfWorkspaces } from '../../../db/catalog';
import { hostLiveness } from '../../../db/hosts';
import { setPinned } from '../../../db/tasks';
import { runIdleRelease } from '../engine/engine-cleanup';
import { EngineRefusal } from '../engine/typed-outcome';
import { ApiError, badRequest, notFound, refusalError } from '../api-error';
import type { GatewayContext } from '../context';
import { taskView } from '../task-view';
import { errorResponses, IdParams, Task } from '../schemas';

const IdleReleaseBody = Type.Object(
  {
    dryRun: Type.Optional(Type.Boolean()),
    hostId: Type.Optional(Type.String({ minLength: 1, maxLength: 200, pattern: '^[A-Za-z0-9._-]+$' })),
    idleForMs: Type.Optional(Type.Integer({ minimum: 0, maximum: 10 * 365 * 86_400_000 })),
  },
  { additionalProperties: false },
);

const IdleReleaseAnswer = Type.Object({
  released: Type.Array(
    Type.Object({
      taskId: Type.String(),
      operationId: Type.Union([Type.String(), Type.Null()]),
      leavesOut: Type.Array(
        Type.Object({
          repositoryId: Type.String(),
          patterns: Type.Array(Type.String()),
          reason: Type.Literal('rebuildable'),
        }),
        {
          description:
            "What the release leaves out of each repository's save, and why: its ignored files that match these patterns (the repository's `rebuildable` list) are rebuilt by the project's tools, not written by anyone; every other ignored file is saved with the work and restored. The job's report (GET /v1/cleanup-jobs/{operationId}) and the saved-work list name each path left out.",
        },
      ),
    }),
  ),
  kept: Type.Array(Type.Object({ taskId: Type.String(), reason: Type.String() })),
  dryRun: Type.Boolean(),
});

export function idleReleaseRoutes(ctx: GatewayContext): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.post(
      '/v1/idle-release',
      {
        config: { role: 'operator' },
        schema: {
          tags: ['cleanup'],
          body: Type.Optional(IdleReleaseBody),
          response: { 200: IdleReleaseAnswer, ...errorResponses },
        },
      },
      async (request) => {
        const hostId = request.body?.hostId ?? ctx.config.hostId;
        const idleForMs = request.body?.idleForMs ?? ctx.config.idleReleaseAfterMs;
        if (idleForMs === null) throw badRequest('Idle release is off here (TWS_IDLE_RELEASE_AFTER): give idleForMs.');
        const liveness = await hostLiveness(ctx.pool, hostId);
        if (liveness === 'unknown' && !(hostId === ctx.config.hostId && ctx.config.gatewayRunsLaunches))
          throw notFound('Host');
        if (liveness === 'down') throw new ApiError('host_unavailable');
        let result: Awaited<ReturnType<typeof runIdleRelease>>;
        try {
          result = await runIdleRelease(ctx.temporal, ctx.config, {
            hostId,
            idleForMs,
            dryRun: request.body?.dryRun ?? false,
          });
        } catch (err) {
          if (err instanceof EngineRefusal) throw refusalError(err.refusal);
          throw err;
        }
        // What each release leaves out, said before its save runs (the save names each path).
        const leaves = await rebuildableOfWorkspaces(
          ctx.pool,
          result.released.map((r) => r.taskId),
        );
        return {
          ...result,
          released: result.released.map((r) => ({
            ...r,
            leavesOut: (leaves.get(r.taskId) ?? []).map((l) => ({ ...l, reason: 'rebuildable' as const })),
          })),
        };
      },
    );

    for (const [method, pinned] of [
      ['POST', true],
      ['DELETE', false],
    ] as const) {
      app.route({
        method,
        url: '/v1/tasks/:id/pin',
        config: { role: 'user' },
        schema: {
          tags: ['tasks'],
          params: IdParams,
          response: { 200: Task, ...errorResponses },
        },
        handler: async (request) => {
          if (!(await setPinned(ctx.pool, request.params.id, pinned))) throw notFound('Task');
          return taskView(ctx.pool, ctx.config, request.params.id);
        },
      });
    }
  };
}
