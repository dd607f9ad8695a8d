/**
 * Every path a live owner record references, for the orphan sweep: inventory rows that are not
 * deleted (retained ones included), environments' workspaces and folders, every task's folder
 * (a materialization may be in flight), active cleanup snapshots, and worktrees a job kept.
 */
import { taskFolder } from '../domain/task-layout';
import type { Db } from './pool';

export async function livePaths(db: Db, workspaceRoot: string): Promise<string[]> {
  const paths = new Set<string>();
  const rows = await db.query<{ p: string }>(
    `SELECT worktree_path AS p FROM environment_repos WHERE worktree_path IS NOT NULL AND status IN ('active', 'retained')
     UNION SELECT workspace_path FROM task_environments WHERE workspace_path IS NOT NULL
     UNION SELECT task_folder FROM task_environments WHERE task_folder IS NOT NULL`,
  );
  for (const r of rows.rows) paths.add(r.p);
  const tasks = await db.query<{ id: string }>('SELECT id FROM tasks');
  for (const t of tasks.rows) paths.add(taskFolder(workspaceRoot, t.id));
  const jobs = await db.query<{ snapshot: any; report: any; active: boolean }>(
    `SELECT snapshot, report, state NOT IN ('succeeded', 'cancelled') AS active FROM cleanup_jobs
      WHERE state NOT IN ('succeeded', 'cancelled') OR report::text LIKE '%kept_dirty%'`,
  );
  for (const job of jobs.rows) {
    if (job.active && job.snapshot && !Array.isArray(job.snapshot)) {
      if (job.snapshot.taskFolder) paths.add(job.snapshot.taskFolder);
      for (const w of job.snapshot.worktrees ?? []) if (w.worktreePath) paths.add(w.worktreePath);
    }
    for (const w of job.report?.worktrees ?? []) if (w.outcome === 'kept_dirty' && w.worktreePath) paths.add(w.worktreePath);
  }
  return [...paths];
}
