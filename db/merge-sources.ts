/**
 * A task's repositories as finishing it needs them [R8]: the source, the base, the task branch
 * (the one its latest worktree or clone recorded, kept after a release or an archive), and the
 * active workspace of each, where uncommitted work is judged.
 */
import type { TaskRepositorySource } from '../domain/merge';
import type { Db } from './pool';

export async function taskRepositorySources(db: Db, taskId: string): Promise<TaskRepositorySource[]> {
  const res = await db.query<{
    repository_id: string;
    host_id: string | null;
    env_host_id: string | null;
    source_path: string;
    base_branch: string;
    worktree_branch: string | null;
    checkout_branch: string | null;
    worktree_path: string | null;
    row_status: string | null;
    executor_type: string | null;
    ssh_target_id: string | null;
    environment_id: string | null;
    workspace_path: string | null;
    remote: string | null;
    merge_strategies: string[] | null;
  }>(
    `SELECT tr.repository_id, r.host_id, e.host_id AS env_host_id, r.path AS source_path, tr.base_branch,
            er.worktree_branch, tr.checkout_branch, er.worktree_path, er.status AS row_status, e.executor_type,
            er.ssh_target_id, e.id AS environment_id, e.workspace_path, r.remote, r.merge_strategies
       FROM task_repositories tr JOIN repositories r ON r.id = tr.repository_id
       LEFT JOIN task_environments e ON e.task_id = tr.task_id
       LEFT JOIN LATERAL (
         SELECT er.worktree_branch, er.worktree_path, er.status, er.ssh_target_id FROM environment_repos er
          WHERE er.environment_id = e.id AND er.repository_id = tr.repository_id
          ORDER BY (er.status = 'active') DESC, er.updated_at DESC LIMIT 1) er ON true
      WHERE tr.task_id = $1 ORDER BY tr.position`,
    [taskId],
  );
  return res.rows.map((r) => {
    const active = r.row_status === 'active';
    return {
      repositoryId: r.repository_id,
      hostId: r.host_id ?? r.env_host_id ?? '',
      sourcePath: r.source_path,
      baseBranch: r.base_branch,
      taskBranch: r.worktree_branch ?? r.checkout_branch,
      // A `local` slot records no worktree: its workspace is the source checkout itself.
      worktreePath: active ? (r.worktree_path ?? (r.executor_type === 'local' ? r.source_path : null)) : null,
      executorType: r.executor_type,
      sshTargetId: active ? r.ssh_target_id : null,
      environmentId: r.environment_id,
      remote: r.remote,
      mergeStrategies: r.merge_strategies,
    };
  });
}
