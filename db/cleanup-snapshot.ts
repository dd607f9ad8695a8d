/**
 * The inventory snapshot of a cleanup job, taken through the environment's task id [R6.1], so
 * it finds worktrees after the last session was deleted and after any restart.
 */
import type { CleanupSnapshot, SnapshotProcess, SnapshotWorktree } from '../domain/cleanup';
import { isTaskBranch } from '../domain/task-layout';
import { environmentOfTask, type EnvironmentRow } from './environments';
import type { Db } from './pool';
import { spawnIntentsOf } from './spawn-intents';

export async function borrowingTasks(db: Db, environmentId: string, ownerTaskId: string): Promise<string[]> {
  const res = await db.query<{ task_id: string }>(
    `SELECT DISTINCT task_id FROM sessions WHERE environment_id = $1 AND task_id <> $2 AND state IN ('starting', 'running') ORDER BY task_id`,
    [environmentId, ownerTaskId],
  );
  return res.rows.map((r) => r.task_id);
}

export async function snapshotWorktrees(db: Db, env: EnvironmentRow): Promise<SnapshotWorktree[]> {
  const res = await db.query<{
    id: string;
    repository_id: string;
    path: string;
    worktree_id: string | null;
    worktree_path: string | null;
    worktree_branch: string | null;
    head_commit: string | null;
    base_branch: string | null;
    default_branch: string;
    status: 'active' | 'retained';
  }>(
    `SELECT er.id, er.repository_id, r.path, er.worktree_id, er.worktree_path, er.worktree_branch, er.head_commit, er.status,
            tr.base_branch, r.default_branch
       FROM environment_repos er JOIN repositories r ON r.id = er.repository_id
       LEFT JOIN task_repositories tr ON tr.task_id = $2 AND tr.repository_id = er.repository_id
      WHERE er.environment_id = $1 AND er.status IN ('active', 'retained') ORDER BY er.position`,
    [env.id, env.task_id],
  );
  return res.rows.map((r) => ({
    environmentId: env.id,
    inventoryRowId: r.id,
    repositoryId: r.repository_id,
    sourcePath: r.path,
    worktreeId: r.worktree_id,
    worktreePath: r.worktree_path,
    branch: r.worktree_branch,
    headCommit: r.head_commit,
    baseBranch: r.base_branch ?? r.default_branch,
    taskOwnsBranch: isTaskBranch(r.worktree_branch, env.task_id),
    status: r.status,
  }));
}

/** Running agent processes of the task's sessions, and of any session in the environment when it is cleaned. */
export async function snapshotProcesses(db: Db, taskId: string, environmentId: string | null): Promise<SnapshotProcess[]> {
  const res = await db.query<{ id: string; host_id: string; pid: number; process_start_time: string }>(
    `SELECT x.id, x.host_id, x.pid, x.process_start_time FROM executions x JOIN sessions s ON s.id = x.session_id
      WHERE x.status = 'running' AND (s.task_id = $1 OR ($2::uuid IS NOT NULL AND s.environment_id = $2::uuid))`,
    [taskId, environmentId],
  );
  return res.rows.map((r) => ({ executionId: r.id, hostId: r.host_id, pid: r.pid, processStartTime: r.process_start_time }));
}

/**
 * Snapshot for one task. An environment that a working session of another task uses is left
 * alone (archive-like triggers) or handed to that task (delete) [R6.5]; it is then not cleaned.
 */
export async function takeSnapshot(db: Db, taskId: string, handOverBorrowed: boolean): Promise<CleanupSnapshot> {
  const env = await environmentOfTask(db, taskId, true);
  const sessionIds = (await db.query<{ id: string }>('SELECT id FROM sessions WHERE task_id = $1', [taskId])).rows.map((r) => r.id);
  const snapshot: CleanupSnapshot = { taskId, environmentId: null, hostId: null, taskFolder: null, worktrees: [], processes: [], borrowed: [], sessionIds };
  if (env) {
    const borrowers = await borrowingTasks(db, env.id, taskId);
    if (borrowers.length > 0) {
      if (handOverBorrowed) {
        // One compare-and-set write: the worktrees follow the environment without a second write.
        const moved = await db.query(
          'UPDATE task_environments SET task_id = $3, ownership_generation = ownership_generation + 1, updated_at = now() WHERE id = $1 AND task_id = $2',
          [env.id, taskId, borrowers[0]],
        );
        if (moved.rowCount !== 1) throw new Error('environment ownership changed during cleanup preparation');
        // The new owner's slots are the environment's: same repositories, same branches.
        await db.query(
          `UPDATE task_repositories tr SET branch_slug = er.branch_slug, checkout_branch = COALESCE(er.worktree_branch, tr.checkout_branch)
             FROM environment_repos er
            WHERE er.environment_id = $1 AND er.status = 'active' AND tr.task_id = $2 AND tr.repository_id = er.repository_id`,
          [env.id, borrowers[0]],
        );
        snapshot.borrowed.push({ environmentId: env.id, action: 'handed_over', toTaskId: borrowers[0]!, hostId: env.host_id, taskFolder: env.task_folder });
      } else {
        snapshot.borrowed.push({ environmentId: env.id, action: 'kept', toTaskId: null, hostId: env.host_id, taskFolder: env.task_folder });
      }
      snapshot.processes = await snapshotProcesses(db, taskId, null);
      snapshot.spawnIntents = await spawnIntentsOf(db, taskId, null);
      return snapshot;
    }
    snapshot.environmentId = env.id;
    snapshot.hostId = env.host_id;
    snapshot.taskFolder = env.task_folder;
    snapshot.worktrees = await snapshotWorktrees(db, env);
  }
  snapshot.processes = await snapshotProcesses(db, taskId, snapshot.environmentId);
  snapshot.spawnIntents = await spawnIntentsOf(db, taskId, snapshot.environmentId);
  return snapshot;
}
