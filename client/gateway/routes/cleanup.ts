/** Archive, unarchive, delete, environment reset and board delete: the requests that start (or end) a cleanup [R6]; its jobs are watched in routes/cleanup-jobs.ts. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { environmentOwnerElsewhere } from '../../../db/admission-target';
import { activeJobOfTask, continuedJobOf } from '../../../db/cleanup-jobs';
import { boardExists } from '../../../db/catalog';
import { findTask, unarchiveTask } from '../../../db/tasks';
import { cancelledByUnarchive, type CleanupTrigger } from '../../../domain/cleanup';
import { abandonEnvironment, cancelCleanup, startBoardDelete, startCleanup } from '../engine/engine-cleanup';
import { ApiError, badRequest, notFound, refusalError } from '../api-error';
import type { GatewayContext } from '../context';
import { taskView } from '../task-view';
import { IdParams, Links, Task, Uuid, errorResponses } from '../schemas';
import { temporalLinks } from '../engine/temporal-links';
import { Ended } from './cleanup-jobs';

const Accepted = Type.Object({
  operationId: Uuid,
  workflowId: Type.String(),
  links: Links,
  /** A cascade's: each member's own job (the root's, when it was taken, has the operation's id). */
  operations: Type.Optional(Type.Array(Type.Object({ taskId: Uuid, operationId: Uuid }))),
  /** A cascade's: the members it left out, with why (an archive's already archived tasks). */
  skipped: Type.Optional(Type.Array(Type.Object({ taskId: Uuid, reason: Type.String() }))),
});
/** No body, `{}` or `{ "abandon": false }`: the audited reset; `{ "abandon": true }`: release without touching a file. */
const ResetBody = Type.Optional(
  Type.Object({ abandon: Type.Optional(Type.Boolean()) }, { additionalProperties: false }),
);
/** Query flags are spelled out: `true` or `false`. */
const QueryFlag = Type.Union([Type.Literal('true'), Type.Literal('false')]);

export function cleanupRoutes(ctx: GatewayContext): FastifyPluginAsyncTypebox {
  async function start(
    taskId: string,
    trigger: CleanupTrigger,
    opts: { cascade?: boolean; discardChanges?: boolean } = {},
  ) {
    if (!(await findTask(ctx.pool, taskId))) throw notFound('Task');
    const started = await startCleanup(ctx.temporal, ctx.config, { taskId, trigger, ...opts });
    if (!started.ok) {
      const extra = Array.isArray(started.details.dirtyRepositories)
        ? { dirtyRepositories: started.details.dirtyRepositories }
        : {};
      throw new ApiError(started.code, undefined, extra);
    }
    const { operations, skipped } = started;
    return {
      operationId: started.operationId,
      workflowId: started.workflowId,
      links: temporalLinks(ctx.config, started.workflowId),
      ...(operations ? { operations, skipped } : {}),
    };
  }

  /**
   * Abandon the environment's workspace: a reset job that waits (its audit refused) is ended by it
   * (the same job row tells: cancelled, the abandoned paths in its report); with no job active,
   * a job of its own does it. Another kind of active job is the barrier it is.
   */
  async function abandon(taskId: string) {
    if (!(await findTask(ctx.pool, taskId))) throw notFound('Task');
    const job = await activeJobOfTask(ctx.pool, taskId);
    if (job && job.trigger !== 'environment_reset') throw new ApiError('task_cleanup_in_progress');
    if (job) {
      const ended = await cancelCleanup(ctx.temporal, ctx.config, continuedJobOf(job), {
        by: 'operator',
        abandon: true,
      });
      if (!ended.ok) throw refusalError(ended);
      return {
        operationId: job.operation_id,
        workflowId: job.workflow_id,
        state: ended.state,
        links: temporalLinks(ctx.config, job.workflow_id),
      };
    }
    const done = await abandonEnvironment(ctx.temporal, ctx.config, taskId);
    if (!done.ok) throw refusalError(done);
    return {
      operationId: done.operationId,
      workflowId: done.workflowId,
      state: done.state ?? 'succeeded',
      links: temporalLinks(ctx.config, done.workflowId),
    };
  }

  return async (app) => {
    app.post(
      '/v1/tasks/:id/archive',
      {
        config: { role: 'user' },
        schema: {
          tags: ['cleanup'],
          params: IdParams,
          body: Type.Optional(Type.Object({ cascade: Type.Optional(Type.Boolean()) }, { additionalProperties: false })),
          response: { 202: Accepted, ...errorResponses },
        },
      },
      async (request, reply) =>
        reply.code(202).send(await start(request.params.id, 'archive', { cascade: request.body?.cascade ?? false })),
    );

    app.post(
      '/v1/tasks/:id/unarchive',
      {
        config: { role: 'user' },
        schema: { tags: ['cleanup'], params: IdParams, response: { 200: Task, ...errorResponses } },
      },
      async (request) => {
        const task = await findTask(ctx.pool, request.params.id);
        if (!task) throw notFound('Task');
        // A pending archive cleanup (or its follow-up) is cancelled; one in flight is waited for.
        const job = await activeJobOfTask(ctx.pool, task.id);
        if (job && cancelledByUnarchive(job.trigger))
          await cancelCleanup(ctx.temporal, ctx.config, continuedJobOf(job), { by: 'unarchive' });
        else if (job) throw new ApiError('task_cleanup_in_progress');
        await unarchiveTask(ctx.pool, task.id);
        return taskView(ctx.pool, ctx.config, task.id);
      },
    );

    app.delete(
      '/v1/tasks/:id',
      {
        config: { role: 'operator' },
        schema: {
          tags: ['cleanup'],
          params: IdParams,
          querystring: Type.Object(
            { cascade: Type.Optional(QueryFlag), discardChanges: Type.Optional(QueryFlag) },
            { additionalProperties: false },
          ),
          response: { 202: Accepted, ...errorResponses },
        },
      },
      async (request, reply) =>
        reply.code(202).send(
          await start(request.params.id, 'delete', {
            cascade: request.query.cascade === 'true',
            discardChanges: request.query.discardChanges === 'true',
          }),
        ),
    );

    app.post(
      '/v1/tasks/:id/environment/reset',
      {
        config: { role: 'operator' },
        schema: {
          tags: ['cleanup'],
          params: IdParams,
          body: ResetBody,
          response: { 200: Ended, 202: Accepted, ...errorResponses },
        },
      },
      async (request, reply) => {
        // A task working in its group's or its parent's workspace has none of its own to reset:
        // the job would end at once with nothing done. Said, with the task that owns it.
        const owner = await environmentOwnerElsewhere(ctx.pool, request.params.id);
        if (owner)
          throw badRequest(
            `This task works in the workspace of task ${owner} (its group's or its parent's): reset or abandon that task's environment.`,
          );
        if (!request.body?.abandon) return reply.code(202).send(await start(request.params.id, 'environment_reset'));
        const ended = await abandon(request.params.id);
        request.log.info(
          { operationId: ended.operationId, taskId: request.params.id, state: ended.state, by: 'operator' },
          'environment abandoned',
        );
        return reply.code(200).send(ended);
      },
    );

    app.delete(
      '/v1/boards/:id',
      {
        config: { role: 'operator' },
        schema: {
          tags: ['cleanup'],
          params: IdParams,
          querystring: Type.Object({ discardChanges: Type.Optional(QueryFlag) }, { additionalProperties: false }),
          response: {
            202: Type.Object({
              operationId: Uuid,
              workflowId: Type.String(),
              operations: Type.Array(Type.Object({ taskId: Uuid, operationId: Uuid })),
            }),
            ...errorResponses,
          },
        },
      },
      async (request, reply) => {
        if (!(await boardExists(ctx.pool, request.params.id))) throw notFound('Board');
        // One durable workflow: 202 once every task's barrier, snapshot and deletion and the board's deletion committed.
        const started = await startBoardDelete(ctx.temporal, ctx.config, {
          boardId: request.params.id,
          discardChanges: request.query.discardChanges === 'true',
        });
        if (!started.ok)
          throw new ApiError(
            started.code,
            undefined,
            Array.isArray(started.details.dirtyRepositories)
              ? { dirtyRepositories: started.details.dirtyRepositories }
              : {},
          );
        return reply
          .code(202)
          .send({ operationId: started.operationId, workflowId: started.workflowId, operations: started.operations });
      },
    );
  };
}
