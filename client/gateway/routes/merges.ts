/**
 * Finishing a task [R8]: its merge preview, its merges (started, read, listed, undone) and its
 * rebase. A route validates, calls one starter of client/gateway/engine/engine-merge.ts and maps the outcome.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { findByIdempotencyKey, findGitOperation, mergesOf, type GitOperationRow } from '../../../db/git-operations';
import { taskRepositorySources } from '../../../db/merge-sources';
import { findTask } from '../../../db/tasks';
import { errorBody } from '../../../domain/error-body';
import { isErrorCode } from '../../../domain/errors';
import { strategyAllowed, type MergeStrategy } from '../../../domain/merge';
import { mergeWorkflowId } from '../../../domain/workflow-ids';
import { mergeEnded, previewMergeOf, runRebase, runUndo, startMerge } from '../engine/engine-merge';
import { temporalLinks } from '../engine/temporal-links';
import { typedRefusalOf } from '../engine/typed-outcome';
import { ApiError, badRequest, notFound, refusalError } from '../api-error';
import type { GatewayContext } from '../context';
import { Merge, OneOf } from '../merge-schemas';
import { idempotencyKeyOf } from './session-requests';
import { IdParams, Links, Uuid, errorResponses } from '../schemas';
import { PageQueryFields } from '../pagination';

const Strategy = Type.Union([
  Type.Literal('squash'),
  Type.Literal('merge'),
  Type.Literal('fast_forward'),
  Type.Literal('rebase'),
]);

const MergeBody = Type.Object(
  {
    strategy: Strategy,
    message: Type.Optional(Type.String({ minLength: 1, maxLength: 10_000 })),
    repositoryIds: Type.Optional(Type.Array(Uuid, { minItems: 1, maxItems: 100 })),
    commitUncommitted: Type.Optional(Type.Boolean()),
    stopAgents: Type.Optional(Type.Boolean()),
    archive: Type.Optional(Type.Boolean()),
    push: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);

const RebaseBody = Type.Optional(
  Type.Object(
    {
      repositoryIds: Type.Optional(Type.Array(Uuid, { minItems: 1, maxItems: 100 })),
      stopAgents: Type.Optional(Type.Boolean()),
    },
    { additionalProperties: false },
  ),
);

const Commit = Type.Union([Type.String(), Type.Null()]);

const Preview = Type.Object({
  strategy: Type.String(),
  repositories: Type.Array(
    Type.Object({
      repositoryId: Uuid,
      outcome: OneOf(['clean', 'conflicts', 'up_to_date', 'blocked'] as const),
      conflicts: Type.Optional(Type.Array(Type.String())),
      blockedBy: Type.Optional(Type.String()),
    }),
  ),
});

const Started = Type.Object({ operationId: Uuid, workflowId: Type.String(), links: Links });

/** How long a merge request waits for its outcome: a refusal found at once is answered as one; `Prefer: wait` waits up to a minute. */
const QUICK_WAIT_MS = 5_000;
const PREFER_WAIT_MS = 60_000;

export function mergeRoutes(ctx: GatewayContext): FastifyPluginAsyncTypebox {
  const mergeView = (op: GitOperationRow) => {
    const error =
      op.error && isErrorCode(op.error.code)
        ? { ...errorBody(op.error.code, op.operationId, undefined, safeExtra(op.error)).error }
        : undefined;
    const repositories =
      op.repositories.length > 0
        ? op.repositories
        : (op.plan ?? []).map((p) => ({
            repositoryId: p.repositoryId,
            baseBranch: p.baseBranch,
            before: p.before,
            after: null,
          }));
    return {
      operationId: op.operationId,
      taskId: op.taskId,
      strategy: op.strategy ?? '',
      state: op.state === 'done' ? ('merged' as const) : op.state,
      repositories,
      ...(error ? { error } : {}),
      createdAt: op.createdAt,
      finishedAt: op.finishedAt,
      undoneAt: op.undoneAt,
      links: temporalLinks(ctx.config, mergeWorkflowId(op.taskId, op.operationId)),
    };
  };

  async function mergeOrNotFound(operationId: string) {
    const op = await findGitOperation(ctx.pool, operationId);
    if (!op || op.kind !== 'merge') throw notFound('Merge');
    return op;
  }

  return async (app) => {
    app.get(
      '/v1/tasks/:id/merge-preview',
      {
        config: { role: 'user' },
        schema: {
          tags: ['merges'],
          params: IdParams,
          querystring: Type.Object({ strategy: Type.Optional(Strategy) }, { additionalProperties: false }),
          response: { 200: Preview, ...errorResponses },
        },
      },
      async (request) => {
        if (!(await findTask(ctx.pool, request.params.id))) throw notFound('Task');
        const strategy: MergeStrategy = request.query.strategy ?? 'squash';
        return previewMergeOf(ctx.temporal, ctx.config, request.params.id, strategy).catch(rethrowRefusal);
      },
    );

    app.post(
      '/v1/tasks/:id/merge',
      {
        config: { role: 'user' },
        schema: {
          tags: ['merges'],
          params: IdParams,
          body: MergeBody,
          response: { 200: Merge, 202: Started, ...errorResponses },
        },
      },
      async (request, reply) => {
        const taskId = request.params.id;
        const body = request.body;
        const key = idempotencyKeyOf(request.headers);
        if (!(await findTask(ctx.pool, taskId))) throw notFound('Task');
        const sources = await taskRepositorySources(ctx.pool, taskId);
        for (const id of body.repositoryIds ?? [])
          if (!sources.some((s) => s.repositoryId === id))
            throw badRequest('repositoryIds names a repository the task does not have.');
        const chosen = sources.filter((s) => !body.repositoryIds || body.repositoryIds.includes(s.repositoryId));
        if (chosen.some((s) => !strategyAllowed(s.mergeStrategies, body.strategy)))
          throw new ApiError('merge_strategy_not_allowed');
        const wait = /\bwait\b/i.test(String(request.headers.prefer ?? ''));
        const known = key ? await findByIdempotencyKey(ctx.pool, taskId, key) : null;
        const started = known
          ? { operationId: known.operationId, workflowId: mergeWorkflowId(taskId, known.operationId), outcome: null }
          : await startMerge(
              ctx.temporal,
              ctx.config,
              { ...body, taskId, idempotencyKey: key },
              wait ? PREFER_WAIT_MS : QUICK_WAIT_MS,
            ).catch(rethrowRefusal);
        // The same key again while its merge runs: the caller that asked to wait waits for it as the
        // first caller does (it was answered 202 at once, a race two callers lost under load).
        if (known && wait && known.state === 'running')
          await mergeEnded(ctx.temporal, started.workflowId, PREFER_WAIT_MS);
        const op = await findGitOperation(ctx.pool, started.operationId);
        // Refused at once (before anything moved): answered as the refusal it is.
        if (op?.state === 'refused' && op.error && isErrorCode(op.error.code) && !known)
          throw new ApiError(op.error.code, undefined, safeExtra(op.error));
        if (wait && op && op.state !== 'running') return reply.code(200).send(mergeView(op));
        return reply.code(202).send({
          operationId: started.operationId,
          workflowId: started.workflowId,
          links: temporalLinks(ctx.config, started.workflowId),
        });
      },
    );

    app.get(
      '/v1/merges/:id',
      {
        config: { role: 'user' },
        schema: { tags: ['merges'], params: IdParams, response: { 200: Merge, ...errorResponses } },
      },
      async (request) => mergeView(await mergeOrNotFound(request.params.id)),
    );

    app.get(
      '/v1/tasks/:id/merges',
      {
        config: { role: 'user' },
        schema: {
          tags: ['merges'],
          params: IdParams,
          querystring: Type.Object(PageQueryFields, { additionalProperties: false }),
          response: {
            200: Type.Object({ items: Type.Array(Merge), nextCursor: Type.Union([Type.String(), Type.Null()]) }),
            ...errorResponses,
          },
        },
      },
      async (request) => {
        if (!(await findTask(ctx.pool, request.params.id))) throw notFound('Task');
        const limit = Math.min(Number(request.query.limit ?? 50), 200);
        const cursor = decodeCursor(request.query.cursor);
        const rows = await mergesOf(ctx.pool, request.params.id, limit + 1, cursor);
        const items = rows.slice(0, limit);
        const last = items[items.length - 1];
        return {
          items: items.map(mergeView),
          nextCursor:
            rows.length > limit && last
              ? Buffer.from(JSON.stringify([last.createdAt, last.operationId])).toString('base64url')
              : null,
        };
      },
    );

    app.post(
      '/v1/merges/:id/undo',
      {
        config: { role: 'user' },
        schema: { tags: ['merges'], params: IdParams, response: { 200: Merge, ...errorResponses } },
      },
      async (request) => {
        const merge = await mergeOrNotFound(request.params.id);
        if (merge.state === 'undone') return mergeView(merge);
        if (merge.state !== 'merged' || !merge.plan)
          throw new ApiError('nothing_to_merge', 'Only a merge that merged can be undone.');
        const refusal = await runUndo(ctx.temporal, ctx.config, {
          taskId: merge.taskId,
          mergeId: merge.operationId,
          plan: merge.plan,
        });
        if (refusal) throw refusalError(refusal);
        return mergeView(await mergeOrNotFound(request.params.id));
      },
    );

    app.post(
      '/v1/tasks/:id/rebase',
      {
        config: { role: 'user' },
        schema: {
          tags: ['merges'],
          params: IdParams,
          body: RebaseBody,
          response: {
            200: Type.Object({
              repositories: Type.Array(Type.Object({ repositoryId: Uuid, before: Commit, after: Commit })),
            }),
            ...errorResponses,
          },
        },
      },
      async (request) => {
        if (!(await findTask(ctx.pool, request.params.id))) throw notFound('Task');
        const outcome = await runRebase(ctx.temporal, ctx.config, {
          taskId: request.params.id,
          ...(request.body ?? {}),
        });
        if ('code' in outcome) throw new ApiError(outcome.code, undefined, safeExtra(outcome.details));
        return outcome;
      },
    );
  };
}

/** A workflow's typed refusal answered as its error; anything else is the error handler's. */
function rethrowRefusal(err: unknown): never {
  const refusal = typedRefusalOf(err);
  if (refusal) throw new ApiError(refusal.code, undefined, safeExtra(refusal.details));
  throw err;
}

/** What an error of finishing a task may carry: repository ids, file paths of a conflict, a reason word. Never a path of the host. */
function safeExtra(details: Record<string, unknown>): Record<string, unknown> {
  const extra: Record<string, unknown> = {};
  if (Array.isArray(details.conflicts)) extra.conflicts = details.conflicts;
  if (Array.isArray(details.repositoryIds)) extra.repositoryIds = details.repositoryIds;
  if (typeof details.reason === 'string' && /^[a-z_]{1,64}$/.test(details.reason)) extra.reason = details.reason;
  if (Array.isArray(details.repositories))
    extra.repositories = (details.repositories as Record<string, unknown>[]).map((r) => ({
      repositoryId: r.repositoryId,
      state: r.state,
      before: r.before,
      after: r.after,
    }));
  return extra;
}

function decodeCursor(cursor: string | undefined): { createdAt: string; operationId: string } | undefined {
  if (!cursor) return undefined;
  try {
    const [createdAt, operationId] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as [string, string];
    if (typeof createdAt === 'string' && /^[0-9a-f-]{36}$/.test(operationId)) return { createdAt, operationId };
  } catch {
    // answered below
  }
  throw badRequest('The cursor is not one this list gave.');
}
