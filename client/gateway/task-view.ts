import type pg from 'pg';
import { environmentDisk } from '../../db/disk';
import { canonicalEnvironmentOf } from '../../db/environments';
import { sessionsOfTask } from '../../db/sessions';
import { findTask, taskRepositories, type TaskRow } from '../../db/tasks';
import { notFound } from './api-error';

/** A task as lists show it: its own row. */
export const taskItem = (task: TaskRow) => ({
  id: task.id,
  title: task.title,
  state: task.archived_at ? ('archived' as const) : ('active' as const),
  parentTaskId: task.parent_task_id,
  boardId: task.board_id,
  workspaceMode: task.workspace_mode,
  groupId: task.group_id,
  quickChat: task.quick_chat,
  createdAt: task.created_at.toISOString(),
});

/** The task resource of spec/api.md. */
export async function taskView(pool: pg.Pool, id: string) {
  const task = await findTask(pool, id);
  if (!task) throw notFound('Task');
  // Its own environment, or the one it borrows (inherit_parent, shared_group), named with its owner.
  const [repos, env, sessions] = await Promise.all([
    taskRepositories(pool, id),
    canonicalEnvironmentOf(pool, id),
    sessionsOfTask(pool, id),
  ]);
  // Its workspace's bytes as its host last measured them (a borrowed one's are its owner's) [R6.11].
  const disk = env?.materialized ? await environmentDisk(pool, env.id) : null;
  return {
    ...taskItem(task),
    pinned: task.pinned_at !== null,
    disk,
    repositories: repos.map((r) => ({
      repositoryId: r.repository_id,
      baseBranch: r.base_branch,
      checkoutBranch: r.checkout_branch,
    })),
    environment: env
      ? {
          id: env.id,
          executorType: env.executor_type,
          status: env.status,
          hostId: env.host_id,
          ownerTaskId: env.task_id,
          borrowed: env.task_id !== task.id,
          // An ssh workspace says which target it is on.
          ...(env.ssh_target_id ? { sshTargetId: env.ssh_target_id } : {}),
        }
      : null,
    sessions: sessions.map((s) => ({
      id: s.id,
      state: s.state,
      executorType: s.executor_type,
      role: s.role,
      createdAt: s.created_at.toISOString(),
    })),
  };
}
