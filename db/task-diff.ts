/**
 * Where a task's diff is read, per repository [R8.1]: its source and branches
 * (db/merge-sources.ts), the active host worktree whose uncommitted work counts (a clone on an
 * SSH target is not read from here), and a released task's saved work not yet put back.
 */
import type { DiffSource } from '../domain/task-diff';
import { taskRepositorySources } from './merge-sources';
import type { Db } from './pool';

export interface DiffPlace extends DiffSource {
  hostId: string;
}

export async function diffSourcesOf(db: Db, taskId: string): Promise<DiffPlace[]> {
  const [sources, saved] = await Promise.all([
    taskRepositorySources(db, taskId),
    db.query<{ repository_id: string; commit: string }>(
      `SELECT repository_id, commit FROM saved_work WHERE task_id = $1 AND restore IS NULL ORDER BY saved_at, ref`,
      [taskId],
    ),
  ]);
  return sources.map((s) => ({
    repositoryId: s.repositoryId,
    hostId: s.hostId,
    sourcePath: s.sourcePath,
    baseBranch: s.baseBranch,
    taskBranch: s.taskBranch,
    worktreePath: s.executorType === 'ssh' ? null : s.worktreePath,
    savedCommits: saved.rows.filter((r) => r.repository_id === s.repositoryId).map((r) => r.commit),
  }));
}
