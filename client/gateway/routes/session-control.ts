/**
 * POST /v1/sessions/:id/stop, DELETE /v1/sessions/:id, GET /v1/sessions/:id/workspace: the
 * routes that act on a session already there (routes/sessions.ts launches, lists and resumes).
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { canonicalEnvironmentOf, environmentById } from '../../../db/environments';
import { inventoryOf } from '../../../db/inventory';
import { deleteSession, findSession } from '../../../db/sessions';
import { taskRepositories } from '../../../db/tasks';
import { sessionRunWorkflowId } from '../../../domain/workflow-ids';
import { cancelStartingRun, runStop } from '../engine/engine-client';
import { notFound } from '../api-error';
import type { GatewayContext } from '../context';
import { IdParams, errorResponses } from '../schemas';
import { Session, Workspace } from '../session-schemas';
import { sessionViews } from './session-views';

export function sessionControlRoutes(ctx: GatewayContext): FastifyPluginAsyncTypebox {
  const { sessionView } = sessionViews(ctx);

  async function stop(sessionId: string): Promise<void> {
    // A session still starting has a run in flight that may yet spawn its agent: it is
    // cancelled (it undoes what it made), and waited for, so the stop (and a delete after it)
    // cannot leave an agent behind.
    const session = await findSession(ctx.pool, sessionId);
    if (session?.state === 'starting')
      await cancelStartingRun(ctx.temporal, sessionRunWorkflowId(sessionId, session.admitted_run));
    if (!(await findSession(ctx.pool, sessionId))) return; // a first launch cancelled: nothing of it is left
    await runStop(ctx.temporal, ctx.config, sessionId);
  }

  return async (app) => {
    app.post(
      '/v1/sessions/:id/stop',
      {
        config: { role: 'user' },
        schema: { tags: ['sessions'], params: IdParams, response: { 200: Session, ...errorResponses } },
      },
      async (request) => {
        const session = await findSession(ctx.pool, request.params.id);
        if (!session) throw notFound('Session');
        await stop(session.id);
        return sessionView(session.id);
      },
    );

    // Deleting a session stops its agent and forgets the session; it never removes files,
    // worktrees or branches, even for the last session of a task [R6].
    app.delete(
      '/v1/sessions/:id',
      {
        config: { role: 'user' },
        schema: { tags: ['sessions'], params: IdParams, response: { 204: Type.Null(), ...errorResponses } },
      },
      async (request, reply) => {
        const session = await findSession(ctx.pool, request.params.id);
        if (!session) throw notFound('Session');
        await stop(session.id);
        // Nothing else: not a cleanup trigger, even for the last session of a borrower of an
        // archived owner's environment (its task's own archive or delete ends that borrow).
        await deleteSession(ctx.pool, session.id);
        return reply.code(204).send(null);
      },
    );

    app.get(
      '/v1/sessions/:id/workspace',
      {
        config: { role: 'user' },
        schema: { tags: ['sessions'], params: IdParams, response: { 200: Workspace, ...errorResponses } },
      },
      async (request) => {
        const session = await findSession(ctx.pool, request.params.id);
        if (!session) throw notFound('Session');
        // A session with no environment of its own (legacy) sees its task's canonical one when
        // there is one: the source checkout only stands in where no workspace exists [R2.3].
        const env = session.environment_id
          ? await environmentById(ctx.pool, session.environment_id)
          : await canonicalEnvironmentOf(ctx.pool, session.task_id);
        // The environment's path wins over anything recorded on the session [R2.2].
        if (env?.workspace_path && env.materialized && (env.status === 'ready' || env.status === 'stopped')) {
          const rows = await inventoryOf(ctx.pool, env.id);
          return {
            taskEnvironmentId: env.id,
            executorType: env.executor_type,
            workspacePath: env.workspace_path,
            repositories: rows.map((r) => ({
              repositoryId: r.repository_id,
              worktreePath: r.worktree_path ?? env.workspace_path!,
              branch: r.worktree_branch,
            })),
            source: 'environment' as const,
          };
        }
        if (env) {
          // An environment with no workspace now says where it stands; its session's source
          // checkout never stands in for it [R2.2]: released (archive then unarchive, a reset: the
          // next launch or resume materializes afresh), being prepared, or failed.
          const source =
            env.status === 'released'
              ? ('released' as const)
              : env.status === 'creating'
                ? ('preparing' as const)
                : ('failed' as const);
          return {
            taskEnvironmentId: env.id,
            executorType: env.executor_type,
            workspacePath: null,
            repositories: [],
            source,
          };
        }
        // Only a session that never had an environment may see its source checkout [R2.3].
        const repos = await taskRepositories(ctx.pool, session.task_id);
        if (repos.length === 0) throw notFound('Workspace');
        return {
          taskEnvironmentId: null,
          executorType: session.executor_type,
          workspacePath: repos[0]!.repository_path,
          repositories: repos.map((r) => ({
            repositoryId: r.repository_id,
            worktreePath: r.repository_path,
            branch: null,
          })),
          source: 'legacy_fallback' as const,
        };
      },
    );
  };
}
