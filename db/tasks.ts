import type { WorkspaceMode } from '../domain/admission';
import { newestFirst, type PageOf } from './keyset';
import type { TaskActivity, TaskAttention } from '../domain/task-attention';
import { TASK_ATTENTION_COLUMNS } from './task-attention';
import type { Db } from './pool';

export interface NewTask {
  id: string;
  title: string;
  boardId: string | null;
  parentTaskId: string | null;
  mode: WorkspaceMode;
  groupId: string | null;
  quickChat: boolean;
  /** Its own disk quota; null: the operator's default. */
  diskQuotaBytes?: number | null;
  repositories: { repositoryId: string; baseBranch: string; checkoutBranch: string | null; branchSlug: string }[];
}

export async function insertTask(db: Db, task: NewTask): Promise<void> {
  if (task.groupId)
    await db.query('INSERT INTO workspace_groups (id) VALUES ($1) ON CONFLICT (id) DO NOTHING', [task.groupId]);
  await db.query(
    `INSERT INTO tasks (id, title, board_id, parent_task_id, workspace_mode, group_id, quick_chat, disk_quota_bytes)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
    [
      task.id,
      task.title,
      task.boardId,
      task.parentTaskId,
      task.mode,
      task.groupId,
      task.quickChat,
      task.diskQuotaBytes ?? null,
    ],
  );
  for (const [position, repo] of task.repositories.entries()) {
    await db.query(
      `INSERT INTO task_repositories (task_id, repository_id, position, base_branch, checkout_branch, branch_slug)
       VALUES ($1, $2, $3, $4, $5, $6)`,
      [task.id, repo.repositoryId, position, repo.baseBranch, repo.checkoutBranch, repo.branchSlug],
    );
  }
}

/** A group is made by the first task of it (without a groupId); a later member names one that exists. */
export async function workspaceGroupExists(db: Db, id: string): Promise<boolean> {
  return ((await db.query('SELECT 1 FROM workspace_groups WHERE id = $1', [id])).rowCount ?? 0) > 0;
}

export interface TaskRow {
  id: string;
  title: string;
  board_id: string | null;
  parent_task_id: string | null;
  workspace_mode: WorkspaceMode;
  group_id: string | null;
  quick_chat: boolean;
  archived_at: Date | null;
  /** A pinned task is never released for idleness. */
  pinned_at: Date | null;
  /** Its own disk quota in bytes; null: the operator's default (TWS_TASK_DISK_QUOTA). */
  disk_quota_bytes: number | null;
  created_at: Date;
  /** Its latest merge that is not undone. */
  merged: { at: string; operationId: string } | null;
  /** Whether an agent of the task is at work, and why a person must look (db/task-attention.ts). */
  activity: TaskActivity;
  attention: TaskAttention | null;
}

/** `merged`: the task's latest merge that is not undone [R8.3]; `activity` and `attention`: the board's facts. */
const TASK_COLUMNS = `id, title, board_id, parent_task_id, workspace_mode, group_id, quick_chat, archived_at, pinned_at, created_at,
  disk_quota_bytes::float8 AS disk_quota_bytes,
  (SELECT json_build_object('at', g.finished_at, 'operationId', g.operation_id) FROM git_operations g
    WHERE g.task_id = tasks.id AND g.kind = 'merge' AND g.state = 'merged' ORDER BY g.finished_at DESC LIMIT 1) AS merged,
  ${TASK_ATTENTION_COLUMNS}`;

/** Pins or unpins a task; false when there is no such task. */
export async function setPinned(db: Db, id: string, pinned: boolean): Promise<boolean> {
  const res = await db.query(
    `UPDATE tasks SET pinned_at = CASE WHEN $2 THEN COALESCE(pinned_at, now()) ELSE NULL END WHERE id = $1`,
    [id, pinned],
  );
  return (res.rowCount ?? 0) > 0;
}

/** Sets a task's own disk quota (null: the operator's default again); false when there is no such task. */
export async function setDiskQuota(db: Db, id: string, bytes: number | null): Promise<boolean> {
  const res = await db.query('UPDATE tasks SET disk_quota_bytes = $2 WHERE id = $1', [id, bytes]);
  return (res.rowCount ?? 0) > 0;
}

export async function findTask(db: Db, id: string): Promise<TaskRow | null> {
  const res = await db.query<TaskRow>(`SELECT ${TASK_COLUMNS} FROM tasks WHERE id = $1`, [id]);
  return res.rows[0] ?? null;
}

export interface TaskFilter {
  boardId?: string;
  parentTaskId?: string;
  archived?: boolean;
  /** Only tasks with a merge that is not undone (`state=merged`). */
  merged?: boolean;
  /** Only tasks that work in this repository (the console's board filter). */
  repositoryId?: string;
}

/** Tasks newest first, with the filters given. */
export async function listTasks(db: Db, filter: TaskFilter, page: PageOf) {
  return newestFirst<TaskRow>(
    db,
    {
      columns: TASK_COLUMNS,
      table: 'tasks',
      time: 'created_at',
      key: 'id',
      keyType: 'uuid',
      equal: { board_id: filter.boardId, parent_task_id: filter.parentTaskId },
      where: [
        filter.archived === undefined ? null : filter.archived ? 'archived_at IS NOT NULL' : 'archived_at IS NULL',
        filter.merged
          ? `EXISTS (SELECT 1 FROM git_operations g WHERE g.task_id = tasks.id AND g.kind = 'merge' AND g.state = 'merged')`
          : null,
      ],
      // By the primary key (task_id, repository_id): one index probe per task row.
      whereValue: [
        {
          value: filter.repositoryId,
          condition: (id) =>
            `EXISTS (SELECT 1 FROM task_repositories tr WHERE tr.task_id = tasks.id AND tr.repository_id = ${id})`,
        },
      ],
    },
    page,
  );
}

export interface TaskRepositoryRow {
  repository_id: string;
  repository_name: string;
  repository_path: string;
  repository_root_commit: string | null;
  position: number;
  base_branch: string;
  checkout_branch: string | null;
  branch_slug: string;
}

export async function taskRepositories(db: Db, taskId: string): Promise<TaskRepositoryRow[]> {
  const res = await db.query<TaskRepositoryRow>(
    `SELECT tr.repository_id, r.name AS repository_name, r.path AS repository_path,
            r.root_commit AS repository_root_commit, tr.position, tr.base_branch, tr.checkout_branch, tr.branch_slug
       FROM task_repositories tr JOIN repositories r ON r.id = tr.repository_id
      WHERE tr.task_id = $1 ORDER BY tr.position`,
    [taskId],
  );
  return res.rows;
}

/** Unarchive: only while no cleanup job of the task is active (one cancelled or finished lifts the barrier). */
export async function unarchiveTask(db: Db, id: string): Promise<void> {
  await db.query(
    `UPDATE tasks SET archived_at = NULL, last_activity_at = now() WHERE id = $1
       AND NOT EXISTS (SELECT 1 FROM cleanup_jobs WHERE task_id = $1 AND state NOT IN ('succeeded', 'cancelled'))`,
    [id],
  );
}
