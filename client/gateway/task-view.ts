import type pg from 'pg';
import { environmentDisk } from '../../db/disk';
import type { Config } from '../../domain/config';
import { overDiskQuota } from '../../domain/disk';
import { canonicalEnvironmentOf } from '../../db/environments';
import { sessionsOfTask } from '../../db/sessions';
import { inSnapshot } from '../../db/pool';
import { taskUsageOf } from '../../db/task-usage';
import { findTask, taskRepositories, type TaskRow } from '../../db/tasks';
import { notFound } from './api-error';
import { environmentPreparation } from '../../db/workspace-preparations';
import { preparationView } from './preparation-view';

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
  merged: task.merged ? { at: new Date(task.merged.at).toISOString(), operationId: task.merged.operationId } : null,
  activity: task.activity,
  attention: task.attention,
});

/** The task resource of the HTTP API (docs/api.md). */
export async function taskView(pool: pg.Pool, config: Pick<Config, 'limits' | 'taskDiskQuotaBytes'>, id: string) {
  // One snapshot: its environment's state and its sessions' as one moment saw them (a release or
  // an agent's end commits them together).
  const read = await inSnapshot(pool, async (client) => {
    const task = await findTask(client, id);
    if (!task) return null;
    const repos = await taskRepositories(client, id);
    // Its own environment, or the one it borrows (inherit_parent, shared_group), named with its owner.
    const env = await canonicalEnvironmentOf(client, id);
    const sessions = await sessionsOfTask(client, id);
    // Its workspace's bytes as its host last measured them (a borrowed one's are its owner's) [R6.11].
    const disk = env?.materialized ? await environmentDisk(client, env.id) : null;
    // What the agents of its workspace use together (its owner's control group), while any runs.
    const usage = env ? await taskUsageOf(client, env.task_id) : null;
    const prepared = env ? await environmentPreparation(client, env.id) : [];
    return { task, repos, env, sessions, disk, usage, prepared };
  });
  if (!read) throw notFound('Task');
  const { task, repos, env, sessions, disk, usage, prepared } = read;
  return {
    ...taskItem(task),
    pinned: task.pinned_at !== null,
    disk,
    // What its agents may use: each agent by default, all of them together at most, and its workspace on disk.
    limits: {
      agent: config.limits.enabled ? config.limits.defaults : null,
      task: config.limits.enabled ? config.limits.maximum : null,
      diskQuotaBytes: task.disk_quota_bytes ?? config.taskDiskQuotaBytes,
      overDiskQuota: disk ? overDiskQuota(disk.bytes, task.disk_quota_bytes, config.taskDiskQuotaBytes) : false,
    },
    usage,
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
          preparation: preparationView(prepared),
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
