/**
 * Abandoning an environment's workspace, in the caller's transaction: its inventory rows become
 * `abandoned` and the environment `released` with its next layout generation. No file is touched;
 * the abandoned paths stay known (db/live-paths.ts), so nothing removes them. Saved work waiting
 * to be restored is marked `abandoned`: the next launch starts afresh, without it.
 */
import type { AbandonedWorkspace } from '../domain/cleanup-snapshot';
import type { Db } from './pool';
import { agentRunningInEnvironmentOf } from './sessions';

export type AbandonOutcome =
  { kind: 'abandoned'; abandoned: AbandonedWorkspace } | { kind: 'refused'; code: 'session_running' };

export async function abandonInventory(
  db: Db,
  env: { taskId: string; environmentId: string | null },
): Promise<AbandonOutcome> {
  if (!env.environmentId) return { kind: 'abandoned', abandoned: { taskFolder: null, worktrees: [] } };
  // The environment row is the point concurrent launches and cleanups meet.
  const locked = await db.query<{ task_folder: string | null }>(
    'SELECT task_folder FROM task_environments WHERE id = $1 AND task_id = $2 FOR UPDATE',
    [env.environmentId, env.taskId],
  );
  const row = locked.rows[0];
  if (!row) return { kind: 'abandoned', abandoned: { taskFolder: null, worktrees: [] } };
  if (await agentRunningInEnvironmentOf(db, env.taskId)) return { kind: 'refused', code: 'session_running' };
  // An abandon starts afresh: work an idle release saved that no launch has taken back yet is not
  // applied onto the new branch. It stays listed on its ref, to apply by hand (`abandoned`).
  await db.query(`UPDATE saved_work SET restore = 'abandoned' WHERE task_id = $1 AND restore IS NULL`, [env.taskId]);
  const rows = await db.query<{ repository_id: string; worktree_path: string | null; worktree_branch: string | null }>(
    `UPDATE environment_repos SET status = 'abandoned', updated_at = now()
      WHERE environment_id = $1 AND status IN ('active', 'retained')
      RETURNING repository_id, worktree_path, worktree_branch`,
    [env.environmentId],
  );
  // No recorded folder or workspace path: the next materialization plans them afresh, one generation on.
  await db.query(
    `UPDATE task_environments SET status = 'released', workspace_path = NULL, task_folder = NULL, layout_generation = layout_generation + 1, updated_at = now()
      WHERE id = $1`,
    [env.environmentId],
  );
  return {
    kind: 'abandoned',
    abandoned: {
      taskFolder: row.task_folder,
      worktrees: rows.rows
        .filter((r) => r.worktree_path)
        .map((r) => ({ repositoryId: r.repository_id, worktreePath: r.worktree_path!, branch: r.worktree_branch })),
    },
  };
}
