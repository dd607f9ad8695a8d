/**
 * POST /v1/tasks/:id/push: each task branch pushed to its repository's remote, under the same
 * branch name [R8.6]. Every repository asked for is checked before anything is pushed: it is the
 * task's, it has a `remote`, and the task has a branch in it (400 `invalid_request`, `reason`
 * `not_a_task_repository`, `no_remote`, `no_task_branch`, with its `repositoryId`). A remote that
 * refuses or does not answer is 502 `push_failed`, naming no address, credential or ref.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { taskRepositorySources } from '../../../db/merge-sources';
import { findTask } from '../../../db/tasks';
import { pushOnHosts } from '../engine/engine-push';
import { EngineRefusal } from '../engine/typed-outcome';
import { ApiError, notFound } from '../api-error';
import type { GatewayContext } from '../context';
import { IdParams, Uuid, errorResponses } from '../schemas';

const PushBody = Type.Object(
  {
    /** The repositories to push (default: every repository of the task). */
    repositoryIds: Type.Optional(Type.Array(Uuid, { minItems: 1, maxItems: 100, uniqueItems: true })),
    /** Move the remote branch even where that is no fast-forward (a rebased task). Default false. */
    force: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);

const PushAnswer = Type.Object({
  repositories: Type.Array(Type.Object({ repositoryId: Uuid, ref: Type.String(), commit: Type.String() })),
});

const REFUSALS: Record<string, string> = {
  not_a_task_repository: 'This repository is not one of the task.',
  no_remote: 'This repository has no remote to push to; an operator sets its remote (PATCH /v1/repositories/:id).',
  no_task_branch: 'The task has no branch in this repository yet: launch it first.',
  no_such_ref: "The task's branch is not in the repository's checkout on its host.",
};

const refused = (reason: string, repositoryId: string) =>
  new ApiError('invalid_request', REFUSALS[reason], { reason, repositoryId });

/** A refusal of the push run as the answer: its code, and only a word for the reason and an id for the repository. */
function pushRefusal(err: unknown): unknown {
  if (!(err instanceof EngineRefusal)) return err;
  const { code, details } = err.refusal;
  const reason = typeof details.reason === 'string' && /^[a-z_]{1,64}$/.test(details.reason) ? details.reason : null;
  const repositoryId =
    typeof details.repositoryId === 'string' && /^[0-9a-f-]{36}$/.test(details.repositoryId)
      ? details.repositoryId
      : null;
  if (code === 'invalid_request' && reason && repositoryId && REFUSALS[reason]) return refused(reason, repositoryId);
  if (code === 'internal') return new Error('the push run failed');
  return new ApiError(code, undefined, { ...(reason ? { reason } : {}), ...(repositoryId ? { repositoryId } : {}) });
}

export function taskPushRoutes(ctx: GatewayContext): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.post(
      '/v1/tasks/:id/push',
      {
        config: { role: 'user' },
        schema: {
          tags: ['tasks'],
          params: IdParams,
          body: Type.Optional(PushBody),
          response: { 200: PushAnswer, ...errorResponses, 502: errorResponses[500] },
        },
      },
      async (request) => {
        const taskId = request.params.id;
        if (!(await findTask(ctx.pool, taskId))) throw notFound('Task');
        const sources = await taskRepositorySources(ctx.pool, taskId);
        const asked = request.body?.repositoryIds;
        for (const id of asked ?? [])
          if (!sources.some((s) => s.repositoryId === id)) throw refused('not_a_task_repository', id);
        const chosen = asked ? sources.filter((s) => asked.includes(s.repositoryId)) : sources;
        for (const s of chosen) {
          if (!s.remote) throw refused('no_remote', s.repositoryId);
          if (!s.taskBranch) throw refused('no_task_branch', s.repositoryId);
        }
        const pushed = await pushOnHosts(
          ctx.temporal,
          ctx.config,
          taskId,
          chosen.map((s) => ({
            repositoryId: s.repositoryId,
            hostId: s.hostId,
            sourcePath: s.sourcePath,
            remote: s.remote!,
            refs: [{ local: `refs/heads/${s.taskBranch}`, remote: `refs/heads/${s.taskBranch}` }],
            force: request.body?.force === true,
          })),
        ).catch((err: unknown) => {
          throw pushRefusal(err);
        });
        return {
          repositories: pushed.flatMap((p) =>
            p.refs.map((r) => ({ repositoryId: p.repositoryId, ref: r.ref, commit: r.commit })),
          ),
        };
      },
    );
  };
}
