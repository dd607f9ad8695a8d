/**
 * The cleanup jobs an operator watches, cancels and retries [R6]. Apart from the routes that
 * start cleanups (routes/cleanup.ts) because these act on a job by its operation id, whatever
 * started it.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { continuedJobOf, findJob, listJobs, type CleanupJobRow } from '../../../db/cleanup-jobs';
import { CLEANUP_JOB_STATES, CLEANUP_TRIGGERS } from '../../../domain/cleanup';
import { continueIfClosed, operatorCancel, retryCleanup } from '../engine/engine-cleanup';
import { ApiError, notFound, refusalError } from '../api-error';
import type { GatewayContext } from '../context';
import { pageOf, PageQueryFields, readPage } from '../pagination';
import { Links, Uuid, errorResponses } from '../schemas';
import { temporalLinks } from '../engine/temporal-links';

const Job = Type.Object({
  operationId: Uuid,
  taskId: Uuid,
  trigger: Type.String(),
  state: Type.String(),
  attempts: Type.Integer(),
  nextAttemptAt: Type.Union([Type.String(), Type.Null()]),
  lastError: Type.Union([Type.String(), Type.Null()]),
  workflowId: Type.String(),
  /** The bulk cleanup's workflow that carried the job out in a batch (a board delete's), else null. */
  batchWorkflowId: Type.Union([Type.String(), Type.Null()]),
  createdAt: Type.String(),
  finishedAt: Type.Union([Type.String(), Type.Null()]),
  report: Type.Any(),
  links: Links,
});
/** Filters are checked against the job's own enums: a state or trigger no job can have is a 400, not an empty page. */
const JobListQuery = Type.Object(
  {
    ...PageQueryFields,
    state: Type.Optional(Type.Union(CLEANUP_JOB_STATES.map((state) => Type.Literal(state)))),
    trigger: Type.Optional(Type.Union(CLEANUP_TRIGGERS.map((trigger) => Type.Literal(trigger)))),
    taskId: Type.Optional(Uuid),
  },
  { additionalProperties: false },
);
const OperationParams = Type.Object({ operationId: Uuid });
/** A request that ended a job answers with it (an environment reset's abandon too, routes/cleanup.ts). */
export const Ended = Type.Object({ operationId: Uuid, workflowId: Type.String(), state: Type.String(), links: Links });

function jobView(job: CleanupJobRow, config: GatewayContext['config']) {
  return {
    operationId: job.operation_id,
    taskId: job.task_id,
    trigger: job.trigger,
    state: job.state,
    attempts: job.attempts,
    nextAttemptAt: job.next_attempt_at?.toISOString() ?? null,
    lastError: job.last_error,
    workflowId: job.workflow_id,
    batchWorkflowId: job.batch_workflow_id,
    createdAt: job.created_at.toISOString(),
    finishedAt: job.finished_at?.toISOString() ?? null,
    // Paths are the owner's own view (as in the workspace route); refs and outcomes per repository.
    report: job.report,
    // The run an operator opens: the batch's, when a batch carried the job out.
    links: temporalLinks(config, job.batch_workflow_id ?? job.workflow_id),
  };
}

export function cleanupJobRoutes(ctx: GatewayContext): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(
      '/v1/cleanup-jobs',
      {
        config: { role: 'user' },
        schema: { tags: ['cleanup'], querystring: JobListQuery, response: { 200: pageOf(Job), ...errorResponses } },
      },
      async (request) => {
        const { state, trigger, taskId } = request.query;
        return readPage(
          request.query,
          (page) => listJobs(ctx.pool, { state, trigger, taskId }, page),
          (row) => row.operation_id,
          (row) => jobView(row, ctx.config),
        );
      },
    );

    app.get(
      '/v1/cleanup-jobs/:operationId',
      {
        config: { role: 'user' },
        schema: { tags: ['cleanup'], params: OperationParams, response: { 200: Job, ...errorResponses } },
      },
      async (request) => {
        const job = await findJob(ctx.pool, request.params.operationId);
        if (!job) throw notFound('Cleanup job');
        return jobView(job, ctx.config);
      },
    );

    app.post(
      '/v1/cleanup-jobs/:operationId/cancel',
      {
        config: { role: 'operator' },
        schema: { tags: ['cleanup'], params: OperationParams, response: { 200: Ended, ...errorResponses } },
      },
      async (request) => {
        const job = await findJob(ctx.pool, request.params.operationId);
        if (!job) throw notFound('Cleanup job');
        // Through the job's workflow (a new run for one whose run was lost): one running an attempt finishes it first.
        const ended = await operatorCancel(ctx.temporal, ctx.config, continuedJobOf(job));
        request.log.info(
          {
            operationId: job.operation_id,
            taskId: job.task_id,
            trigger: job.trigger,
            from: job.state,
            outcome: ended.ok ? ended.state : ended.code,
            by: 'operator',
          },
          'cleanup job cancel',
        );
        if (!ended.ok) throw refusalError(ended);
        return {
          operationId: job.operation_id,
          workflowId: job.workflow_id,
          state: ended.state,
          links: temporalLinks(ctx.config, job.workflow_id),
        };
      },
    );

    app.post(
      '/v1/cleanup-jobs/:operationId/retry',
      {
        config: { role: 'operator' },
        schema: {
          tags: ['cleanup'],
          params: OperationParams,
          response: { 202: Type.Object({ operationId: Uuid, state: Type.String() }), ...errorResponses },
        },
      },
      async (request, reply) => {
        const job = await findJob(ctx.pool, request.params.operationId);
        if (!job) throw notFound('Cleanup job');
        const active = job.state !== 'succeeded' && job.state !== 'cancelled' && job.state !== 'prepared';
        // A job whose workflow closed while it is active is retried by a new run from its snapshot.
        if (active && (await continueIfClosed(ctx.temporal, ctx.config, continuedJobOf(job))))
          return reply.code(202).send({ operationId: job.operation_id, state: job.state });
        if (job.state !== 'needs_operator') throw new ApiError('cleanup_job_not_retryable');
        await retryCleanup(ctx.temporal, job.workflow_id);
        return reply.code(202).send({ operationId: job.operation_id, state: job.state });
      },
    );
  };
}
