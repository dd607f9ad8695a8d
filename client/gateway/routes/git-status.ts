/** GET /v1/tasks/:id/git-status: one status for the task's canonical workspace [R1.5]. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { canonicalEnvironmentOf } from '../../../db/environments';
import { findTask } from '../../../db/tasks';
import { observeGitStatusOf } from '../engine/engine-hosts';
import { notFound, refusalError } from '../api-error';
import { typedRefusalOf } from '../engine/typed-outcome';
import type { GatewayContext } from '../context';
import { IdParams, Uuid, errorResponses } from '../schemas';

const GitStatus = Type.Object({
  taskEnvironmentId: Uuid,
  repositories: Type.Array(
    Type.Object({
      repositoryId: Uuid,
      branch: Type.Union([Type.String(), Type.Null()]),
      head: Type.Union([Type.String(), Type.Null()]),
      ahead: Type.Integer(),
      behind: Type.Integer(),
      files: Type.Array(Type.Object({ path: Type.String(), status: Type.String() })),
      observedAt: Type.String(),
    }),
  ),
});

export function gitStatusRoutes(ctx: GatewayContext): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(
      '/v1/tasks/:id/git-status',
      {
        config: { role: 'user' },
        schema: { tags: ['tasks'], params: IdParams, response: { 200: GitStatus, ...errorResponses } },
      },
      async (request) => {
        if (!(await findTask(ctx.pool, request.params.id))) throw notFound('Task');
        const env = await canonicalEnvironmentOf(ctx.pool, request.params.id);
        if (!env) throw notFound('Workspace');
        // Concurrent readers of one environment share one observation run.
        const observations = await observeGitStatusOf(ctx.temporal, ctx.config, env.id).catch((err: unknown) => {
          const refusal = typedRefusalOf(err);
          if (refusal && refusal.code !== 'internal') throw refusalError(refusal);
          throw err;
        });
        return {
          taskEnvironmentId: env.id,
          repositories: observations.map((o) => ({
            repositoryId: o.repositoryId,
            branch: o.branch,
            head: o.head,
            ahead: o.ahead,
            behind: o.behind,
            files: o.files,
            observedAt: o.observedAt,
          })),
        };
      },
    );
  };
}
