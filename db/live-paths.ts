/**
 * Every path a record references, for the orphan sweep: inventory rows in any state (a `deleted`
 * row's folder still on disk is one an undo or a cleanup could not remove cleanly: doubt), environments' workspaces and folders, every
 * task's folder and its environment's current generation's (a materialization may be in flight),
 * active cleanup snapshots, worktrees a job kept, and what a job abandoned (a cancelled delete's
 * leftovers, an operator's abandonment): abandoned means never removed, by anyone.
 */
import { taskFolder } from '../domain/task-layout';
import type { Db } from './pool';

export async function livePaths(db: Db, workspaceRoot: string): Promise<string[]> {
  const paths = new Set<string>();
  const rows = await db.query<{ p: string }>(
    `SELECT worktree_path AS p FROM environment_repos WHERE worktree_path IS NOT NULL
     UNION SELECT workspace_path FROM task_environments WHERE workspace_path IS NOT NULL
     UNION SELECT task_folder FROM task_environments WHERE task_folder IS NOT NULL`,
  );
  for (const r of rows.rows) paths.add(r.p);
  const tasks = await db.query<{ id: string }>('SELECT id FROM tasks');
  for (const t of tasks.rows) paths.add(taskFolder(workspaceRoot, t.id));
  const envs = await db.query<{ task_id: string; layout_generation: number }>(
    'SELECT task_id, layout_generation FROM task_environments WHERE layout_generation > 0',
  );
  for (const e of envs.rows) paths.add(taskFolder(workspaceRoot, e.task_id, e.layout_generation));
  // Each job's snapshot and report as far as paths go (older rows may lack any part of them).
  type PathsOf = { taskFolder?: string | null; worktrees?: { worktreePath?: string | null; outcome?: string }[] };
  const jobs = await db.query<{
    snapshot: (PathsOf & unknown[]) | PathsOf | null;
    report: (PathsOf & { abandoned?: PathsOf }) | null;
    active: boolean;
  }>(
    `SELECT snapshot, report, state NOT IN ('succeeded', 'cancelled') AS active FROM cleanup_jobs
      WHERE state NOT IN ('succeeded', 'cancelled') OR report::text LIKE '%kept_dirty%' OR report ? 'abandoned'`,
  );
  for (const job of jobs.rows) {
    if (job.active && job.snapshot && !Array.isArray(job.snapshot)) {
      if (job.snapshot.taskFolder) paths.add(job.snapshot.taskFolder);
      for (const w of job.snapshot.worktrees ?? []) if (w.worktreePath) paths.add(w.worktreePath);
    }
    for (const w of job.report?.worktrees ?? [])
      if (w.outcome === 'kept_dirty' && w.worktreePath) paths.add(w.worktreePath);
    if (job.report?.abandoned?.taskFolder) paths.add(job.report.abandoned.taskFolder);
    for (const w of job.report?.abandoned?.worktrees ?? []) if (w.worktreePath) paths.add(w.worktreePath);
  }
  return [...paths];
}
