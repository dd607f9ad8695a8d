/**
 * The inventory snapshot of a cleanup job, taken through the environment's task id [R6.1], so
 * it finds worktrees after the last session was deleted and after any restart.
 */
import { decideBorrowedEnvironment, type SuccessorCandidate } from '../domain/borrowed-environments';
import { CLEANUP_TRIGGERS, takesTaskAway, type CleanupTrigger } from '../domain/cleanup';
import type { CleanupSnapshot, SnapshotProcess, SnapshotWorktree } from '../domain/cleanup-snapshot';
import { isTaskBranch } from '../domain/task-layout';
import { environmentOfTask, type EnvironmentRow } from './environments';
import type { Db } from './pool';
import { spawnIntentsOf } from './spawn-intents';

/**
 * The live tasks other than the owner that could stand for the environment: its borrowers (a
 * session of theirs, in any state, points at it) and the members of the group it serves, those
 * that already work in it first. A task being archived or deleted is not live.
 */
async function successorCandidates(db: Db, environmentId: string, ownerTaskId: string): Promise<SuccessorCandidate[]> {
  const res = await db.query<{ task_id: string; group_member: boolean; borrows: boolean; fits: boolean }>(
    `WITH env_group AS (SELECT id FROM workspace_groups WHERE environment_id = $1),
          candidate AS (SELECT task_id AS id FROM sessions WHERE environment_id = $1 UNION SELECT id FROM tasks WHERE group_id IN (SELECT id FROM env_group)),
          facts AS (
            SELECT t.id, t.created_at, COALESCE(t.group_id IN (SELECT id FROM env_group), false) AS group_member,
                   EXISTS (SELECT 1 FROM sessions s WHERE s.task_id = t.id AND s.environment_id = $1) AS borrows,
                   NOT EXISTS (SELECT 1 FROM task_environments e WHERE e.task_id = t.id) AS owns_none,
                   NOT EXISTS (SELECT 1 FROM task_repositories tr WHERE tr.task_id = t.id AND NOT EXISTS (
                     SELECT 1 FROM environment_repos er WHERE er.environment_id = $1 AND er.repository_id = tr.repository_id AND er.status = 'active')) AS held
              FROM candidate c JOIN tasks t ON t.id = c.id
             WHERE t.id <> $2 AND t.archived_at IS NULL
               AND NOT EXISTS (SELECT 1 FROM cleanup_jobs j WHERE j.task_id = t.id AND j.state NOT IN ('succeeded', 'cancelled') AND j.trigger = ANY($3::text[])))
     SELECT id AS task_id, group_member, borrows, owns_none AND (borrows OR held) AS fits FROM facts ORDER BY borrows DESC, created_at, id`,
    [environmentId, ownerTaskId, CLEANUP_TRIGGERS.filter(takesTaskAway)],
  );
  return res.rows.map((r) => ({ taskId: r.task_id, groupMember: r.group_member, borrows: r.borrows, fits: r.fits }));
}

/**
 * The candidates once their rows are share-locked: an archive or delete of one of them that is
 * being prepared meanwhile commits first, and is seen (a successor is never a task on its way out).
 */
export async function lockedSuccessorCandidates(
  db: Db,
  environmentId: string,
  ownerTaskId: string,
): Promise<SuccessorCandidate[]> {
  const first = await successorCandidates(db, environmentId, ownerTaskId);
  if (first.length === 0) return first;
  await db.query('SELECT id FROM tasks WHERE id = ANY($1::uuid[]) ORDER BY id FOR SHARE', [first.map((c) => c.taskId)]);
  return successorCandidates(db, environmentId, ownerTaskId);
}

/** One compare-and-set write of the owner: the worktrees follow the environment without a second write. */
async function handOver(db: Db, env: EnvironmentRow, fromTaskId: string, toTaskId: string): Promise<void> {
  const moved = await db.query(
    'UPDATE task_environments SET task_id = $3, ownership_generation = ownership_generation + 1, updated_at = now() WHERE id = $1 AND task_id = $2',
    [env.id, fromTaskId, toTaskId],
  );
  if (moved.rowCount !== 1) throw new Error('environment ownership changed during cleanup preparation');
  // The new owner's slots are the environment's: same repositories, same branches (a group's launches read the owner's slots).
  await db.query(
    `UPDATE task_repositories tr SET branch_slug = er.branch_slug, checkout_branch = COALESCE(er.worktree_branch, tr.checkout_branch)
       FROM environment_repos er
      WHERE er.environment_id = $1 AND er.status = 'active' AND tr.task_id = $2 AND tr.repository_id = er.repository_id`,
    [env.id, toTaskId],
  );
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
    ssh_target_id: string | null;
  }>(
    `SELECT er.id, er.repository_id, r.path, er.worktree_id, er.worktree_path, er.worktree_branch, er.head_commit, er.status, er.ssh_target_id,
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
    sshTargetId: r.ssh_target_id,
  }));
}

/** Running agent processes of the task's sessions, and of any session in the environment when it is cleaned. */
async function snapshotProcesses(db: Db, taskId: string, environmentId: string | null): Promise<SnapshotProcess[]> {
  const res = await db.query<{
    id: string;
    host_id: string;
    pid: number;
    process_start_time: string;
    ssh_target_id: string | null;
    log_path: string;
  }>(
    `SELECT x.id, x.host_id, x.pid, x.process_start_time, x.ssh_target_id, x.log_path FROM executions x JOIN sessions s ON s.id = x.session_id
      WHERE x.status = 'running' AND (s.task_id = $1 OR ($2::uuid IS NOT NULL AND s.environment_id = $2::uuid))`,
    [taskId, environmentId],
  );
  return res.rows.map((r) => ({
    executionId: r.id,
    hostId: r.host_id,
    pid: r.pid,
    processStartTime: r.process_start_time,
    ...(r.ssh_target_id ? { sshTargetId: r.ssh_target_id, logPath: r.log_path } : {}),
  }));
}

/**
 * Snapshot for one task. An environment other live tasks stand for is handed over, kept, or
 * cleaned, by the trigger's rule (domain/borrowed-environments.ts) [R6.5]; handed over or kept,
 * it is not cleaned by this job.
 */
export async function takeSnapshot(db: Db, taskId: string, trigger: CleanupTrigger): Promise<CleanupSnapshot> {
  const env = await environmentOfTask(db, taskId, true);
  const sessionIds = (await db.query<{ id: string }>('SELECT id FROM sessions WHERE task_id = $1', [taskId])).rows.map(
    (r) => r.id,
  );
  const runSshTargetIds = (
    await db.query<{ ssh_target_id: string }>(
      'SELECT DISTINCT x.ssh_target_id FROM executions x JOIN sessions s ON s.id = x.session_id WHERE s.task_id = $1 AND x.ssh_target_id IS NOT NULL',
      [taskId],
    )
  ).rows.map((r) => r.ssh_target_id);
  const snapshot: CleanupSnapshot = {
    taskId,
    environmentId: null,
    hostId: null,
    taskFolder: null,
    worktrees: [],
    processes: [],
    borrowed: [],
    sessionIds,
    runSshTargetIds,
  };
  if (env) {
    const decision = decideBorrowedEnvironment(trigger, await lockedSuccessorCandidates(db, env.id, taskId));
    if (decision.action !== 'clean') {
      const toTaskId = decision.action === 'handed_over' ? decision.toTaskId : null;
      if (toTaskId) await handOver(db, env, taskId, toTaskId);
      snapshot.borrowed.push({
        environmentId: env.id,
        action: decision.action,
        toTaskId,
        hostId: env.host_id,
        taskFolder: env.task_folder,
      });
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
