/** POST /v1/tasks and GET /v1/tasks/:id. */
import { randomUUID } from 'node:crypto';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { boardExists, findRepositories } from '../../../db/catalog';
import { environmentOfTask } from '../../../db/environments';
import { sessionsOfTask } from '../../../db/sessions';
import { findTask, insertTask, taskRepositories, type NewTask } from '../../../db/tasks';
import { inTransaction } from '../../../db/pool';
import { branchNameProblem } from '../../../domain/refs';
import { taskBranchName } from '../../../domain/task-layout';
import { branchCommit, gitAt } from '../../../git/git';
import { badRequest, notFound } from '../api-error';
import type { GatewayContext } from '../context';
import { CreateTaskBody, IdParams, Task, errorResponses } from '../schemas';

export function taskRoutes(ctx: GatewayContext): FastifyPluginAsyncTypebox {
  const gitOptions = { binary: ctx.config.gitBinary };

  async function taskView(id: string) {
    const task = await findTask(ctx.pool, id);
    if (!task) throw notFound('Task');
    const [repos, env, sessions] = await Promise.all([taskRepositories(ctx.pool, id), environmentOfTask(ctx.pool, id), sessionsOfTask(ctx.pool, id)]);
    return {
      id: task.id,
      title: task.title,
      state: task.archived_at ? ('archived' as const) : ('active' as const),
      parentTaskId: task.parent_task_id,
      boardId: task.board_id,
      workspaceMode: task.workspace_mode,
      groupId: task.group_id,
      quickChat: task.quick_chat,
      repositories: repos.map((r) => ({ repositoryId: r.repository_id, baseBranch: r.base_branch, checkoutBranch: r.checkout_branch })),
      environment: env ? { id: env.id, executorType: env.executor_type, status: env.status, hostId: env.host_id } : null,
      sessions: sessions.map((s) => ({ id: s.id, state: s.state, executorType: s.executor_type, role: s.role, createdAt: s.created_at.toISOString() })),
    };
  }

  return async (app) => {
    app.post('/v1/tasks', { config: { role: 'user' }, schema: { tags: ['tasks'], body: CreateTaskBody, response: { 201: Task, ...errorResponses } } }, async (request, reply) => {
      const body = request.body;
      const id = randomUUID();
      const mode = body.workspace?.mode ?? 'new_workspace';
      if (mode === 'inherit_parent' && !body.parentTaskId) throw badRequest('inherit_parent needs parentTaskId.');
      if (mode !== 'shared_group' && body.workspace?.groupId) throw badRequest('groupId is only valid with shared_group.');
      const wanted = body.repositories ?? [];
      if (new Set(wanted.map((r) => r.repositoryId)).size !== wanted.length) throw badRequest('A repository may appear only once in a task.');
      if (body.boardId && !(await boardExists(ctx.pool, body.boardId))) throw notFound('Board');
      if (body.parentTaskId && !(await findTask(ctx.pool, body.parentTaskId))) throw notFound('Parent task');

      const known = await findRepositories(ctx.pool, wanted.map((r) => r.repositoryId));
      const repositories: NewTask['repositories'] = [];
      for (const [index, want] of wanted.entries()) {
        const repo = known.find((k) => k.id === want.repositoryId);
        if (!repo) throw notFound('Repository');
        const baseBranch = want.baseBranch ?? repo.default_branch;
        for (const [field, branch] of [['baseBranch', baseBranch], ['checkoutBranch', want.checkoutBranch]] as const) {
          const problem = branch === undefined ? null : branchNameProblem(branch);
          if (problem) throw badRequest(`repositories[${index}].${field}: the branch name ${problem}.`);
        }
        const git = gitAt(repo.path, gitOptions);
        if (!(await branchCommit(git, baseBranch))) throw badRequest(`repositories[${index}].baseBranch does not exist in the repository.`);
        if (want.checkoutBranch && !(await branchCommit(git, want.checkoutBranch))) throw badRequest(`repositories[${index}].checkoutBranch does not exist in the repository.`);
        repositories.push({ repositoryId: repo.id, baseBranch, checkoutBranch: want.checkoutBranch ?? null, branchSlug: want.checkoutBranch ?? taskBranchName(id) });
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
          repositories,
        }),
      );
      return reply.code(201).send(await taskView(id));
    });

    app.get('/v1/tasks/:id', { config: { role: 'user' }, schema: { tags: ['tasks'], params: IdParams, response: { 200: Task, ...errorResponses } } }, async (request) => {
      return taskView(request.params.id);
    });
  };
}
