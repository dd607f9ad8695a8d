/**
 * Which environment is canonical for a launch, by the task's workspace mode: its own
 * (new_workspace), its parent's (inherit_parent, never a child environment of its own), or
 * its group's (shared_group). Runs inside the admission transaction and locks what it elects on.
 */
import type pg from 'pg';
import type { WorkspaceMode } from '../domain/admission';
import type { RepositorySlot } from '../domain/launch-plan';
import { environmentById, environmentOfTask, type EnvironmentRow } from './environments';
import { inTransaction, type Db } from './pool';
import { taskRepositories } from './tasks';

export interface AdmissionTarget {
  env: EnvironmentRow | null;
  /** The task whose folder holds the workspace (the environment's owner). */
  ownerTaskId: string;
  /** The parent is missing or archived (inherit_parent). */
  unavailable: boolean;
  groupId: string | null;
  /** The environment's slots: the owner's repositories. */
  slots: RepositorySlot[];
}

export async function repositorySlots(client: Db, taskId: string): Promise<RepositorySlot[]> {
  return (await taskRepositories(client, taskId)).map((r) => ({
    repositoryId: r.repository_id,
    repositoryName: r.repository_name,
    repositoryPath: r.repository_path,
    repositoryRootCommit: r.repository_root_commit,
    position: r.position,
    baseBranch: r.base_branch,
    checkoutBranch: r.checkout_branch,
    branchSlug: r.branch_slug,
  }));
}

interface TaskLink {
  id: string;
  workspace_mode: WorkspaceMode;
  parent_task_id: string | null;
  group_id: string | null;
  archived_at: Date | null;
}

async function taskLink(client: pg.PoolClient, id: string): Promise<TaskLink | null> {
  const res = await client.query<TaskLink>(
    'SELECT id, workspace_mode, parent_task_id, group_id, archived_at FROM tasks WHERE id = $1',
    [id],
  );
  return res.rows[0] ?? null;
}

export async function admissionTarget(client: pg.PoolClient, task: TaskLink): Promise<AdmissionTarget> {
  if (task.workspace_mode === 'new_workspace') {
    const env = await environmentOfTask(client, task.id, true);
    return {
      env,
      ownerTaskId: task.id,
      unavailable: false,
      groupId: null,
      slots: await repositorySlots(client, task.id),
    };
  }
  if (task.workspace_mode === 'shared_group') {
    // The group row is the election point: one materializer for the whole group.
    const group = await client.query<{ environment_id: string | null }>(
      'SELECT environment_id FROM workspace_groups WHERE id = $1 FOR UPDATE',
      [task.group_id],
    );
    const envId = group.rows[0]?.environment_id ?? null;
    const env = envId ? await environmentById(client, envId) : null;
    const ownerTaskId = env?.task_id ?? task.id;
    return {
      env,
      ownerTaskId,
      unavailable: false,
      groupId: task.group_id,
      slots: await repositorySlots(client, ownerTaskId),
    };
  }
  // inherit_parent: follow the chain of parents to the environment that is canonical for it.
  let current = task;
  for (let depth = 0; depth < 32 && current.workspace_mode === 'inherit_parent'; depth++) {
    const parent = current.parent_task_id ? await taskLink(client, current.parent_task_id) : null;
    if (!parent || parent.archived_at)
      return { env: null, ownerTaskId: task.id, unavailable: true, groupId: null, slots: [] };
    current = parent;
  }
  if (current.workspace_mode === 'inherit_parent')
    return { env: null, ownerTaskId: task.id, unavailable: true, groupId: null, slots: [] };
  const upstream = await admissionTarget(client, { ...current, workspace_mode: current.workspace_mode });
  return { ...upstream, unavailable: upstream.env === null };
}

/**
 * The task that owns the environment a task's workspace mode makes it work in, when that is
 * another task's (its group's, its parent's) and one exists; null when it is its own or there is
 * none. A reset or abandon asked of such a task would end with nothing done: the environment is
 * not its own (routes/cleanup.ts refuses it, naming the owner).
 */
export async function environmentOwnerElsewhere(pool: pg.Pool, taskId: string): Promise<string | null> {
  return inTransaction(pool, async (client) => {
    const task = await taskLink(client, taskId);
    if (!task || task.workspace_mode === 'new_workspace') return null;
    const target = await admissionTarget(client, task);
    return target.env && target.env.task_id !== taskId ? target.env.task_id : null;
  });
}
