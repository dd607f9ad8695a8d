/** POST /v1/tasks, GET /v1/tasks (a list), GET /v1/tasks/:id and PATCH /v1/tasks/:id (an operator's: its disk quota). */
import { randomUUID } from 'node:crypto';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { boardExists, findRepositories } from '../../../db/catalog';
import { repositoryHosts } from '../../../db/hosts';
import { findTask, insertTask, listTasks, setDiskQuota, workspaceGroupExists, type NewTask } from '../../../db/tasks';
import { taskItem, taskView } from '../task-view';
import { inTransaction } from '../../../db/pool';
import { branchNameProblem } from '../../../domain/refs';
import { agentCommitsOnCheckoutBranch, taskBranchName } from '../../../domain/task-layout';
import { BRANCH_MISSING } from '../../../git/repository-check';
import { ApiError, badRequest, notFound } from '../api-error';
import type { GatewayContext } from '../context';
import { checkRepositoryOnItsHost } from '../placement';
import { pageOf, PageQueryFields, readPage } from '../pagination';
import { CreateTaskBody, IdParams, Task, TaskItem, Uuid, errorResponses } from '../schemas';
import { PatchTaskBody } from '../limit-schemas';

const TaskListQuery = Type.Object(
  {
    ...PageQueryFields,
    boardId: Type.Optional(Uuid),
    parentTaskId: Type.Optional(Uuid),
    /** Tasks that work in this repository. */
    repositoryId: Type.Optional(Uuid),
    archived: Type.Optional(Type.Union([Type.Literal('true'), Type.Literal('false')])),
    /** `merged`: tasks with a merge that is not undone; `archived` / `active` as `archived=true|false`. */
    state: Type.Optional(Type.Union([Type.Literal('active'), Type.Literal('archived'), Type.Literal('merged')])),
  },
  { additionalProperties: false },
);

export function taskRoutes(ctx: GatewayContext): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.post(
      '/v1/tasks',
      {
        config: { role: 'user' },
        schema: { tags: ['tasks'], body: CreateTaskBody, response: { 201: Task, ...errorResponses } },
      },
      async (request, reply) => {
        const body = request.body;
        const id = randomUUID();
        const mode = body.workspace?.mode ?? 'new_workspace';
        if (mode === 'inherit_parent' && !body.parentTaskId) throw badRequest('inherit_parent needs parentTaskId.');
        if (mode !== 'shared_group' && body.workspace?.groupId)
          throw badRequest('groupId is only valid with shared_group.');
        const wanted = body.repositories ?? [];
        if (new Set(wanted.map((r) => r.repositoryId)).size !== wanted.length)
          throw badRequest('A repository may appear only once in a task.');
        if (body.boardId && !(await boardExists(ctx.pool, body.boardId))) throw notFound('Board');
        if (body.parentTaskId && !(await findTask(ctx.pool, body.parentTaskId))) throw notFound('Parent task');
        // An unknown groupId is a mistake, not a new group: a new group is asked for by leaving it out.
        if (body.workspace?.groupId && !(await workspaceGroupExists(ctx.pool, body.workspace.groupId)))
          throw notFound('Workspace group');

        const known = await findRepositories(
          ctx.pool,
          wanted.map((r) => r.repositoryId),
        );
        // A task's workspace is made on one host, beside all its repositories.
        if (
          (
            await repositoryHosts(
              ctx.pool,
              known.map((r) => r.id),
            )
          ).length > 1
        )
          throw badRequest('The repositories of a task must be on one host.');
        const repositories: NewTask['repositories'] = [];
        for (const [index, want] of wanted.entries()) {
          const repo = known.find((k) => k.id === want.repositoryId);
          if (!repo) throw notFound('Repository');
          const baseBranch = want.baseBranch ?? repo.default_branch;
          for (const [field, branch] of [
            ['baseBranch', baseBranch],
            ['checkoutBranch', want.checkoutBranch],
          ] as const) {
            const problem = branch === undefined ? null : branchNameProblem(branch);
            if (problem) throw badRequest(`repositories[${index}].${field}: the branch name ${problem}.`);
          }
          // On the repository's host (the gateway may run on a machine without the repository).
          for (const [field, branch] of [
            ['baseBranch', baseBranch],
            ['checkoutBranch', want.checkoutBranch],
          ] as const) {
            if (branch === undefined) continue;
            const checked = await checkRepositoryOnItsHost(ctx, repo.host_id ?? ctx.config.hostId, {
              path: repo.path,
              defaultBranch: branch,
            });
            if (checked.ok) continue;
            if (checked.problem === BRANCH_MISSING)
              throw badRequest(`repositories[${index}].${field} does not exist in the repository.`);
            throw badRequest(`repositories[${index}]: the repository is not usable on its host: ${checked.problem}`);
          }
          // Last, so that a wrong or missing branch is told as such first. By the default executor's
          // agents under the gateway's own TWS_AGENT_SANDBOX (a deployment sets it alike everywhere):
          // sandboxed, they write only their task's ref folder (domain/task-layout.ts taskRefFolder).
          if (want.checkoutBranch !== undefined && !agentCommitsOnCheckoutBranch('worktree', ctx.config.agentSandbox))
            throw new ApiError('checkout_branch_unsupported');
          repositories.push({
            repositoryId: repo.id,
            baseBranch,
            checkoutBranch: want.checkoutBranch ?? null,
            branchSlug: want.checkoutBranch ?? taskBranchName(id),
          });
        }

        await inTransaction(ctx.pool, (client) =>
          insertTask(client, {
            id,
            title: body.title,
            boardId: body.boardId ?? null,
            parentTaskId: body.parentTaskId ?? null,
            mode,
            groupId: mode === 'shared_group' ? (body.workspace?.groupId ?? randomUUID()) : null,
            quickChat: body.quickChat ?? false,
            diskQuotaBytes: body.diskQuotaBytes ?? null,
            repositories,
          }),
        );
        return reply.code(201).send(await taskView(ctx.pool, ctx.config, id));
      },
    );

    app.get(
      '/v1/tasks',
      {
        config: { role: 'user' },
        schema: { tags: ['tasks'], querystring: TaskListQuery, response: { 200: pageOf(TaskItem), ...errorResponses } },
      },
      async (request) => {
        const { boardId, parentTaskId, repositoryId, archived, state } = request.query;
        const filter = {
          boardId,
          parentTaskId,
          repositoryId,
          archived:
            state === 'archived'
              ? true
              : state === 'active'
                ? false
                : archived === undefined
                  ? undefined
                  : archived === 'true',
          merged: state === 'merged' || undefined,
        };
        return readPage(
          request.query,
          (page) => listTasks(ctx.pool, filter, page),
          (row) => row.id,
          (row) => taskItem(row),
        );
      },
    );

    app.get(
      '/v1/tasks/:id',
      {
        config: { role: 'user' },
        schema: { tags: ['tasks'], params: IdParams, response: { 200: Task, ...errorResponses } },
      },
      async (request) => {
        return taskView(ctx.pool, ctx.config, request.params.id);
      },
    );

    // The advice of a task_disk_quota refusal: an operator raises the quota, and the next launch is
    // judged against it (a task over its quota launches again once it is under the new one).
    app.patch(
      '/v1/tasks/:id',
      {
        config: { role: 'operator' },
        schema: { tags: ['tasks'], params: IdParams, body: PatchTaskBody, response: { 200: Task, ...errorResponses } },
      },
      async (request) => {
        if (!(await setDiskQuota(ctx.pool, request.params.id, request.body.diskQuotaBytes))) throw notFound('Task');
        return taskView(ctx.pool, ctx.config, request.params.id);
      },
    );
  };
}
